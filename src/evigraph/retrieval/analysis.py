"""What a question names: the phrases to look up as entity names, cheaply and without a model.

Every contiguous run of up to `max_tokens` words is a candidate; the store's name index answers
all of them in one look-up, so the cost is a dictionary probe per n-gram. Runs that are only
stop words are skipped: they would match nothing useful and waste probes.
"""

from __future__ import annotations

import re

from evigraph.store.bm25 import STOPWORDS, query_words

_WORD = re.compile(r"[\w][\w'’.\-&]*", re.UNICODE)
_STOP = frozenset(
    """
    a an the of in on at to for from by with and or is are was were be been who whom whose what which
    when where why how did does do that this these those it its as into than then there their they he
    she his her him we our you your i me my not no yes also many much more most some any all one
    """.split()  # noqa: SIM905 - a word list reads better as text
)


def question_phrases(question: str, max_tokens: int = 6) -> list[str]:
    """Candidate names in a question: every word n-gram, longest first, stop-word-only runs skipped."""
    words = [w.strip(".'’-") for w in _WORD.findall(question)]
    words = [w for w in words if w]
    out: dict[str, None] = {}
    for size in range(min(max_tokens, len(words)), 0, -1):
        for i in range(len(words) - size + 1):
            gram = words[i : i + size]
            if all(w.lower() in _STOP for w in gram):
                continue
            if gram[0].lower() in _STOP or gram[-1].lower() in _STOP:
                continue
            out[" ".join(gram)] = None
    return list(out)


def name_terms(question: str) -> str:
    """The question's words that may name something, for a search of entity names by their words.

    A question's function words ("how", "do", "it", "use") are no names, yet under the full-text
    stemmer they meet names that stem alike: "do" met "DoS" and seeded it into every "How do I ...?"
    question of a corpus about denial of service. Passage search keeps such words (a passage's
    "asked" is found by a question's "ask"); a name search drops the engine's own stopwords, which
    its index never held as words of a name anyway.
    """
    return " ".join(w for w in query_words(question) if w not in STOPWORDS)
