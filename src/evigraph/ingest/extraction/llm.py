"""LLM extraction: typed entities, and typed relations that each carry the sentence stating them.

The two steps of the GraphRAG SDK's extraction, at a fraction of its tokens:

1. a local tagger (spaCy, else the rules: free, instant) proposes the names of each passage;
2. the LLM confirms, retypes or adds entities, and relates them with the ontology's relation
   types and a one-sentence fact, for several passages in one call.

Step 2 does both in one call because a second call would send every passage again: the text is
most of the input, so a relation call of its own would nearly double the input tokens for no
information the model lacks in the first. Confirming a proposed name costs the model one number
instead of the name and its type, which is most of what it writes. Passages of several documents
share a call (`extract_many`), so the instructions and the ontology are paid once per call, not
once per passage.

Results are cached in the store by passage content, ontology, model and prompt: re-ingesting
costs calls only for passages never extracted with these. Every call is checked against the
ingest's token ceiling before it is sent (`budget.TokenBudget`). A call that fails (a timeout,
malformed JSON) fails the documents it held; the pipeline then retries them one by one, so only
the document that caused it fails, and passages cached meanwhile cost nothing again. A
misconfigured LLM (`LLMConfigurationError`) stops the ingest: every call would fail alike.
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from evigraph.errors import ConfigurationError, LLMConfigurationError, LLMError, LLMResponseError
from evigraph.ingest.extraction.base import ExtractionRun, ExtractionStrategy
from evigraph.ingest.extraction.budget import PartlyExtracted, TokenBudget, metered_chat
from evigraph.ingest.extraction.llm_align import align_document
from evigraph.ingest.extraction.llm_prompts import (
    ANSWER_SCHEMA,
    PROMPT_VERSION,
    RawExtraction,
    read_answer,
    system_prompt,
    user_prompt,
)
from evigraph.models import GraphData, Ontology, TextChunk
from evigraph.providers.llms.base import Message
from evigraph.providers.tokenizers import default_tokenizer

if TYPE_CHECKING:
    from evigraph.providers.llms.base import LLM

log = logging.getLogger(__name__)

MAX_CANDIDATES = 30
"""Names proposed per passage at most; a passage listing more is a table, and the model reads it anyway."""

NO_LLM_HINT = (
    "set EVIGRAPH_LLM_MODEL (with EVIGRAPH_LLM_BASE_URL, and EVIGRAPH_LLM_API_KEY for a hosted API), "
    "or pass --llm openai:MODEL (KnowledgeBase(llm=...))"
)


@dataclass(frozen=True)
class _Call:
    """One request: the passages it holds (cache keys, texts) and what the tagger proposed for each."""

    keys: tuple[str, ...]
    texts: tuple[str, ...]
    candidates: tuple[tuple[tuple[str, str], ...], ...]


class LLMExtraction(ExtractionStrategy):
    """Entities and relations typed by the ontology, found by an LLM in batches of passages.

    `llm` may be left out: the knowledge base then lends its own at each ingest (`--llm`,
    `EVIGRAPH_LLM_MODEL`). `proposer` is the local extractor whose names the model confirms
    (default: spaCy when installed, else the rules). A call holds at most `passages_per_call`
    passages and about `text_tokens_per_call` tokens of their text; the model may write
    `output_tokens_per_passage` tokens per passage.

    Example::

        kb = KnowledgeBase("notes.db", extractor=LLMExtraction(), llm="openai:gpt-4o-mini")
        report = await kb.ingest(["docs/"], max_llm_tokens=200_000)
        print(report.llm)
    """

    name = "llm"

    def __init__(
        self,
        llm: LLM | None = None,
        *,
        proposer: ExtractionStrategy | None = None,
        passages_per_call: int = 8,
        text_tokens_per_call: int = 2000,
        output_tokens_per_passage: int = 256,
    ) -> None:
        if passages_per_call < 1 or text_tokens_per_call < 1 or output_tokens_per_passage < 1:
            raise ConfigurationError(
                "passages_per_call, text_tokens_per_call and output_tokens_per_passage must be positive",
                "e.g. LLMExtraction(passages_per_call=8, text_tokens_per_call=2000)",
            )
        self.llm = llm
        self._proposer = proposer
        self.passages_per_call = passages_per_call
        self.text_tokens_per_call = text_tokens_per_call
        self.output_tokens_per_passage = output_tokens_per_passage
        self._run = ExtractionRun()

    @property
    def proposer(self) -> ExtractionStrategy:
        if self._proposer is None:
            from evigraph.ingest.extraction import default_extractor

            self._proposer = default_extractor()
        return self._proposer

    @property
    def offline(self) -> ExtractionStrategy:
        return self.proposer

    @property
    def budget(self) -> TokenBudget:
        """What this extractor spent in the ingest it is bound to (or since it was made)."""
        return self._run.budget

    def for_run(self, run: ExtractionRun) -> LLMExtraction:
        llm = self.llm or run.llm()
        if llm is None:
            raise ConfigurationError("the llm extractor needs an LLM, and none is configured", NO_LLM_HINT)
        bound = copy.copy(self)
        bound.llm, bound._run = llm, run
        _ = bound.proposer  # loaded once here, not per batch
        self._proposer = bound._proposer
        run.budget.active = True
        return bound

    async def extract(self, chunks: Sequence[TextChunk], ontology: Ontology) -> GraphData:
        return (await self.extract_many([chunks], ontology))[0]

    async def extract_many(self, documents: Sequence[Sequence[TextChunk]], ontology: Ontology) -> list[GraphData]:
        llm = self.llm
        if llm is None:
            raise ConfigurationError("the llm extractor needs an LLM, and none is configured", NO_LLM_HINT)
        budget = self._run.budget
        budget.active = True
        prefix = _key_prefix(llm, ontology, self.proposer.name)
        keys = [[_chunk_key(prefix, c.text) for c in chunks] for chunks in documents]
        raws = await self._cached([k for ks in keys for k in ks])
        budget.cached_passages += sum(k in raws for ks in keys for k in ks)
        todo: dict[str, TextChunk] = {}
        for chunks, ks in zip(documents, keys, strict=True):
            for chunk, key in zip(chunks, ks, strict=True):
                if key not in raws:
                    todo.setdefault(key, chunk)
        if todo:
            calls = self._plan(list(todo), list(todo.values()), await self._candidates(list(todo.values()), ontology))
            system = system_prompt(ontology)
            outcomes = await asyncio.gather(*(self._ask(llm, system, call, raws) for call in calls))
            errors = [o for o in outcomes if o is not None]
            stop = next((e for e in errors if isinstance(e, LLMConfigurationError)), None)
            if stop is not None:  # every later call would fail alike
                raise stop
        graphs: list[GraphData | None] = []
        for chunks, ks in zip(documents, keys, strict=True):
            if not all(k in raws for k in ks):
                graphs.append(None)
                continue
            aligned = align_document(chunks, [raws[k] for k in ks], ontology)
            budget.unaligned_entities += aligned.unaligned_entities
            budget.dangling_relations += aligned.dangling_relations
            graphs.append(aligned.graph)
        if todo and errors:  # the pipeline extracts the documents of the failed calls one by one
            raise PartlyExtracted(errors[0], graphs)
        if any(g is None for g in graphs):
            raise budget.exceeded(graphs)
        return [g for g in graphs if g is not None]

    # -- steps -------------------------------------------------------------------------------

    async def _cached(self, keys: Sequence[str]) -> dict[str, RawExtraction]:
        store = self._run.store
        if store is None or not keys:
            return {}
        found: dict[str, RawExtraction] = {}
        unique = list(dict.fromkeys(keys))
        for i in range(0, len(unique), 1000):
            for key, value in (await store.cached_extractions(unique[i : i + 1000])).items():
                try:
                    found[key] = RawExtraction.load(json.loads(value))
                except (ValueError, TypeError):  # written by a buggy release: extracted again
                    log.warning("ignoring an unreadable cached extraction %s", key)
        return found

    async def _candidates(self, chunks: Sequence[TextChunk], ontology: Ontology) -> list[tuple[tuple[str, str], ...]]:
        """The names the local tagger finds in each chunk, in reading order."""
        graphs = await self.proposer.extract_many([[c] for c in chunks], ontology)
        out = []
        for graph in graphs:
            by_id = {e.id: e for e in graph.entities}
            first = sorted(
                (m.spans[0].start if m.spans else 0, m.entity_id) for m in graph.mentions if m.entity_id in by_id
            )
            names = dict.fromkeys((by_id[eid].name, by_id[eid].label) for _, eid in first)
            out.append(tuple(names)[:MAX_CANDIDATES])
        return out

    def _plan(
        self, keys: Sequence[str], chunks: Sequence[TextChunk], candidates: Sequence[tuple[tuple[str, str], ...]]
    ) -> list[_Call]:
        """Passages in order, cut into calls by count and by text tokens; a long passage goes alone."""
        count = default_tokenizer().count
        calls: list[_Call] = []
        batch: list[int] = []
        size = 0
        for i, chunk in enumerate(chunks):
            tokens = count(chunk.text)
            if batch and (len(batch) >= self.passages_per_call or size + tokens > self.text_tokens_per_call):
                calls.append(_call(batch, keys, chunks, candidates))
                batch, size = [], 0
            batch.append(i)
            size += tokens
        if batch:
            calls.append(_call(batch, keys, chunks, candidates))
        return calls

    async def _ask(self, llm: LLM, system: str, call: _Call, raws: dict[str, RawExtraction]) -> LLMError | None:
        """Send one call if the budget allows; its answers go to `raws` and the cache. A failure is
        returned rather than raised, so the other calls of the batch finish and are cached; a call
        the ceiling held back leaves its passages out of `raws`."""
        budget = self._run.budget
        passages = list(zip(call.texts, call.candidates, strict=True))
        messages = [Message.system(system), Message.user(user_prompt(passages))]
        max_tokens = min(64 + self.output_tokens_per_passage * len(call.keys), 16_384)
        result = await metered_chat(llm, budget, messages, ANSWER_SCHEMA, max_tokens)
        if result is None:
            return None
        budget.passages += len(call.keys)
        if isinstance(result, LLMError):
            return result
        try:
            answered = read_answer(result.data, call.candidates, result.model or llm.model)
        except LLMResponseError as exc:
            budget.unusable()
            return exc
        fresh = {}
        for i, key in enumerate(call.keys):
            raw = answered.get(i)
            raws[key] = raw or RawExtraction()  # a passage the model skipped: nothing, and not cached
            if raw is not None:
                fresh[key] = json.dumps(raw.dump(), ensure_ascii=False, separators=(",", ":"))
        if fresh and self._run.store is not None:
            await self._run.store.cache_extractions(fresh)
        return None


def _call(
    batch: Sequence[int],
    keys: Sequence[str],
    chunks: Sequence[TextChunk],
    candidates: Sequence[tuple[tuple[str, str], ...]],
) -> _Call:
    return _Call(
        keys=tuple(keys[i] for i in batch),
        texts=tuple(chunks[i].text for i in batch),
        candidates=tuple(candidates[i] for i in batch),
    )


def _key_prefix(llm: LLM, ontology: Ontology, proposer: str) -> str:
    """What every cache key of an ingest shares: prompt, model, ontology and tagger."""
    return "\x1f".join((PROMPT_VERSION, llm.model, ontology.model_dump_json(), proposer))


def _chunk_key(prefix: str, text: str) -> str:
    return hashlib.sha256(f"{prefix}\x1f{text}".encode("utf-8", "surrogatepass")).hexdigest()
