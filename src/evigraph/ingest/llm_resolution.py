"""Resolution at ingest confirmed by an LLM: a document's new names mapped onto the graph's entities.

Exact match leaves "Acme Corporation" apart from the "Acme Corp" an earlier document brought until
a finalize resolves the whole graph; meanwhile its mentions and relations sit on a second entity,
and retrieval splits between the two. `llm_verified` resolves each document's new names (ids the
graph does not hold) before the write, in tiers as the GraphRAG SDK's `LLMVerifiedResolution` does:

1. exact match within the document (`resolve_exact`);
2. candidates among the graph's entities by the finalize resolvers' blocking
   (`candidates.Blocks.around`, only pairs of a new name and an existing entity), plus, with an
   embedder, each new name's nearest existing names by vector (`VECTOR_FLOOR`) that blocking
   missed: a synonym or a translation shares no key;
3. a new name whose candidates hold its very name (the same comparison form, under a compatible
   label, or an alias an earlier confirmation left) maps without a call, when only one entity does;
4. the other label-compatible pairs go to the LLM in batches (the finalize judge,
   `LLMGraphResolution`, with its prompt and parsing), highest score first, at most
   `max_llm_pairs` per ingest call; a confirmed name is written onto its entity, as an alias.

No pair is mapped on a vector's word alone: blocking's measurement (`candidates`) found cosines of
0.99 between distinct names of a series. An LLM failure leaves the pairs of its call undecided and
the document is ingested with those names as they are, listed in the report; a configuration error
(a rejected key) stops the asking for the rest of the ingest, not the ingest.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evigraph.errors import ConfigurationError, LLMConfigurationError, StoreUnavailableError
from evigraph.graphdata import redirect_graph
from evigraph.ingest.candidates import CandidatePair, Candidates
from evigraph.ingest.graph_resolution.base import Judgement, PassageSource, labels_compatible, survivor_of
from evigraph.ingest.graph_resolution.llm import PAIRS_PER_CALL, LLMGraphResolution
from evigraph.ingest.graph_resolution.passages import StorePassages, cut_around
from evigraph.ingest.name_match import best_match, names_of
from evigraph.ingest.resolution import ResolutionRun, ResolutionStrategy, checked_max_llm_pairs, resolve_exact
from evigraph.models import GraphData, TextChunk
from evigraph.resolution_records import REPORTED_MAPPINGS, IngestResolution, MappedName
from evigraph.store.merging import EntityRecord

if TYPE_CHECKING:
    from evigraph.ingest.candidates import Blocks
    from evigraph.providers.llms import LLM
    from evigraph.store.base import GraphStore
    from evigraph.store.caches import VectorMatrix

log = logging.getLogger(__name__)

MAX_LLM_PAIRS = 500
"""Pairs one ingest call sends at most unless told otherwise: the reference's default, and the
agent's finalize default (`tools.plans.DEFAULT_MAX_LLM_PAIRS`), about 32 calls."""

VECTOR_FLOOR = 0.8
"""The name-vector cosine from which an existing entity blocking did not propose becomes a
candidate. Not measured for this use: at 0.8 blocking's measurement (`candidates`, MiniLM over
the bench titles) found one pair of distinct names per 16 of those blocking proposed, which is
a judge's work, not a merge, and the pairs count in `max_llm_pairs` after blocking's."""

VECTOR_NEIGHBOURS = 3
"""Existing entities each new name may gain as candidates by vector."""

NO_LLM_HINT = (
    "pass --llm openai:MODEL (with EVIGRAPH_LLM_BASE_URL and EVIGRAPH_LLM_API_KEY as needed), "
    "KnowledgeBase(llm=...) in Python, or ingest with the exact resolver offline and run "
    "`evigraph finalize --resolver fuzzy`"
)


class LLMVerifiedResolution(ResolutionStrategy):
    """Maps each document's new names onto the entities the graph already holds, as an LLM confirms.

    Example::

        kb = KnowledgeBase("kb.db", llm="openai:gpt-4o-mini", resolver=LLMVerifiedResolution(max_llm_pairs=200))
    """

    name = "llm_verified"

    def __init__(
        self,
        llm: LLM | None = None,
        *,
        max_llm_pairs: int = MAX_LLM_PAIRS,
        pairs_per_call: int = PAIRS_PER_CALL,
        vectors: bool = True,
    ) -> None:
        self.llm = llm
        checked = checked_max_llm_pairs(max_llm_pairs)
        self.max_llm_pairs = MAX_LLM_PAIRS if checked is None else checked
        self.pairs_per_call = max(1, pairs_per_call)
        self.vectors = vectors
        self._bound: _Bound | None = None

    def for_run(self, run: ResolutionRun) -> LLMVerifiedResolution:
        llm = self.llm or run.llm()
        if llm is None:
            raise ConfigurationError("the llm_verified resolver needs an LLM", NO_LLM_HINT)
        pairs = self.max_llm_pairs if run.max_llm_pairs is None else min(self.max_llm_pairs, run.max_llm_pairs)
        bound = copy.copy(self)
        bound.llm = llm
        bound._bound = _Bound(run, IngestResolution(resolver=self.name, max_llm_pairs=pairs), pairs)
        run.budget.active = True
        return bound

    def summary(self) -> IngestResolution | None:
        return self._bound.report if self._bound is not None else None

    async def resolve(self, graph: GraphData) -> GraphData:
        return await self.resolve_document("", graph, ())

    async def resolve_document(self, key: str, graph: GraphData, chunks: Sequence[TextChunk]) -> GraphData:
        graph = resolve_exact(graph)
        bound, llm = self._bound, self.llm
        if bound is None or llm is None or bound.run.store is None:
            raise ConfigurationError(
                "the llm_verified resolver runs inside an ingest",
                hint="pass it to KnowledgeBase(resolver=...), which binds it to the knowledge base's graph and LLM",
            )
        graph_names = await bound.names(self.vectors)
        report = bound.report
        report.documents += 1
        new = {e.id: e for e in graph.entities if e.id not in graph_names.ids}
        report.new_names += len(new)
        if not new:
            return graph
        onto: dict[str, str] = {i: graph_names.mapped[i] for i in new if i in graph_names.mapped}
        report.known += len(onto)
        records = {
            i: EntityRecord(id=i, name=e.name, label=e.label, aliases=e.aliases)
            for i, e in new.items()
            if i not in onto
        }
        pairs, found = await self._candidates(graph_names, records, bound.may_send)
        report.compared += found.compared
        entities = {**graph_names.records, **records}
        pairs = [p for p in pairs if labels_compatible(entities[p.a].label, entities[p.b].label)]
        report.candidates += len(pairs)
        report.by_vector += sum(p.reason == "vector" for p in pairs)
        by_name = _by_name(pairs, records)
        report.known += len(by_name)
        onto.update(by_name)
        asked = [p for p in pairs if _new_side(p, records) not in by_name]
        sent = [] if bound.stopped else asked[: bound.pairs_left]
        report.over_budget += 0 if bound.stopped else len(asked) - len(sent)
        report.unjudged += len(asked) - len(sent)
        if bound.stopped and asked:
            _unresolved(report, key, bound.stopped)
        if sent:
            bound.pairs_left -= len(sent)
            passages = _DocumentPassages(bound.run, graph_names.records, graph, chunks, records)
            judgement = await self._judge(bound, llm, sent, entities, passages)
            onto.update(_confirmed(judgement, records, entities))
            if judgement.failures:
                _unresolved(report, key, *judgement.failures)
        mapping = {i: (s, graph_names.records[s].name) for i, s in onto.items()}
        for i, (s, _) in mapping.items():
            by = "name" if i in by_name or i in graph_names.mapped else "llm"
            if len(report.mappings) < REPORTED_MAPPINGS:
                e, target = new[i], graph_names.records[s]
                report.mappings.append(MappedName(name=e.name, label=e.label, entity=s, entity_name=target.name, by=by))
        report.mapped += len(mapping)
        graph_names.learn([r for i, r in records.items() if i not in mapping], {i: s for i, (s, _) in mapping.items()})
        return _written_onto(graph, mapping, graph_names.records)

    async def _candidates(
        self, graph_names: _GraphNames, records: Mapping[str, EntityRecord], may_send: bool
    ) -> tuple[list[CandidatePair], Candidates]:
        """Blocking's pairs of a new name and an existing entity, highest score first, then, while
        pairs `may_send`, the pairs only name vectors found, closest first: embedding the names and
        reading the graph's vectors buys nothing once no pair can be sent, whereas blocking (cheap)
        still finds the names the graph holds as they are."""
        mine = list(records.values())
        vectors = await graph_names.embed(mine) if may_send and await graph_names.index() is not None else {}
        near = graph_names.blocks.around(mine)
        known = {e.id: v for e in near.entities if (v := graph_names.vector(e.id)) is not None}
        found = near.pairs({**known, **vectors}, touching=records.keys())
        pairs = found.pairs  # each of a new name and one of `near`'s others: the graph's entities
        seen = {frozenset((p.a, p.b)) for p in pairs}
        extra = []
        for i, vector in vectors.items():
            for other, cosine in graph_names.nearest(vector, VECTOR_NEIGHBOURS):
                if cosine < VECTOR_FLOOR or frozenset((i, other)) in seen:
                    continue
                mine_names, theirs = records[i], graph_names.records[other]
                score, _ = best_match(
                    names_of(mine_names.name, mine_names.aliases), names_of(theirs.name, theirs.aliases)
                )
                a, b = sorted((i, other))
                extra.append(CandidatePair(a=a, b=b, score=round(score, 4), reason="vector", cosine=round(cosine, 4)))
        extra.sort(key=lambda p: (-(p.cosine or 0.0), p.a, p.b))
        return pairs + extra, found

    async def _judge(
        self,
        bound: _Bound,
        llm: LLM,
        sent: Sequence[CandidatePair],
        entities: Mapping[str, EntityRecord],
        passages: PassageSource,
    ) -> Judgement:
        judge = LLMGraphResolution(
            llm, pairs_per_call=self.pairs_per_call, max_pairs=len(sent), budget=bound.run.budget
        )
        report = bound.report
        try:
            judgement = await judge.judge(sent, entities, passages)
        except LLMConfigurationError as exc:  # every later call would fail alike: stop asking, keep ingesting
            bound.stopped = f"{exc.message} ({exc.hint})" if exc.hint else exc.message
            log.warning("the llm_verified resolver stopped asking: %s", bound.stopped)
            judgement = Judgement(unjudged=len(sent), failures=[bound.stopped])
        report.sent += len(sent) - judgement.held
        report.held += judgement.held
        report.judged += len(sent) - judgement.unjudged
        report.confirmed += len(judgement.same)
        report.rejected += len(judgement.different)
        report.unjudged += judgement.unjudged
        if judgement.llm is not None:
            report.llm_calls += judgement.llm.calls
            report.llm_failed_calls += judgement.llm.failed_calls
            report.input_tokens += judgement.llm.input_tokens
            report.output_tokens += judgement.llm.output_tokens
        return judgement


@dataclass
class _Bound:
    """One ingest's state: its run, its report, the pairs it may still send, the graph's names.

    Unguarded: the pipeline resolves a run's documents one after another (`IngestRun._process`),
    so each sees the names the one before brought, and each run binds its own (`for_run`)."""

    run: ResolutionRun
    report: IngestResolution
    pairs_left: int
    stopped: str | None = None
    """Why asking stopped (a configuration error of the LLM): later documents go unresolved."""
    _names: _GraphNames | None = None

    @property
    def may_send(self) -> bool:
        return self.stopped is None and self.pairs_left > 0 and not self.run.budget.reached

    async def names(self, vectors: bool) -> _GraphNames:
        """The graph's entities, read once per ingest call and grown with the names each document brings."""
        if self._names is None:
            store = self.run.store
            assert store is not None  # `for_run` refuses a run without one
            records = await store.entity_records()
            redirects = await store.entity_redirects()
            self._names = _GraphNames(records, redirects, store, self.run.embedder if vectors else None)
        return self._names


class _GraphNames:
    """The graph's entities as blocking and the vector tier read them, kept for one ingest call."""

    def __init__(
        self, records: Sequence[EntityRecord], redirects: Mapping[str, str], store: GraphStore, embedder: Any
    ) -> None:
        from evigraph.ingest.candidates import Blocks

        self.records = {r.id: r for r in records}
        self.ids = set(self.records) | set(redirects)
        self.mapped: dict[str, str] = {}
        """New ids this ingest mapped onto an entity: a later document naming them needs no call."""
        self.blocks: Blocks = Blocks(records)
        self.store = store
        self.embedder = embedder
        self._index: VectorMatrix | None = None
        self._row: dict[str, int] = {}

    async def index(self) -> VectorMatrix | None:
        """The graph's name vectors, read on the first document that may send pairs (never when
        none may) and in slices as compact arrays; None without an embedder or stored vectors."""
        if self._index is None and self.embedder is not None:
            from evigraph.ingest.graph_resolution.run import name_vectors
            from evigraph.store.caches import build_matrix

            self._index = build_matrix(list((await name_vectors(self.store, sorted(self.records))).items()))
            self._row = {i: n for n, i in enumerate(self._index.ids)}
        return self._index if self._index is not None and self._index.ids else None

    def vector(self, eid: str) -> list[float] | None:
        """`eid`'s stored name vector, once `index` read them; else None. Blocking asks only for the
        entities sharing a key with a new name, a few, so these few become Python floats."""
        row = self._row.get(eid)
        return None if row is None or self._index is None else self._index.matrix[row].tolist()

    async def embed(self, records: Sequence[EntityRecord]) -> dict[str, list[float]]:
        """The new names' vectors, as `name_vectors` embeds a name; none when embedding fails."""
        from evigraph.ingest.embedding import embed_all, on_embedding_thread

        try:
            got = await on_embedding_thread(embed_all, self.embedder, [r.name for r in records])
        except StoreUnavailableError:
            raise
        except Exception as exc:  # blocking still finds candidates; the document is fine
            log.warning("embedding new names for resolution failed (%s); blocking alone finds candidates", exc)
            return {}
        return {r.id: list(v) for r, v in zip(records, got, strict=True) if v}

    def nearest(self, vector: Sequence[float], k: int) -> list[tuple[str, float]]:
        """The `k` existing entities whose name vectors are closest to `vector`, with their cosines."""
        index = self._index
        if index is None or not index.ids or len(vector) != index.matrix.shape[1]:
            return []
        return [(i, float(cosine)) for i, cosine in index.search(vector, k)]

    def learn(self, written: Sequence[EntityRecord], mapped: Mapping[str, str]) -> None:
        """After a document: its unmapped new names are entities now, candidates for the next one's."""
        self.records.update({r.id: r for r in written})
        self.ids.update(r.id for r in written)
        self.blocks.add(written)
        self.mapped.update(mapped)


class _DocumentPassages(PassageSource):
    """Where the judge reads about an entity: the document's own passages for its new names (not
    stored yet), the store's for the graph's entities."""

    def __init__(
        self,
        run: ResolutionRun,
        stored: Mapping[str, EntityRecord],
        graph: GraphData,
        chunks: Sequence[TextChunk],
        new: Mapping[str, EntityRecord],
    ) -> None:
        assert run.store is not None
        self.stored = StorePassages(run.store, stored)
        self.new = new
        text = {c.index: c.text for c in chunks}
        self.mentioned: dict[str, list[str]] = {}
        for m in graph.mentions:
            if m.entity_id in new and m.chunk_index in text:
                self.mentioned.setdefault(m.entity_id, []).append(text[m.chunk_index])

    async def texts(self, ids: Collection[str], per_entity: int = 1) -> dict[str, list[str]]:
        mine = {i: self.mentioned.get(i, [])[:per_entity] for i in ids if i in self.new}
        return {**await self.stored.texts([i for i in ids if i not in self.new], per_entity), **mine}

    async def snippets(self, ids: Collection[str]) -> dict[str, str]:
        mine = {}
        for i in ids:
            if i in self.new and self.mentioned.get(i):
                entity = self.new[i]
                mine[i] = cut_around(self.mentioned[i][0], (entity.name, *entity.aliases))
        return {**await self.stored.snippets([i for i in ids if i not in self.new]), **mine}


def _new_side(pair: CandidatePair, new: Mapping[str, EntityRecord]) -> str:
    return pair.a if pair.a in new else pair.b


def _by_name(pairs: Sequence[CandidatePair], new: Mapping[str, EntityRecord]) -> dict[str, str]:
    """New names the graph holds under their very form, with only one entity holding it: no call needed."""
    partners: dict[str, set[str]] = {}
    for p in pairs:
        if p.reason == "same":
            mine = _new_side(p, new)
            partners.setdefault(mine, set()).add(p.b if mine == p.a else p.a)
    return {i: next(iter(found)) for i, found in partners.items() if len(found) == 1}


def _confirmed(
    judgement: Judgement, new: Mapping[str, EntityRecord], entities: Mapping[str, EntityRecord]
) -> dict[str, str]:
    """New id -> the existing entity it is. Where the LLM confirmed two, the two are duplicates of
    each other, which finalize resolves; the name goes to the one a finalize merge would keep
    (`survivor_of`)."""
    confirmed: dict[str, list[str]] = {}
    for p in judgement.same:
        mine = _new_side(p, new)
        confirmed.setdefault(mine, []).append(p.b if mine == p.a else p.a)
    return {i: survivor_of(sorted(found), entities) for i, found in confirmed.items()}


def _unresolved(report: IngestResolution, key: str, *errors: str) -> None:
    if key and key not in report.unresolved:
        report.unresolved.append(key)
    for error in errors:
        if error not in report.errors:
            report.errors.append(error)


def _written_onto(
    graph: GraphData, mapping: Mapping[str, tuple[str, str]], records: Mapping[str, EntityRecord]
) -> GraphData:
    """`graph` with each mapped new entity written as the existing one (its id, name and label, the
    new name kept as an alias), mentions and relations re-pointed: the write then folds it in."""
    if not mapping:
        return graph
    moved = redirect_graph(graph, mapping)
    labels = {s: records[s].label for s, _ in mapping.values()}
    entities = tuple(e.model_copy(update={"label": labels[e.id]}) if e.id in labels else e for e in moved.entities)
    return moved.model_copy(update={"entities": entities})
