"""The names a question mentions, found from the knowledge base's own entity names and the shapes
of names, without a language model.

Graph ranking seeds its walk with the entities a question names: a name the graph holds verbatim
is a seed at similarity 1, any other name a span of the question whose vector finds the nearest
entities (`graph_stage.py`). So what a finder must get right is, first, every stored name the
question contains, and then the spans that look like names but are not stored. The graph's own
name table answers the first exactly, by looking up the question's word runs, longest first; the
rule extractor's name shapes (capitalised runs, titles, dates, quantities) answer the second.

Running the knowledge base's extractor on the question instead (spaCy's NER by default) cost a cold
process 0.72 s of its 1.63 s `evigraph search` (importing spaCy and loading its model), and an LLM
extractor would cost a model call per question; this takes about a millisecond. It also finds more:
on the dev sets, with the same knowledge bases (spaCy-extracted, MiniLM), recall@5 went from 67.6 /
87.8 / 89.3 to 67.8 / 92.1 / 90.5 (MuSiQue / 2Wiki / HotpotQA), as a stored name that NER splits
or misses in a short question ("of Montreal", a film's full title) is still an exact seed. Without
the written-as-a-name check the same runs gave 65.8 / 88.8 / 87.8.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import NamedTuple

from evigraph.models import Ontology, normalize_name

MAX_NAME_WORDS = 12
"""The longest word run looked up: longer stored names (titles of works) are rare, and a run is
looked up from its first word, so a longer name is still found by its shape."""

_WORD = re.compile(r"\w+(?:['’.\-&]\w+)*")
_ARTICLES = frozenset({"the", "a", "an"})


class NamedSpan(NamedTuple):
    """A name found in the question, and where: offsets into the question's text."""

    name: str
    start: int
    end: int


def question_names(
    question: str, known: Mapping[str, int], usable: Callable[[int], bool], ontology: Ontology
) -> list[NamedSpan]:
    """The question's names in reading order, none overlapping: the stored ones (`known`: normalised
    name to entity node, `usable`: whether that node can seed), then names by shape where no stored
    name is."""
    from evigraph.ingest.extraction.rules import find_hits

    found = _stored_names(question, known, usable)
    for hit in find_hits(question, ontology):
        if not any(hit.start < end and start < hit.end for _, start, end in found):
            found.append(NamedSpan(question[hit.start : hit.end], hit.start, hit.end))
    return sorted(found, key=lambda n: n.start)


def _stored_names(question: str, known: Mapping[str, int], usable: Callable[[int], bool]) -> list[NamedSpan]:
    """Left to right, the longest word run at each word that is a stored name; a match must be
    written as a name (a capital letter or a digit in it), so a common word that some passage
    happened to name ("album", "river") does not seed the walk."""
    words = [(m.start(), m.end()) for m in _WORD.finditer(question)]
    found: list[NamedSpan] = []
    i = 0
    while i < len(words):
        if question[words[i][0] : words[i][1]].casefold() in _ARTICLES:
            i += 1  # stored names drop a leading article (`normalize_name`): the run after it matches alike
            continue
        for j in range(min(len(words), i + MAX_NAME_WORDS) - 1, i - 1, -1):
            start, end = words[i][0], words[j][1]
            text = question[start:end]
            node = known.get(normalize_name(text))
            if node is not None and usable(node) and _written_as_name(text):
                found.append(NamedSpan(text, start, end))
                i = j + 1
                break
        else:
            i += 1
    return found


def _written_as_name(text: str) -> bool:
    return any(c.isupper() or c.isdigit() for c in text)
