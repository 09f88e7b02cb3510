"""How evidence reads: one line per item, the same in `to_context` (CLI, Python) and tool replies.

Every line an item renders to starts with its `[n]` and holds no line break, and recorded text
(names, facts, file names) is folded onto that line, so no document can forge a line that looks
like other evidence.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from evigraph.display import display_name, display_text, one_line
from evigraph.evidence.items import (
    EntityItem,
    PassageItem,
    PerKind,
    RelationItem,
    Source,
    ThemeItem,
    property_text,
)
from evigraph.evidence.pack import Section
from evigraph.models import DEFAULT_RELATION_TYPE

if TYPE_CHECKING:  # cited reads the ledger, which renders its items here: a name only, not an import
    from evigraph.evidence.cited import Cited

PASSAGE_SHARE = 2.0
"""Passages get twice the budget of each other section: they are what an answer quotes."""


def number_prefix(n: int) -> str:
    return f"[{n}] " if n else ""


def hint_line(hint: str) -> str:
    """What to do next, as every reply shows it: one line, so recorded text cannot forge evidence."""
    return "Hint: " + one_line(hint)


def where(source: Source | None) -> str:
    """A passage's label: its title (else its key), page, last sections, then its file's path.

    The path is what a reader opens and what tells two documents of one title apart (every
    `index.md` of a documentation site), so a passage line names it in the CLI's text, in
    `to_context` and in tool replies alike.
    """
    if source is None:
        return ""
    label = source.title or (display_name(source.path) if source.path else source.document_key)
    if source.page is not None:
        label += f", p. {source.page}"
    crumbs = [c for c in source.breadcrumbs if c != source.title]
    if crumbs:
        label += " > " + " > ".join(crumbs[-2:])
    if source.path and source.title:
        label += f"; {display_name(source.path)}"
    return display_text(label)  # a file name must not start a line of its own, such as a forged [n]


def citation_line(source: Source, version: int | None = None) -> str:
    """A human citation: title, path, the document version when known, and location, ready to
    paste under an answer."""
    parts = [source.title or source.document_key]
    if source.path:
        parts.append(source.path)
    if version:
        parts.append(f"version {version}")
    if source.page is not None:
        parts.append(f"p. {source.page}")
    parts.append(f"chars {source.start}-{source.end}")
    return display_text(", ".join(parts))


def source_list(cited: Sequence[Cited]) -> str:
    """A markdown source list: one `- [n] ...` item per cited piece of evidence, in the order
    given. A passage names its document's title, path, version and location, and says when that
    version is no longer current; other evidence reads as it did in replies. Recorded text is
    folded onto its line, so a title cannot forge another item."""
    return "\n".join(f"- [{c.n}] {cited_source(c)}" for c in cited if c.n)


def cited_source(c: Cited) -> str:
    if c.source is None:
        return one_line(f"{c.kind}: {c.line}")
    text = citation_line(c.source, c.version)
    if c.current is False:
        text += " (document deleted)" if c.now_version is None else f" (superseded by version {c.now_version})"
    return text


def passage_line(p: PassageItem) -> str:
    return f"{number_prefix(p.n)}({where(p.source)}) " + " ".join(p.text.split())


def passage_block(p: PassageItem, citation: str) -> str:
    """A passage read in full: its citation line, then its text as stored (line breaks kept)."""
    return f"{number_prefix(p.n)}{citation}\n{p.text}"


def entity_line(e: EntityItem, *, with_id: bool = False) -> str:
    desc = f": {e.description}" if e.description else ""
    text = one_line(f"{e.name} ({e.label}){desc}{property_text(e.properties)}")
    return number_prefix(e.n) + text + (f" (id {e.id})" if with_id else "")


def relation_line(r: RelationItem) -> str:
    fact = f": {r.fact}" if r.fact.strip() else ""
    return number_prefix(r.n) + one_line(f"{r.source} -[{r.type}]-> {r.target}{fact}{property_text(r.properties)}")


def theme_line(t: ThemeItem) -> str:
    return number_prefix(t.n) + one_line(f"{', '.join(t.entities)} ({t.size} entities)")


line_of = PerKind("line", passage=passage_line, entity=entity_line, relation=relation_line, theme=theme_line)
"""The one line an item reads as, whatever kind it is."""


def passages_section(
    items: Sequence[PassageItem], title: str = "Passages", line_cap: int = 0, *, first: bool = False
) -> Section:
    return Section(title, [passage_line(p) for p in items], PASSAGE_SHARE, line_cap=line_cap, first=first)


def evidence_sections(
    passages: Sequence[PassageItem],
    entities: Sequence[EntityItem] = (),
    relations: Sequence[RelationItem] = (),
    facts: Sequence[RelationItem] = (),
    *,
    passage_cap: int = 0,
) -> list[Section]:
    """The sections of a retrieval, passages first and whole before anything else prints.

    Entities and relations are shown only where they add to the passages shown (see
    `adds_to`), and a relation that is also a fact is shown once, as a relation.
    """
    shown = [p.text.casefold() for p in passages]
    listed = {r.id for r in relations}
    return [
        passages_section(passages, line_cap=passage_cap, first=True),
        Section("Entities", [entity_line(e) for e in entities if entity_adds(e, shown)]),
        Section("Relations", [relation_line(r) for r in relations if relation_adds(r, passages)]),
        Section("Facts", [relation_line(f) for f in facts if f.id not in listed and relation_adds(f, passages)]),
    ]


def entity_adds(entity: EntityItem, shown: Sequence[str]) -> bool:
    """Whether an entity line says something the shown passages (casefolded texts) do not.

    It does when it has a description, when no shown passage names it (it says where else to
    look), or when several do (it links them). An entity named by exactly one shown passage,
    with nothing else to say, only repeats that passage.
    """
    if entity.description.strip():
        return True
    name = re.compile(rf"(?<!\w){re.escape(entity.name.casefold())}(?!\w)")
    return sum(bool(name.search(text)) for text in shown) != 1


def relation_adds(relation: RelationItem, passages: Sequence[PassageItem]) -> bool:
    """Whether a relation line says something the shown passages do not.

    A typed relation does (its type is a claim no sentence spells out). A co-occurrence
    (`RELATED_TO`) only says two names share a sentence; when that sentence's passage is shown
    already, the line repeats it.
    """
    if relation.type != DEFAULT_RELATION_TYPE:
        return True
    shown = {p.id for p in passages}
    return not relation.passages or not set(relation.passages) & shown


_NUMBERED = re.compile(r"^\[(\d+)\] ", re.MULTILINE)


def numbers_shown(text: str) -> list[int]:
    """The evidence numbers heading lines of packed text, in order: what a reader of it was shown.

    Every item line starts with its `[n] ` and recorded text cannot start a line (see above), so
    a number the budget cut is not among them.
    """
    return list(dict.fromkeys(int(m.group(1)) for m in _NUMBERED.finditer(text)))
