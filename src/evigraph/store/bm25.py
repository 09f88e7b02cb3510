"""Full-text search by BM25 over in-process inverted indexes: one home for passage and entity
search on every store.

Neither engine's own full-text query is fast or right enough at scale. Kuzu's cost follows each
query word's posting list inside its query engine: at 100,000 passages one common word
("state", 23,496 passages) took 40 ms, and a question's passage search 32 ms of a 59 ms
retrieve. FalkorDB's index ranks by raw term counts with no inverse document frequency (12 %
recall@5 on 2WikiMultihopQA against BM25's 69 %), so it could only say which passages hold a
word: thousands of ids per question, sent to the client and scored there.

So a store builds a `TextIndex` from one scan of a table's full-text column (`search_text`:
`fts_text` of a passage's `searchable_text`, or `entity_search_text`) when a search first needs
it, saves it for the next open (`saved_indexes`) and keeps it until its next write, like its
graph and name indexes. It scores exactly as
Kuzu's full-text index does (Okapi BM25 with k1 = 1.2, b = 0.75 and a base-10 logarithm, the
Snowball Porter stemmer and Kuzu's English stopwords), so both stores rank the same rows the same
way; a test holds the scores to the engine's own. Postings are numpy arrays (compressed sparse rows by
stem), so a query scores every row holding its words in a few vector operations: a common word
costs microseconds, not a posting-list walk.
"""

from __future__ import annotations

import math
import threading
from array import array
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from evigraph.models import EntityHit, PassageHit
from evigraph.store.search_text import fts_text

Hit = TypeVar("Hit", PassageHit, EntityHit)

BM25_K1 = 1.2
BM25_B = 0.75
"""Okapi BM25's parameters as Kuzu's full-text index uses them."""

_STOPWORD_TEXT = (
    "a a's able about above according accordingly across actually after afterwards again against ain't "
    "all allow allows almost alone along already also although always am among amongst an and another any "
    "anybody anyhow anyone anything anyway anyways anywhere apart appear appreciate appropriate are "
    "aren't around as aside ask asking associated at available away awfully b be became because become "
    "becomes becoming been before beforehand behind being believe below beside besides best better "
    "between beyond both brief but by c c'mon c's came can can't cannot cant cause causes certain "
    "certainly changes clearly co com come comes concerning consequently consider considering contain "
    "containing contains corresponding could couldn't course currently d definitely described despite did "
    "didn't different do does doesn't doing don't done down downwards during e each edu eg eight either "
    "else elsewhere enough entirely especially et etc even ever every everybody everyone everything "
    "everywhere ex exactly example except f far few fifth first five followed following follows for "
    "former formerly forth four from further furthermore g get gets getting given gives go goes going "
    "gone got gotten greetings h had hadn't happens hardly has hasn't have haven't having he he's hello "
    "help hence her here here's hereafter hereby herein hereupon hers herself hi him himself his hither "
    "hopefully how howbeit however i i'd i'll i'm i've ie if ignored immediate in inasmuch inc indeed "
    "indicate indicated indicates inner insofar instead into inward is isn't it it'd it'll it's its "
    "itself j just k keep keeps kept know knows known l last lately later latter latterly least less lest "
    "let let's like liked likely little look looking looks ltd m mainly many may maybe me mean meanwhile "
    "merely might more moreover most mostly much must my myself n name namely nd near nearly necessary "
    "need needs neither never nevertheless new next nine no nobody non none noone nor normally not "
    "nothing novel now nowhere o obviously of off often oh ok okay old on once one ones only onto or "
    "other others otherwise ought our ours ourselves out outside over overall own p particular "
    "particularly per perhaps placed please plus possible presumably probably provides q que quite qv r "
    "rather rd re really reasonably regarding regardless regards relatively respectively right s said "
    "same saw say saying says second secondly see seeing seem seemed seeming seems seen self selves "
    "sensible sent serious seriously seven several shall she should shouldn't since six so some somebody "
    "somehow someone something sometime sometimes somewhat somewhere soon sorry specified specify "
    "specifying still sub such sup sure t t's take taken tell tends th than thank thanks thanx that "
    "that's thats the their theirs them themselves then thence there there's thereafter thereby therefore "
    "therein theres thereupon these they they'd they'll they're they've think third this thorough "
    "thoroughly those though three through throughout thru thus to together too took toward towards tried "
    "tries truly try trying twice two u un under unfortunately unless unlikely until unto up upon us use "
    "used useful uses using usually uucp v value various very via viz vs w want wants was wasn't way we "
    "we'd we'll we're we've welcome well went were weren't what what's whatever when whence whenever "
    "where where's whereafter whereas whereby wherein whereupon wherever whether which while whither who "
    "who's whoever whole whom whose why will willing wish with within without won't wonder would wouldn't "
    "x y yes yet you you'd you'll you're you've your yours yourself yourselves z zero"
)
STOPWORDS = frozenset(_STOPWORD_TEXT.split())
"""Kuzu's default English stopwords (its `fts_config.cpp`, 570 words): its index leaves these
words of a passage out before stemming, so they neither count towards a passage's length nor
can be found. A query's words are not filtered: a stopword's stem is found where a word that is
no stopword has it (a query's "ask", a stopword, finds the "asked" of a passage)."""


@dataclass(frozen=True)
class TextIndex:
    """Rows (passages or entities) by Porter stem, for BM25.

    `starts[t]:starts[t + 1]` slices `docs` and `counts` to the rows holding stem `t` and how
    often; rows are numbered by their position in `ids`. `norms` is BM25's length term per row,
    k1 (1 - b + b length / mean length), computed once."""

    ids: Sequence[str]
    stems: Mapping[str, int]  # a dict when built, sorted mapped keys when read from disk (`saved_indexes`)
    starts: Any  # numpy int64, one more than there are stems
    docs: Any  # numpy int32
    counts: Any  # numpy float64
    norms: Any  # numpy float64

    def __len__(self) -> int:
        return len(self.ids)

    def search(self, query: str, limit: int) -> list[tuple[str, float]]:
        """The `limit` best rows for `query` and their BM25 scores, best first, ties by id."""
        import numpy as np

        stems = porter_stems(query_words(query)).values()
        rows = sorted({t for t in (self.stems.get(s) for s in stems) if t is not None})
        if not rows or limit <= 0:
            return []
        n = len(self.ids)
        scores = np.zeros(n, dtype=np.float64)
        for t in rows:
            lo, hi = int(self.starts[t]), int(self.starts[t + 1])
            docs, tf = self.docs[lo:hi], self.counts[lo:hi]
            idf = math.log10((n - (hi - lo) + 0.5) / (hi - lo + 0.5) + 1)  # Kuzu's logarithm is base 10
            scores[docs] += idf * tf * (BM25_K1 + 1) / (tf + self.norms[docs])
        held = np.flatnonzero(scores)
        if held.size > limit:  # keep every row tied with the limit-th: ties are broken by id below
            cut = np.partition(scores[held], held.size - limit)[held.size - limit]
            held = held[scores[held] >= cut]
        best = sorted((-float(scores[i]), self.ids[int(i)]) for i in held)[:limit]
        return [(cid, -negative) for negative, cid in best]


def query_words(query: str) -> list[str]:
    """A query's words in full-text form, each once; stopwords are kept (see `STOPWORDS`)."""
    return list(dict.fromkeys(fts_text(query).split()))


def build_text_index(rows: Iterable[tuple[str, str]]) -> TextIndex:
    """The index of `(id, search_text)` rows.

    Words get a number as they are first seen and are stemmed once each (one stemmer call for
    the whole vocabulary); then (stem, passage) pairs are counted by one sort."""
    import numpy as np

    ids: list[str] = []
    numbered: dict[str, int] = {}
    flat = array("q")  # every row's words, numbered, one row after another: 8 bytes a word, no list
    lengths = array("q")
    for cid, text in rows:
        before = len(flat)
        flat.extend(numbered.setdefault(w, len(numbered)) for w in (text or "").split() if w not in STOPWORDS)
        ids.append(cid)
        lengths.append(len(flat) - before)
    vocabulary = list(numbered)
    stem_of = _stem(vocabulary)
    stems: dict[str, int] = {}
    word_stem = np.fromiter((stems.setdefault(stem_of.get(w, w), len(stems)) for w in vocabulary), np.int64)
    n = max(len(ids), 1)
    length_of = np.frombuffer(lengths, dtype=np.int64) if lengths else np.zeros(0, dtype=np.int64)
    row_of = np.repeat(np.arange(len(ids), dtype=np.int64), length_of)
    words = np.frombuffer(flat, dtype=np.int64) if flat else np.zeros(0, dtype=np.int64)
    pairs, tally = np.unique(word_stem[words] * n + row_of, return_counts=True)
    del flat, words, row_of  # pairs are sorted by stem, then row
    length = length_of.astype(np.float64)
    mean = float(length.mean()) if ids else 0.0
    return TextIndex(
        ids=ids,
        stems=stems,
        starts=np.searchsorted(pairs // n, np.arange(len(stems) + 1, dtype=np.int64)),
        docs=(pairs % n).astype(np.int32),
        counts=tally.astype(np.float64),
        norms=BM25_K1 * (1 - BM25_B + BM25_B * length / mean) if mean else np.full(len(ids), BM25_K1),
    )


_STEMS: dict[str, str] = {}  # the words of queries asked in this process
_STEMMER: list[Any] = []  # PyStemmer's Porter stemmer, made on first use
_STEM_LOCK = threading.Lock()


def porter_stems(words: Sequence[str]) -> dict[str, str]:
    """Each query word's Porter stem, remembered per process."""
    missing = [w for w in dict.fromkeys(words) if w not in _STEMS]
    if missing:
        _STEMS.update(_stem(missing))
    return {w: _STEMS.get(w, w) for w in words}


def _stem(words: list[str]) -> dict[str, str]:
    """Stems of `words`, none remembered: an index's whole vocabulary would stay in memory.

    PyStemmer's "porter" is the Snowball Porter stemmer Kuzu's full-text extension links in: on
    the bench corpora's 41,367 distinct words it gave Kuzu's `stem(w, 'porter')` for every one, so
    postings saved before agree with queries stemmed now. It was Kuzu's own function, through an
    in-memory database or a store's connection; that needed the extension loaded (170-280 ms of a
    first question) and a Kuzu wheel even beside a FalkorDB server, and LadybugDB downloads the
    extension at first use, which fails offline. PyStemmer's first stem, import included, took
    0.8 ms against 102 ms for Kuzu's (same session), so nothing is prefetched any more."""
    with _STEM_LOCK:  # a Stemmer object is not safe to share between threads
        if not _STEMMER:
            import Stemmer

            _STEMMER.append(Stemmer.Stemmer("porter"))
        return dict(zip(words, _STEMMER[0].stemWords(words), strict=True))


async def search(
    index: TextIndex,
    query: str,
    limit: int,
    read: Callable[[Sequence[str]], Awaitable[list[Hit]]],
) -> list[Hit]:
    """The `limit` best rows for `query`, read whole by `read` (a store's `passages_by_ids` or
    `entities_by_ids`) and scored; a row gone since the index was built (deleted by a write the
    index has not seen yet) is left out."""
    ranked = index.search(query, limit)
    if not ranked:
        return []
    found = {h.id: h for h in await read([cid for cid, _ in ranked])}
    return [found[cid].model_copy(update={"score": score}) for cid, score in ranked if cid in found]
