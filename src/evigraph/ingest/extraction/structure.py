"""What a document's markup says a name is: links, headings over a project's links, versions.

A news-trained model reads words; technical docs also say what a name is by how they write it:

- **A name written as code and linked** (``[`asgi-cors`](https://github.com/...)``,
  ``[`itsdangerous`][itsdangerous]``) is a package or class the link documents, wherever it points.
- **A link to a code host or package index** names a project (`[httpx-sse](https://github.com/
  florimondmanca/httpx-sse)`) or an account (`[@adriangb](https://github.com/adriangb)`), unless
  its text names the host itself (`[GitHub](https://github.com/...)`): then it is that hosted
  service.
- **A link to a site's home page whose text names the site** (`<a href="https://holvi.com/">
  Holvi</a>`, "Cyan" for cyaninc.com) is an entity; alone in its list item (a sponsor wall) it is
  the site's owner, an organisation; in a sentence its kind is left to the other cues ("logs to
  [Sentry](https://sentry.io/)").
- **A heading over a link to a repository** (`### Mangum` then `[GitHub](https://github.com/erm/
  mangum)`) is the name of the project the section presents: third-party package lists.
- **A version after a name** ("Python 3.12", "Django 1.8", "Windows 7") is the named thing at
  that version: people and companies have no versions, software does.
- **Code in prose** (`code_hits`, `reference_hits`, `shaped_hits`): a class in backticks or taken
  from a module, a standard library module, a distribution's hyphenated name, a versioned
  protocol ("TLSv1.3"); and a release's codename is an event (`codename_hits`).

Markdown and inline HTML are both read, as docs sites mix them. A link's text or a heading that is
a phrase ("submit a pull request") names nothing (the caller's `phrase`).
"""

from __future__ import annotations

import keyword
import re
import sys
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from evigraph.ingest.extraction.cooccurrence import Hit
from evigraph.ingest.extraction.names import is_name
from evigraph.models import UNKNOWN_LABEL

_CODE_HOSTS = r"github\.com|gitlab\.com|bitbucket\.org|codeberg\.org|pypi\.org|pypi\.python\.org|npmjs\.com"
_HOST_LINK = re.compile(
    r"^https?://(?:www\.)?(" + _CODE_HOSTS + r"|[\w-]+\.readthedocs\.io)(/[^)\s\"'>]*)?$",
)
"""A code host or package index, and the path on it."""
_SERVICE_HOSTS = frozenset(
    {"github.com", "gitlab.com", "bitbucket.org", "codeberg.org", "pypi.org", "pypi.python.org", "npmjs.com"}
)
_ACCOUNT_HOSTS = frozenset({"github.com", "gitlab.com", "codeberg.org"})
_MD_LINK = re.compile(r"\[(`?[^\]\n`]{2,60}`?)\]\((https?://[^)\s]+)\)")
_HTML_LINK = re.compile(r"<a\s[^>]*?href=[\"'](https?://[^\"']+)[\"'][^>]*>([^<\n]{2,60})</a>", re.I)
_REF_LINK = re.compile(r"\[(`?[^\]\n`]{2,60}`?)\]\[([^\]\n]*)\]")
_REF_DEF = re.compile(r"^[ \t]{0,3}\[([^\]\n]+)\]:[ \t]*<?(https?://[^\s>]+)>?", re.M)
_HOME = re.compile(r"^https?://(?:www\.)?(([\w.-]+?)\.[a-z]{2,6})/?$", re.I)
"""A site's home page: a host and nothing after it (the host, and the host without its TLD)."""
_HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", re.M)
_VERSION_AFTER = re.compile(r"[ \t]v?(\d+(?:\.\d+){1,3}|[1-9]\d?)(?![\w+%/:-]|\.\w)")
"""A version right after a name: dotted ("3.12", "1.8.0") or a small whole number ("Python 3",
"Windows 7"); not a year, an amount, a time or the start of another token."""
_INLINE = re.compile(r"`(~?(?:[A-Za-z_]\w*\.)*)([A-Za-z_][\w-]*)(?:\([^`\n]*\)|\[[^`\n]*\])?`")
"""Inline code holding one name: an identifier, a call of one, a generic type (`Mapping[str, Any]`),
a dotted path (`io.BytesIO`, `httpx.Timeout(...)`) or a distribution's name (`pytest-xdist`)."""
_SOFTWARE_WORDS = re.compile(
    r"\b(?:librar(?:y|ies)|packages?|modules?|backends?|dependenc(?:y|ies)|install(?:s|ed)?|plugins?|extensions?"
    r"|tools?|projects?|frameworks?|servers?)\b",
    re.I,
)
"""Words that say the name beside them is software ("the `chardet` library", "uses `sniffio`
... package")."""
_CODE_NAME = re.compile(r"[A-Za-z][\w]*(?:-[A-Za-z0-9]+)*")
"""A package's or a class's name, written as code."""
_SOFTWARE_NOUN = r"(?:librar(?:y|ies)|packages?|modules?|backends?|projects?|frameworks?|plugins?|dependenc(?:y|ies))"
_SOFTWARE_NOUN_AFTER = re.compile(r"[ \t]+" + _SOFTWARE_NOUN + r"\b", re.I)
_SOFTWARE_NOUN_BEFORE = re.compile(r"\b" + _SOFTWARE_NOUN + r"[ \t]+$", re.I)
_CLAUSE = re.compile(r"[.;!?]\s|\n")
_NUMBER_AFTER = re.compile(r"[ \t](\d{2,5})(?![\w+%/:-]|\.\w)")
_SQUASH = re.compile(r"[^a-z0-9]")
_TAG = re.compile(r"<[^>\n]*>")


@dataclass(frozen=True)
class LinkLabels:
    """The ontology's labels for what links say: a project, an account, a hosted service, an owner."""

    project: str
    account: str
    service: str
    owner: str


def links(text: str, definitions: dict[str, str]) -> Iterator[tuple[int, str, str]]:
    """(start, text, url) of each link of the text: markdown inline and reference links (resolved
    by `definitions`, a document's `[id]: url` lines), and HTML anchors."""
    for m in _MD_LINK.finditer(text):
        yield m.start(1), m.group(1), m.group(2)
    for m in _REF_LINK.finditer(text):
        url = definitions.get((m.group(2) or m.group(1)).strip().casefold())
        if url is not None:
            yield m.start(1), m.group(1), url
    for m in _HTML_LINK.finditer(text):
        yield m.start(2), m.group(2), m.group(1)


def title_links(text: str) -> Iterator[tuple[int, str, str]]:
    """(start, text, target) of each markdown link, inline or by reference, resolved or not."""
    for m in _MD_LINK.finditer(text):
        yield m.start(1), m.group(1), m.group(2)
    for m in _REF_LINK.finditer(text):
        yield m.start(1), m.group(1), m.group(2)


def definitions_of(texts: Sequence[str]) -> dict[str, str]:
    """A document's reference-link definitions (`[mozilla]: https://www.mozilla.org/`), by id."""
    return {m.group(1).strip().casefold(): m.group(2) for text in texts for m in _REF_DEF.finditer(text)}


def _squash(text: str) -> str:
    return _SQUASH.sub("", text.casefold())


def link_hits(
    text: str,
    found: Sequence[Hit],
    labels: LinkLabels,
    definitions: dict[str, str] | None = None,
    before: str = "",
    phrase: Callable[[str], bool] = lambda _: False,
) -> tuple[list[Hit], list[Hit], list[Hit]]:
    """Names the text's links say what they are (module docstring). They replace what the model or
    the rules found in the same place. Returns the hits kept, the hits a code host or package index
    typed (their label is settled), and the home pages' owners (their label is a default the
    documents' code cues may still override). `before` is the end of the previous passage of the
    document: a long line of HTML may be cut between `<a href=...>` and its text. A link whose text
    is a phrase (`phrase`: "submit a pull request", "Documentation") names nothing."""
    if before:
        whole = link_hits(before + text, _moved(found, len(before)), labels, definitions, phrase=phrase)
        kept, typed, owners = (_moved([h for h in hits if h.start >= len(before)], -len(before)) for hits in whole)
        return kept, typed, owners
    typed = []
    owners = []
    for start, raw, url in links(text, definitions or {}):
        name = raw.strip("` ").lstrip("@")
        if not name or len(name.split()) > 5 or not is_name(name) or phrase(name):
            continue
        start += raw.index(name)
        hit = Hit(start, start + len(name), name, labels.project)
        if raw.startswith("`") and raw.endswith("`"):
            if _CODE_NAME.fullmatch(name):  # [`itsdangerous`][itsdangerous]: a package, linked to its site
                typed.append(hit)
            continue
        host = _HOST_LINK.match(url)
        home = _HOME.match(url)
        if host is not None:
            site = host.group(1).casefold()
            path = [p for p in (host.group(2) or "").split("/") if p]
            if _squash(name) == _squash(site.rsplit(".", 1)[0]) or _squash(name) == _squash(site):
                if site in _SERVICE_HOSTS:
                    typed.append(hit._replace(label=labels.service))  # [GitHub](https://github.com/...)
                continue
            if not path:
                continue
            typed.append(hit._replace(label=labels.account if site in _ACCOUNT_HOSTS and len(path) == 1 else hit.label))
        elif home is not None and _names_site(name, home.group(1)):
            if _alone(text, start, name):
                owners.append(hit._replace(label=labels.owner))  # a list of sites: sponsors, users
            else:  # a site named in a sentence ("logs to [Sentry](https://sentry.io/)"): the model's label
                said = [h.label for h in found if h.start < hit.end and hit.start < h.end and h.label != UNKNOWN_LABEL]
                owners.append(hit._replace(label=said[0] if said else _line_kind(text, hit, found)))
    placed = [*typed, *owners]
    if not placed:
        return list(found), [], []
    kept = [h for h in found if not any(h.start < p.end and p.start < h.end for p in placed)]
    return kept, typed, owners


def _names_site(name: str, host: str) -> bool:
    """Whether a link's text names the site it links to: spelled as its host ("AX Semantics",
    ax-semantics.com; "alwaysdata.com") or as the host's leading or trailing word ("Cyan",
    cyaninc.com; "Lulu", onlulu.com)."""
    first = _squash(name.split()[0])
    squashed, site = _squash(name), _squash(host.rsplit(".", 1)[0])
    if len(squashed) >= 3 and squashed in (site, _squash(host)):
        return True
    return len(first) >= 3 and (site.startswith(first) or (len(first) >= 4 and site.endswith(first)))


def _line_kind(text: str, hit: Hit, found: Sequence[Hit]) -> str:
    """The label most of the other names of the hit's line carry, when the model typed at least
    two of them and most agree: the items of a list are of one kind ("Individual backers: Paul
    Hallett, <a ...>Paul Whipp</a>, Dylan Roy"), and a link hides a name from the model."""
    start = text.rfind("\n", 0, hit.start) + 1
    end = text.find("\n", hit.end)
    end = len(text) if end < 0 else end
    labels = Counter(h.label for h in found if start <= h.start < end and h.label != UNKNOWN_LABEL)
    if sum(labels.values()) < 2:
        return UNKNOWN_LABEL
    label, n = labels.most_common(1)[0]
    return label if n * 2 > sum(labels.values()) else UNKNOWN_LABEL


def _moved(hits: Sequence[Hit], shift: int) -> list[Hit]:
    return [h._replace(start=h.start + shift, end=h.end + shift) for h in hits]


def _alone(text: str, start: int, name: str) -> bool:
    """Whether the name is all its line or list item holds once markup is gone: `<li><a ...>Holvi
    </a></li>`, `- [Holvi](https://holvi.com/)`."""
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", start)
    line = text[line_start : len(text) if line_end < 0 else line_end]
    line = _TAG.sub(" ", _MD_LINK.sub(r"\1", _REF_LINK.sub(r"\1", line)))
    return _squash(line) == _squash(name)


def heading_hits(
    text: str, found: Sequence[Hit], project: str, phrase: Callable[[str], bool] = lambda _: False
) -> tuple[list[Hit], list[Hit]]:
    """Headings whose section opens with a link to a repository, or holds one the heading spells:
    the project the section presents (`### Mangum`, then `[GitHub](https://github.com/erm/mangum)`;
    `### Apiman`, a paragraph, then a link to github.com/strongbugman/apiman), unless the heading is
    a phrase (`phrase`: "Third party middleware"). They replace the hits found in the heading. Returns the
    hits kept and the heading hits."""
    out: list[Hit] = []
    for m in _HEADING.finditer(text):
        name = m.group(1).strip()
        if len(name.split()) > 4 or "[" in name or "`" in name:
            continue
        following = _HEADING.search(text, m.end())
        section = text[m.end() : following.start() if following else len(text)].strip()
        lines = [line for line in section.splitlines() if line.strip()]
        repos = [(i, url) for i, line in enumerate(lines) if _only_links(line) for _, _, url in links(line, {})]
        spelled = any(
            _repository(url) and _squash(url.rstrip("/").rsplit("/", 1)[1]) == _squash(name) for _, url in repos
        )
        if not (spelled or any(i == 0 and _repository(url) for i, url in repos)):
            continue  # no repository link opening the section, nor one spelling the heading
        if not spelled and (not is_name(name) or phrase(name)):
            continue  # "rpc.py" looks like a file or a phrase, but github.com/abersheeran/rpc.py spells it
        out.append(Hit(m.start(1), m.start(1) + len(name), name, project))
    if not out:
        return list(found), []
    kept = [h for h in found if not any(h.start < p.end and p.start < h.end for p in out)]
    return kept, out


def _only_links(line: str) -> bool:
    """Whether a line holds links and separators only ("[GitHub](...) - [Documentation](...)"),
    not a sentence that links somewhere (a changelog entry citing its pull request)."""
    rest = _TAG.sub(" ", _HTML_LINK.sub(" ", _MD_LINK.sub(" ", line)))
    return not re.search(r"\w", rest)


def _repository(url: str) -> bool:
    """A repository's own page: github.com/owner/name, not a pull request or a file in it."""
    host = _HOST_LINK.match(url)
    return host is not None and len([p for p in (host.group(2) or "").split("/") if p]) == 2


def with_version(text: str, hit: Hit) -> Hit:
    """The hit with the version written right after it ("Python" in "Python 3.12" is Python 3.12)."""
    words = hit.name.split()
    if any(c.isdigit() for c in hit.name) or any(w.islower() for w in words):
        return hit  # a phrase ("restored the click"), not a name a version follows
    m = _VERSION_AFTER.match(text, hit.end)
    if m is None and hit.name.isupper() and hit.name.isalpha():
        m = _NUMBER_AFTER.match(text, hit.end)  # a standard's edition or number: "IDNA 2008", "RFC 7231"
    if m is None:
        return hit
    return Hit(hit.start, m.end(), text[hit.start : m.end()], hit.label)


def with_versions(text: str, hits: Sequence[Hit], date: str) -> list[Hit]:
    """`with_version` over a chunk's hits (not dates: "May 2016"); a number a name takes in is no
    date of its own ("2008" of "IDNA 2008")."""
    grown = [h if h.label == date else with_version(text, h) for h in hits]
    longer = [g for g, h in zip(grown, hits, strict=True) if g.end != h.end]
    if not longer:
        return grown
    return [h for h in grown if h in longer or not any(g.start <= h.start and h.end <= g.end for g in longer)]


def code_hits(prose: str, found: Sequence[Hit], packages: frozenset[str], english: Callable[[str], bool]) -> list[Hit]:
    """Names written as code in prose: `AsyncClient`, `Group()`, `INT`, `httpx`, the class at the
    end of `io.UnsupportedOperation`. A capitalised identifier in backticks is a class, constant or
    type a reader looks up. A lower-case one (`scope`, `request` are variables) only when the
    documents import or install it (`packages`), when it is a module of Python's standard library,
    a distribution's hyphenated name (`pytest-xdist`: no identifier holds a hyphen), or no English
    word (`english`) its clause calls software ("the `chardet` library"). `prose` is the chunk's text with its
    fenced blocks blanked, offsets kept."""
    out: list[Hit] = []
    candidates: list[tuple[re.Match[str], bool]] = []
    for m in _INLINE.finditer(prose):
        dotted, name = m.group(1), m.group(2)
        if len(name) < 2 or name.endswith("-") or (dotted and (not name[0].isupper() or name.isupper())):
            continue  # `request.data`, `ParameterSource.DEFAULT`: attributes and members, not classes
        if keyword.iskeyword(name):
            continue  # `None`, `True`, `and`: the language's own words name nothing
        candidates.append((m, name[0].isupper() or name.casefold() in packages or _software(prose, m, name, english)))
    for i, (m, named) in enumerate(candidates):
        if not named and not _coordinated(prose, candidates, i):
            continue
        start, end = m.start(2), m.end(2)
        if not any(h.start < end and start < h.end for h in found):
            out.append(Hit(start, end, m.group(2), UNKNOWN_LABEL))  # typed with its name: `kind_of` sees code
    for m in _MIME.finditer(prose):
        if not any(h.start < m.end(1) and m.start(1) < h.end for h in found):
            out.append(Hit(m.start(1), m.end(1), m.group(1), UNKNOWN_LABEL))
    return out


_MIME = re.compile(
    r"`((?:application|audio|font|image|message|model|multipart|text|video)/[a-z0-9][\w.+-]*)(?:;[^`\n]*)?`"
)
"""A media type in code (`multipart/form-data`, `application/json`): a format, under one of the
IANA's top-level types."""
_AND = re.compile(r"[ \t]*(?:,|,?[ \t]+(?:and|or))[ \t]+$")


def _coordinated(prose: str, candidates: Sequence[tuple[re.Match[str], bool]], i: int) -> bool:
    """Whether inline code is joined by "and", "or" or a comma to inline code taken as software:
    "`zlib` and `deflate` style encodings". Coordinated names are of one kind."""
    for j in (i - 1, i + 1):
        if 0 <= j < len(candidates) and candidates[j][1]:
            first, second = sorted((candidates[i][0], candidates[j][0]), key=lambda m: m.start())
            if _AND.match(prose[first.end() : second.start()]):
                return True
    return False


def _software(prose: str, m: re.Match[str], name: str, english: Callable[[str], bool]) -> bool:
    if not name.islower() and not any(c.isdigit() for c in name):
        return False
    if name in sys.stdlib_module_names:
        return True  # `difflib`, `subprocess`: a module of Python's standard library
    if re.fullmatch(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)+", name):
        return True  # a distribution's name
    if _SOFTWARE_NOUN_AFTER.match(prose, m.end()) or _SOFTWARE_NOUN_BEFORE.search(prose, 0, m.start()):
        return True  # "the `requests` library", "package `rich`": even an English word
    if _listed_software(prose, m.start()):
        return True  # "relies on these libraries:", then "* `rich` - Rich terminal support."
    if "_" in name or english(name):
        return False  # a parameter, a variable or a word
    line_start = max((c.end() for c in _CLAUSE.finditer(prose, 0, m.start())), default=0)
    clause_end = _CLAUSE.search(prose, m.end())
    clause = prose[
        max(line_start, m.start() - 60) : min(clause_end.start() if clause_end else len(prose), m.end() + 60)
    ]
    return _SOFTWARE_WORDS.search(clause) is not None


_ITEM = re.compile(r"[ \t]*(?:[-*+]|\d+[.)])[ \t]+")


def _listed_software(prose: str, at: int) -> bool:
    """Whether the inline code at `at` opens an item of a list whose lead-in, the line ending with
    a colon above the list, says its items are software ("The project relies on these excellent
    libraries:", "As well as these optional installs:"). A list of parameters or fields under
    "Arguments:" is no list of software."""
    line_start = prose.rfind("\n", 0, at) + 1
    item = _ITEM.match(prose, line_start)
    if item is None or item.end() != at:
        return False
    end = line_start - 1
    while end > 0:
        start = prose.rfind("\n", 0, end) + 1
        line = prose[start:end]
        end = start - 1
        if not line.strip() or _ITEM.match(line) or line.startswith((" ", "\t")):
            continue  # the list's other items, their continuations, blank lines
        return line.rstrip().endswith(":") and _SOFTWARE_WORDS.search(line) is not None
    return False


_REFERENCE = re.compile(r"(?<![\w.])[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)*\.([A-Z][A-Za-z0-9]*[a-z][A-Za-z0-9]*)\b")
_CLASS = re.compile(r"^[ \t]*class[ \t]+([A-Za-z_]\w*)", re.M)


def defined_classes(texts: Sequence[str]) -> frozenset[str]:
    """Classes the documents' code samples define (`class UserSerializer(...)` opening a line):
    examples."""
    return frozenset(m.group(1) for text in texts for m in _CLASS.finditer(text))


def reference_hits(
    text: str, found: Sequence[Hit], defined: frozenset[str], urls: Sequence[tuple[int, int]]
) -> list[Hit]:
    """Classes taken from a module (`routers.DefaultRouter()`, `io.BytesIO()`,
    `'rest_framework.renderers.JSONRenderer'`, "use httpx.StatusCodes"), in code samples of any
    kind (fenced or indented) and in prose: a library's, which a reader looks up, unlike the
    classes the samples define themselves (`defined`). Addresses (`urls`) are skipped."""
    out: list[Hit] = []
    for m in _REFERENCE.finditer(text):
        start, end = m.span(1)
        if m.group(1) in defined or any(s <= m.start() < e for s, e in urls):
            continue  # an example class, or a piece of an address
        if not any(h.start < end and start < h.end for h in [*found, *out]):
            out.append(Hit(start, end, m.group(1), UNKNOWN_LABEL))
    return out


_CODENAME = re.compile(r"\bcode[ -]?named?[ \t]*[:=]?[ \t]*[\"“']([^\"”'\n]{2,40})[\"”']", re.I)


def codename_hits(text: str, found: Sequence[Hit], release: str) -> tuple[list[Hit], list[Hit]]:
    """Release codenames: `Released 2015-11-24, codename "pow pow"` names that release, an event,
    in words no model reads as a name. Returns the hits kept and the codename hits."""
    named = [Hit(m.start(1), m.end(1), m.group(1), release) for m in _CODENAME.finditer(text)]
    if not named:
        return list(found), []
    return [h for h in found if not any(h.start < n.end and n.start < h.end for n in named)], named


_SHAPED = re.compile(
    r"(?<![\w/.\-])("
    r"(?:[A-Z][A-Za-z]*[A-Z][a-z]?|[A-Z][a-z]+[A-Z])(?:v\d+(?:\.\d+)*|/\d(?:\.\d)?|\d+)"  # IPv6, HTTPv2
    r"|[A-Z]{2,}v\d(?:\.\d+)*|[A-Z]{2,}/\d(?:\.\d)?|[A-Z]{2,}\d+|[A-Z]{2,}-\d+"  # TLSv1.3, HTTP/2, SOCKS5, UTF-8
    r"|[A-Z][a-z]+v\d+|[A-Z]{2}[a-z]+\d+[a-z]?"  # OAuth2, OAuth1a
    r")(?![\w/\-]|\.\d)"
)
"""A protocol's or encoding's name with its version in one token: no model or rule reads
"HTTP/2" or "TLSv1.3" as a name, and no English word is shaped so."""


def shaped_hits(prose: str, found: Sequence[Hit], urls: Sequence[tuple[int, int]]) -> tuple[list[Hit], list[Hit]]:
    """Versioned protocol and encoding names in prose (`_SHAPED`); they replace the pieces of
    them found ("TLSv" of "TLSv1.3"). `prose` is the chunk's text with its fenced blocks blanked,
    offsets kept. Returns the hits kept and the shaped hits."""
    out: list[Hit] = []
    kept = list(found)
    for m in _SHAPED.finditer(prose):
        start, end = m.span(1)
        if any(s <= start < e for s, e in urls) or prose[max(0, start - 1)] == "`":
            continue
        inside = [h for h in kept if start <= h.start and h.end <= end]
        if not any(h.start < end and start < h.end for h in kept if h not in inside):
            kept = [h for h in kept if h not in inside]
            out.append(Hit(start, end, m.group(1), UNKNOWN_LABEL))
    return kept, out
