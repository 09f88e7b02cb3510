"""Contextual chunks: the structural passages, each with a sentence an LLM wrote to situate it.

A passage cut from a long document often never names what it is about ("It was repealed in
1998", "The second step needs root"); a question naming the subject then misses it. Anthropic's
contextual retrieval, the GraphRAG SDK's fifth chunker, has an LLM write a short context for each
passage from its document and indexes it with the passage. Here the context is kept beside the
passage (`TextChunk.context`), searched and embedded with it but never shown as its text, so a
citation still quotes the document's own words at its exact offsets.

The SDK sends the whole document (up to 16,000 tokens) once per passage. This sends, for several
passages of one document in one call, only the document's opening and the text around those
passages, with a mark where each begins, and asks for one JSON answer: about a tenth of the
tokens, as the passages themselves are most of what is read. A document of one passage gets no
context: there is nothing to situate it in, and its title is searched and embedded already.

Contexts are cached in the store (`GraphStore.cached_extractions`, kind "context") by what the
model read for the passage: its text, the text around it, the document's opening, title and
section, the model and the prompt. Re-ingesting costs calls only for passages whose neighbourhood
changed. Calls are charged to the ingest's token budget like extraction's, and fail the same way:
a timeout or malformed JSON fails the document, a misconfigured LLM stops the ingest.
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evigraph.errors import ConfigurationError, LLMError, LLMResponseError
from evigraph.ingest.chunking.base import ChunkingStrategy
from evigraph.ingest.extraction.base import ExtractionRun
from evigraph.ingest.extraction.budget import metered_chat
from evigraph.models import LoadedDocument, TextChunk
from evigraph.providers.llms.base import Message, answer_items
from evigraph.providers.tokenizers import default_tokenizer

if TYPE_CHECKING:
    from evigraph.providers.llms.base import LLM

PROMPT_VERSION = "contextual-1"
"""Change it with anything the model sees, so contexts written for the old prompt are not reused."""

CONTEXT_KIND = "context"
"""The kind contexts are cached under in the store's cache of LLM results."""

CHARS_PER_TOKEN = 4
"""Token budgets become character windows at this rate (English prose averages about four)."""

MAX_CONTEXT_CHARS = 400
"""A context longer than this is cut: a runaway answer must not drown the passage in search."""

SYSTEM = (
    "You situate passages of a document for search. The document is shown in parts ([...] marks "
    "text left out), and ⟦n⟧ marks where passage n begins. For each passage write one sentence of at "
    "most 25 words saying what it is about within the document: name who or what its pronouns and "
    "short references stand for, and the part of the document it belongs to. Use only what the "
    "document says and do not repeat the passage. "
    'Answer JSON: {"contexts": [{"p": n, "c": "sentence"}]}, one item per passage.'
)

ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "contexts": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"p": {"type": "integer"}, "c": {"type": "string"}},
                "required": ["p", "c"],
            },
        }
    },
    "required": ["contexts"],
}


@dataclass(frozen=True)
class _Passage:
    """A chunk as the prompt shows it: where it begins, the text around it, its cache key."""

    position: int  # in the document's chunk list
    key: str
    start: int
    window: tuple[int, int]
    breadcrumbs: tuple[str, ...]
    tokens: int


class ContextualChunking(ChunkingStrategy):
    """`base`'s passages (default: structural), each given a context by an LLM in batches.

    `llm` may be left out: the knowledge base lends its own at each ingest. A call holds at most
    `passages_per_call` passages of one document and about `text_tokens_per_call` tokens of their
    text; it shows the first `head_tokens` of the document and `window_tokens` either side of each
    passage; the model may write `output_tokens_per_passage` tokens per passage.

    Example::

        kb = KnowledgeBase("notes.db", chunker=ContextualChunking(), llm="ollama:qwen2.5:7b")
        report = await kb.ingest(["handbook/"], max_llm_tokens=200_000)
    """

    name = "contextual"

    def __init__(
        self,
        base: ChunkingStrategy | None = None,
        llm: LLM | None = None,
        *,
        passages_per_call: int = 8,
        text_tokens_per_call: int = 2000,
        head_tokens: int = 150,
        window_tokens: int = 200,
        output_tokens_per_passage: int = 64,
    ) -> None:
        if (
            min(passages_per_call, text_tokens_per_call, output_tokens_per_passage) < 1
            or min(head_tokens, window_tokens) < 0
        ):
            raise ConfigurationError(
                "passages_per_call, text_tokens_per_call and output_tokens_per_passage must be positive, "
                "head_tokens and window_tokens not negative",
                "e.g. ContextualChunking(passages_per_call=8, window_tokens=200)",
            )
        if base is None:
            from evigraph.ingest.chunking.structural import StructuralChunking

            base = StructuralChunking()
        self.base = base
        self.llm = llm
        self.passages_per_call = passages_per_call
        self.text_tokens_per_call = text_tokens_per_call
        self.head_tokens = head_tokens
        self.window_tokens = window_tokens
        self.output_tokens_per_passage = output_tokens_per_passage
        self._run = ExtractionRun()

    def chunk(self, document: LoadedDocument) -> list[TextChunk]:
        return self.base.chunk(document)  # contexts come in `contextualize`, which may wait on the model

    def for_run(self, run: ExtractionRun) -> ContextualChunking:
        llm = self.llm or run.llm()
        if llm is None:
            raise ConfigurationError("the contextual chunker needs an LLM, and none is configured", _no_llm_hint())
        bound = copy.copy(self)
        bound.llm, bound._run = llm, run
        run.budget.active = True
        return bound

    async def contextualize(
        self, documents: Sequence[tuple[LoadedDocument, Sequence[TextChunk]]]
    ) -> list[Sequence[TextChunk] | Exception]:
        llm = self.llm
        if llm is None:
            raise ConfigurationError("the contextual chunker needs an LLM, and none is configured", _no_llm_hint())
        budget = self._run.budget
        budget.active = True
        # Token counts and hashes of a whole batch of passages: off the event loop, as chunking is.
        plans = await asyncio.to_thread(lambda: [self._passages(llm, doc, chunks) for doc, chunks in documents])
        contexts = await self._cached([p.key for plan in plans for p in plan])
        budget.cached_contexts += sum(p.key in contexts for plan in plans for p in plan)
        calls = [
            (i, batch)
            for i, plan in enumerate(plans)
            for batch in self._batches([p for p in plan if p.key not in contexts])
        ]
        outcomes = await asyncio.gather(*(self._ask(llm, documents[i][0], batch, contexts) for i, batch in calls))
        stop = next((o for o in outcomes if isinstance(o, ConfigurationError)), None)
        if stop is not None:  # every call would fail alike
            raise stop
        failed: dict[int, Exception] = {}
        for (i, _), outcome in zip(calls, outcomes, strict=True):
            if outcome is not None:
                failed.setdefault(i, outcome)
        out: list[Sequence[TextChunk] | Exception] = []
        for i, ((_, chunks), plan) in enumerate(zip(documents, plans, strict=True)):
            if i in failed:
                out.append(failed[i])
                continue
            given = {p.position: contexts[p.key] for p in plan if p.key in contexts}
            out.append([c.model_copy(update={"context": given[n]}) if n in given else c for n, c in enumerate(chunks)])
        return out

    # -- steps -------------------------------------------------------------------------------

    def _passages(self, llm: LLM, document: LoadedDocument, chunks: Sequence[TextChunk]) -> list[_Passage]:
        """The chunks to situate, with what the model reads for each; none for a one-chunk document."""
        if len(chunks) < 2:
            return []
        text = document.text
        count = default_tokenizer().count
        shared = (PROMPT_VERSION, llm.model, document.title, text[: self._head(text)])
        out = []
        for position, c in enumerate(chunks):
            start = min(max(c.start, 0), len(text))  # offsets outside the text (a custom chunker's bug) are clamped
            end = min(max(c.end, start), len(text))
            lo, hi = _window(text, start, end, self.window_tokens * CHARS_PER_TOKEN)
            seen = (*shared, " > ".join(c.breadcrumbs), text[lo:start], c.text, text[end:hi])
            key = hashlib.sha256("\x1f".join(seen).encode("utf-8", "surrogatepass")).hexdigest()
            out.append(_Passage(position, key, start, (lo, hi), c.breadcrumbs, count(c.text)))
        return out

    def _batches(self, passages: Sequence[_Passage]) -> list[list[_Passage]]:
        """Passages in reading order, cut by count and by text tokens; one passage repeated is asked once."""
        out: list[list[_Passage]] = []
        keys: set[str] = set()
        size = 0
        for p in passages:
            if p.key in keys:
                continue
            keys.add(p.key)
            if not out or len(out[-1]) >= self.passages_per_call or size + p.tokens > self.text_tokens_per_call:
                out.append([])
                size = 0
            out[-1].append(p)
            size += p.tokens
        return out

    def _head(self, text: str) -> int:
        """Where the document's opening shown with every call ends: it usually names the subject."""
        return _window(text, 0, 0, self.head_tokens * CHARS_PER_TOKEN)[1]

    async def _cached(self, keys: Sequence[str]) -> dict[str, str]:
        store = self._run.store
        if store is None:
            return {}
        found: dict[str, str] = {}
        unique = list(dict.fromkeys(keys))
        for i in range(0, len(unique), 1000):
            found.update(await store.cached_extractions(unique[i : i + 1000], kind=CONTEXT_KIND))
        return found

    async def _ask(
        self, llm: LLM, document: LoadedDocument, batch: Sequence[_Passage], contexts: dict[str, str]
    ) -> Exception | None:
        """Send one call if the budget allows; its contexts go to `contexts` and the cache. A
        failure is returned, not raised, so the other calls finish and are cached."""
        budget = self._run.budget
        messages = [Message.system(SYSTEM), Message.user(user_prompt(document, self._head(document.text), batch))]
        max_tokens = 32 + self.output_tokens_per_passage * len(batch)
        result = await metered_chat(llm, budget, messages, ANSWER_SCHEMA, max_tokens)
        if result is None:
            return budget.exceeded()
        budget.contexts += len(batch)
        if isinstance(result, LLMError):
            return result
        try:
            found = read_contexts(result.data, len(batch), result.model or llm.model)
        except LLMResponseError as exc:
            budget.unusable()
            return exc
        fresh = {batch[n].key: sentence for n, sentence in found.items()}  # one left out: none, and not cached
        contexts.update(fresh)
        if fresh and self._run.store is not None:
            await self._run.store.cache_extractions(fresh, kind=CONTEXT_KIND)
        return None


def user_prompt(document: LoadedDocument, head: int, batch: Sequence[_Passage]) -> str:
    """Title, the passages' sections, then the document's opening (up to `head`) and the text
    around the passages, each passage's beginning marked ⟦n⟧ and each gap shown as [...]."""
    text = document.text
    spans = sorted([(0, head), *(p.window for p in batch)])
    merged: list[list[int]] = []
    for lo, hi in spans:
        if merged and lo <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], hi)
        elif hi > lo:
            merged.append([lo, hi])
    marks = sorted((p.start, n) for n, p in enumerate(batch, 1))
    parts: list[str] = []
    done = 0
    for lo, hi in merged:
        if lo > done:
            parts.append("[...]")
        pieces, at = [], lo
        for start, n in marks:
            if lo <= start <= hi:
                pieces += [text[at:start], f"⟦{n}⟧"]
                at = start
        pieces.append(text[at:hi])
        parts.append("".join(pieces))
        done = hi
    if done < len(text):
        parts.append("[...]")
    lines = [f"Title: {document.title}"]
    sections = []
    for crumbs, run in itertools.groupby(enumerate(batch, 1), key=lambda item: item[1].breadcrumbs):
        numbers = [n for n, _ in run]
        if crumbs:
            marked = f"⟦{numbers[0]}⟧" + (f"-⟦{numbers[-1]}⟧" if len(numbers) > 1 else "")
            sections.append(f"{marked} {' > '.join(crumbs)}")
    if sections:  # passages of one section are named once: the path is paid per call, not per passage
        lines.append("Sections: " + "; ".join(sections))
    return "\n".join([*lines, "Document:", "\n".join(parts)])


def read_contexts(data: Any, count: int, model: str) -> dict[int, str]:
    """Passage index (0-based, in the order sent) -> its context. An item out of range or without a
    sentence is skipped; an answer without a `contexts` list is an `LLMResponseError`."""
    found: dict[int, str] = {}
    for item in answer_items(data, "contexts", model):
        if not isinstance(item.get("c"), str):
            continue
        n = item.get("p")
        if isinstance(n, int) and not isinstance(n, bool) and 1 <= n <= count:
            sentence = " ".join(item["c"].split())[:MAX_CONTEXT_CHARS]
            if sentence:
                found[n - 1] = sentence
    return found


def _window(text: str, start: int, end: int, chars: int) -> tuple[int, int]:
    """About `chars` characters either side of `text[start:end]`, cut at white space so no word
    is shown in part (where there is white space: Chinese or Japanese text has none)."""
    lo = max(0, start - chars)
    if lo > 0:
        lo = next((i + 1 for i in range(lo, start) if text[i].isspace()), lo)
    hi = min(len(text), end + chars)
    if hi < len(text):
        hi = next((i for i in range(hi, end, -1) if text[i].isspace()), hi)
    return lo, hi


def _no_llm_hint() -> str:
    from evigraph.ingest.extraction.llm import NO_LLM_HINT

    return NO_LLM_HINT
