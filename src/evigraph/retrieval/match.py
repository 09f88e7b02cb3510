"""Match quality: whether the knowledge base holds anything that closely matches a question.

Fused scores are sums of reciprocal ranks, so the best passage of an off-topic question scores
as high as the best passage of a good one. An agent needs evidence on a scale that means the
same in every knowledge base, so each side is judged against what chance gives in this
knowledge base for this question, never against a fixed score:

- Lexical: how much of the question the first passages say. Each content word of the question
  (stop words dropped, plurals folded) weighs its inverse document frequency in the knowledge
  base, BM25's `ln(1 + (N - df + 0.5) / (df + 0.5))`: the information a passage holding it
  carries. A rare name weighs about 7 in a few thousand passages, a common word 1 or 2, and a
  word no passage holds weighs the most, as nothing can match it. `best_lexical` is the share of
  that weight the first `LEXICAL_PASSAGES` passages hold between them.
- Semantic: how far the nearest passage stands out from the others. The one product that ranks
  passages by cosine also gives the question's mean cosine to all N of them and its spread; the
  nearest passage's z-score against the others is compared with what the best of N unrelated
  passages reaches by chance: the maximum of N independent normal draws exceeds z with
  probability `1 - Phi(z)^N`, and the bar is the z where that is `SEMANTIC_ALPHA` (4.5 for 3,500
  passages, 4.3 for 1,500, 5.2 for 100,000). Raw cosines do not carry across embedders (MiniLM's
  unrelated pairs sit near 0.05, other models' near 0.7); a z-score against the question's own
  background does.

A match is weak when neither side clears its bar: a question either names what the passages
say, or means what one of them means. Without an embedder, or with fewer than `MIN_BACKGROUND`
passages embedded, the lexical side decides alone.

A match is also weak when the question names something no passage of the knowledge base
mentions: a capitalised word or a number, past the question's first word, that occurs nowhere
(`unknown_names`). Passages about neighbouring subjects may then resemble the question closely
on both scales (a question about a film whose page is missing still finds its director's), but
what it asks about is not there. This is a fact about the knowledge base, not a fitted bar, and
it also catches a misspelt name, which an agent can correct and ask again.

Measured with bench/retrieval.py (top 5; 100 answerable questions per set asked of the full
knowledge base, 100 others of a copy without their gold passages; 2Wiki / HotpotQA / MuSiQue),
before the unknown-name rule: with MiniLM, 2 / 1 / 0 % of answerable questions flagged and
55 / 10 / 16 % of no-answer ones; without an embedder, 3 / 4 / 17 % and 52 / 33 / 52 %. A
no-answer question keeps its distractors, which the datasets chose to resemble it (HotpotQA's by
TF-IDF against the question), so many still find a close passage; some are even answered by them
(a band's EP page says where the band formed). Questions from another of the three sets, on the
same kind of Wikipedia text, were flagged 77 / 82 / 53 % (89 / 69 / 78 % without an embedder; a
one-off run, as are the comparisons in the constants' notes below, on the same halves and
copies). The unknown-name rule alone, counted over the same halves: 0 / 2 / 3 % of answerable
questions (misspellings: "Withing You Without You", "Margaraviate") and 62 / 43 / 30 % of
no-answer ones name a word the knowledge base lacks. With the rule, in one bench run on the
same knowledge bases (recall unchanged to the decimal): with MiniLM, 2 / 4 / 1 % of answerable
and 75 / 42 / 34 % of no-answer questions flagged; without an embedder, 3 / 7 / 15 % and
67 / 55 / 59 %.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from itertools import islice
from statistics import NormalDist

from pydantic import BaseModel, Field

from evigraph.retrieval.analysis import _STOP
from evigraph.store.base import TermCounts, VectorSearch
from evigraph.store.terms import passage_terms

LEXICAL_BAR = 0.5
"""The first passages match the question's words when they hold at least half of its information
(IDF weight): a majority, not a fitted value. Around it, on the bench (answerable / no-answer %
flagged, 2Wiki, HotpotQA, MuSiQue, without an embedder): 0.4 gives 0/41, 1/14, 4/24; 0.5 gives
3/52, 4/33, 17/52; 0.6 gives 14/65, 9/54, 30/68. MuSiQue's chained questions use relation words
their passages do not ("spouse" for "married"); with MiniLM, meaning carries them (0 % flagged)."""
LEXICAL_PASSAGES = 3
"""Passages whose words count together: a multi-hop question's words are spread over the two to
four passages that answer it. Without an embedder, the first passage alone left 39 / 28 / 68 % of
answerable bench questions under the bar, two 8 / 10 / 33 %, three 3 / 4 / 17 %; five, 0 / 3 / 5 %,
but five also cover more of a no-answer question (45 / 25 / 36 % flagged against 52 / 33 / 52)."""
SEMANTIC_ALPHA = 0.01
"""How often the best of N unrelated passages may clear the semantic bar by chance: the usual 1 %
of a significance test. Real cosines have heavier tails than normal draws and the bench sets share
subjects, so questions from another set cleared it more often (18 / 10 / 44 %); answerable
questions cleared it 70 / 96 / 96 % of the time (2Wiki's comparisons, "which film came out first,
A or B", resemble neither passage alone, and are matched by their words)."""
MIN_BACKGROUND = 30
"""Embedded passages needed to standardise a cosine: below this the mean and spread of the
others are too noisy to judge a z-score by (the usual rule of thumb for estimating a spread)."""
WEAK_HINT = "weak match: nothing in the knowledge base closely matches this question; say so rather than guess"

_WORD = re.compile(r"\w+", re.UNICODE)
_SENTENCE = re.compile(r"(?<=[.!?:;])\s+|\n+")
_FUNCTION_WORDS = _STOP | frozenset(
    "has have had can could would should will shall may might must being about over under after before".split()  # noqa: SIM905
)
"""Words a question is phrased with, not about: the name look-up's stop words and auxiliaries and
prepositions, which IDF alone would weigh as rare in text that never asks anything."""


class MatchQuality(BaseModel):
    """How closely the best passages match the question, on scales that mean the same in every knowledge base."""

    best_lexical: float = Field(
        description="share (0-1) of the question's content words, each weighted by how rare it is in the knowledge "
        f"base, that the first {LEXICAL_PASSAGES} passages contain"
    )
    best_semantic: float | None = Field(
        None, description="cosine similarity of the nearest passage; None without an embedder or vectors"
    )
    semantic_z: float | None = Field(
        None,
        description="standard deviations the nearest passage's cosine stands above the question's cosines to the "
        f"other passages; None with fewer than {MIN_BACKGROUND} passages embedded",
    )
    semantic_bar: float | None = Field(
        None,
        description=f"the z-score the best of this many unrelated passages exceeds by chance only "
        f"{SEMANTIC_ALPHA:.0%} of the time",
    )
    unknown_names: list[str] = Field(
        default_factory=list,
        description="names and numbers in the question that no passage of the knowledge base mentions",
    )
    weak_match: bool = Field(description="nothing retrieved clearly matches the question: it may not be covered")
    reason: str = Field(description="the figures the judgement rests on")

    @property
    def hint(self) -> str | None:
        """The line agents read when the match is weak; None when there is nothing to say."""
        return f"{WEAK_HINT} ({self.reason})" if self.weak_match else None


def question_terms(question: str) -> list[str]:
    """The question's content terms as the store counts them: stop words and single letters dropped."""
    words = [w for w in _WORD.findall(question.casefold()) if len(w) > 1 and w not in _FUNCTION_WORDS]
    return sorted(passage_terms(" ".join(words)))


def name_words(question: str) -> list[str]:
    """The question's words that look like names or numbers: capitalised or holding a digit,
    past the first word of a sentence (which is capitalised whatever it is), in question order."""
    found: list[str] = []
    for sentence in _SENTENCE.split(question):
        for match in islice(_WORD.finditer(sentence), 1, None):
            word = match.group(0)
            named = word[0].isupper() or any(c.isdigit() for c in word)
            if named and len(word) > 1 and word.casefold() not in _FUNCTION_WORDS and word not in found:
                found.append(word)
    return found


def unknown_names(question: str, counts: TermCounts) -> list[str]:
    """The question's `name_words` that no passage holds (`counts` must have been asked for
    `question_terms(question)`, which holds every name word's term)."""
    unknown = []
    for word in name_words(question):
        terms = passage_terms(word)
        if terms and all(counts.counts.get(t, 1) == 0 for t in terms):
            unknown.append(word)
    return unknown


def idf(df: int, passages: int) -> float:
    return math.log(1 + (passages - df + 0.5) / (df + 0.5))


def lexical_coverage(terms: Sequence[str], counts: TermCounts, texts: Iterable[str]) -> float:
    """The IDF-weighted share of `terms` that `texts` hold between them (0 without terms)."""
    weights = {t: idf(counts.counts.get(t, 0), counts.passages) for t in terms}
    total = sum(weights.values())
    if total <= 0:
        return 0.0
    held: set[str] = set()
    for text in texts:
        held |= passage_terms(text)
    return sum(w for t, w in weights.items() if t in held) / total


def standout(best: float, vectors: VectorSearch) -> float | None:
    """The best cosine's z-score against the other passages' cosines (None when they do not vary).

    The best passage is left out of the background it is judged against: in a small knowledge
    base a close match would otherwise widen the spread it is measured by (with N passages no
    z-score against all of them can exceed sqrt(N - 1)).
    """
    n = vectors.passages
    mean = (n * vectors.mean - best) / (n - 1)
    second_moment = (n * (vectors.std**2 + vectors.mean**2) - best**2) / (n - 1)
    std = math.sqrt(max(second_moment - mean**2, 0.0))
    return (best - mean) / std if std > 1e-9 else None


def chance_bar(n: int, alpha: float = SEMANTIC_ALPHA) -> float:
    """The z-score the maximum of `n` independent standard normal draws exceeds with probability `alpha`."""
    return NormalDist().inv_cdf((1 - alpha) ** (1 / n))


def assess(question: str, counts: TermCounts, first: Iterable[str], vectors: VectorSearch | None) -> MatchQuality:
    """The match quality of a retrieval: `first` are its first passages as search reads them
    (`searchable_text`), `vectors` its vector search (None when none ran)."""
    terms = question_terms(question)
    lexical = lexical_coverage(terms, counts, islice(first, LEXICAL_PASSAGES))
    best = vectors.hits[0][1] if vectors is not None and vectors.hits else None
    z = bar = None
    if vectors is not None and best is not None and vectors.passages >= MIN_BACKGROUND:
        z = standout(best, vectors)
        bar = chance_bar(vectors.passages - 1)
    unknown = unknown_names(question, counts)
    reasons = [
        f"the first passages hold {lexical:.0%} of the question's key words"
        if terms
        else "the question has no words to look up"
    ]
    if unknown:
        names = ", ".join(f"'{w}'" for w in unknown[:5])
        reasons.insert(0, f"no passage mentions {names} (check the spelling, or the question is not covered)")
    if z is not None and bar is not None:
        reasons.append(f"the nearest passage stands {z:.1f} sd above the others, chance reaches {bar:.1f}")
    else:
        reasons.append("no vectors to compare meaning" if best is None else "too few passages to judge meaning")
    semantic_ok = z is not None and bar is not None and z >= bar
    return MatchQuality(
        best_lexical=round(lexical, 4),
        best_semantic=None if best is None else round(best, 4),
        semantic_z=None if z is None else round(z, 2),
        semantic_bar=None if bar is None else round(bar, 2),
        unknown_names=unknown,
        weak_match=bool(unknown) or not (lexical >= LEXICAL_BAR or semantic_ok),
        reason="; ".join(reasons),
    )
