"""The typed result of `retrieve`: passages, entities, relations and facts, each citable by `n`.

One shape whatever paths ran, so callers never branch on arguments. The items are the evidence
items every read returns (`evigraph.evidence`); the knowledge base numbers them with a ledger.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from evigraph.errors import ConfigurationError
from evigraph.evidence.items import EntityItem, PassageItem, RelationItem
from evigraph.retrieval.match import MatchQuality


class RetrievalResult(BaseModel):
    question: str
    entities: list[EntityItem] = Field(default_factory=list)
    relations: list[RelationItem] = Field(default_factory=list)
    facts: list[RelationItem] = Field(default_factory=list)
    passages: list[PassageItem] = Field(default_factory=list)
    paths: list[str] = Field(default_factory=list, description="search paths that ran")
    match: MatchQuality | None = Field(
        None, description="how closely the best passages match the question; weak_match says it may not be covered"
    )

    def to_context(self, max_tokens: int = 2000) -> str:
        """The result as text an LLM can read, every item prefixed `[n]`, within `max_tokens`.

        It reads line for line as the `retrieve` tool's reply does; only the budget is counted
        in tokens here and in characters there.
        """
        from evigraph.evidence.pack import pack_sections
        from evigraph.evidence.render import evidence_sections, hint_line
        from evigraph.providers.tokenizers import default_tokenizer

        if max_tokens <= 0:
            raise ConfigurationError(f"max_tokens must be positive, not {max_tokens}", hint="e.g. max_tokens=2000")
        sections = evidence_sections(self.passages, self.entities, self.relations, self.facts)
        hint = self.match.hint if self.match else None
        header = hint_line(hint) if hint else ""
        return pack_sections(sections, max_tokens, default_tokenizer().count, header=header)
