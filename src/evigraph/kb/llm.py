"""Which LLM a knowledge base uses, and remembering it across sessions.

As with the embedder, a knowledge base written with `--llm openai:gpt-4o-mini` should be updated
with the same model by later sessions without the flag. Only the spec is recorded (`openai:<model>`):
the URL and the key come from the environment each time, so no secret is ever written to the
database file.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from evigraph.providers.llms import LLM
    from evigraph.store.base import GraphStore

LLM_SETTING = "llm"
"""The spec (`LLM.spec`) of the LLM last given to a writing session."""


class LLMChoice:
    """The LLM given (an object, a spec, or None), else the one the knowledge base recorded."""

    def __init__(self, llm: LLM | str | None) -> None:
        if isinstance(llm, str):  # a spec: refused now if unknown or misconfigured, not mid-ingest
            from evigraph.providers.llms import llm_from_spec

            self.chosen = bool(llm.strip())  # "" is "not set"; "none" is a choice
            llm = llm_from_spec(llm)
            self._owned = True
        else:
            self.chosen = llm is not None
            self._owned = False  # the caller's object: the caller closes it
        self._llm: LLM | None = llm
        self._spec: str | None = None
        self._recalled = self.chosen
        self._recorded = False

    async def opened(self, store: GraphStore, *, writable: bool) -> None:
        """Recall the recorded spec (when none was chosen), or record the chosen one on a write."""
        if not self._recalled:
            self._recalled = True
            self._spec = await store.get_setting(LLM_SETTING) or None
        if writable and not self._recorded:
            self._recorded = True
            spec = self._llm.spec if self.chosen and self._llm is not None else None
            if spec and await store.get_setting(LLM_SETTING) != spec:
                await store.set_setting(LLM_SETTING, spec)

    def get(self) -> LLM | None:
        """The LLM, built from the recorded spec on first use: a session that never asks a model
        needs neither its URL nor its key."""
        if self._llm is None and self._spec is not None:
            from evigraph.providers.llms import llm_from_spec

            self._llm = llm_from_spec(self._spec)  # a failure (no key here) is raised again next time
            self._spec = None
            self._owned = True
        return self._llm

    async def aclose(self) -> None:
        if self._owned and self._llm is not None:
            await self._llm.aclose()
