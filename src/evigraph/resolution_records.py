"""What resolution at ingest reports: the names a document brought, how they were matched, the cost.

Apart from `models` because `IngestReport` carries it and models.py is full; it imports nothing of
evigraph, so models.py can import it without a cycle. The LLM calls and tokens are plain counts
here (an `LLMSpend` would need models.py): they are also part of the ingest's `report.llm`, which
holds everything the ingest spent.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

REPORTED_MAPPINGS = 100


class MappedName(BaseModel):
    """A name a document brought, written onto an entity the graph already held."""

    name: str
    label: str
    entity: str = Field(description="id of the existing entity the name now belongs to (as an alias)")
    entity_name: str
    by: str = Field(description="'llm': the model confirmed it; 'name': the graph already held that name")


class IngestResolution(BaseModel):
    """What an ingest's resolver did beyond exact match (`llm_verified`), summed over the call."""

    resolver: str
    documents: int = Field(0, description="documents whose names were resolved against the graph")
    new_names: int = Field(0, description="entities the documents brought that the graph did not hold")
    compared: int = Field(0, description="pairs blocking scored between new names and the graph's entities")
    candidates: int = Field(0, description="label-compatible candidate pairs: blocking's and name vectors'")
    by_vector: int = Field(0, description="candidates only name-vector similarity found")
    known: int = Field(0, description="new names mapped without the LLM: the graph holds that very name")
    sent: int = Field(0, description="candidate pairs sent to the LLM: what max_llm_pairs counts")
    judged: int = Field(0, description="candidate pairs the LLM decided")
    confirmed: int = Field(0, description="pairs the LLM judged one entity")
    rejected: int = Field(0, description="pairs the LLM judged two entities")
    unjudged: int = Field(
        0, description="pairs left undecided: over max_llm_pairs, the token ceiling, or a failed call"
    )
    over_budget: int = Field(0, description="of the undecided, pairs not sent because max_llm_pairs was spent")
    held: int = Field(
        0, description="of the undecided, pairs not sent because the ingest's LLM token ceiling was reached"
    )
    mapped: int = Field(0, description="new names written onto an existing entity")
    max_llm_pairs: int | None = Field(None, description="the pair budget this call ran under")
    llm_calls: int = 0
    llm_failed_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    unresolved: list[str] = Field(
        default_factory=list,
        description="documents ingested with some names unresolved because an LLM call failed",
    )
    errors: list[str] = Field(default_factory=list, description="why LLM calls failed, once each")
    mappings: list[MappedName] = Field(default_factory=list, description="the first names mapped, at most 100")

    def add(self, other: IngestResolution) -> IngestResolution:
        """Both reports as one: an ingest of files with several plans runs one resolver per plan."""
        summed = {
            name: getattr(self, name) + getattr(other, name)
            for name, info in type(self).model_fields.items()
            if info.annotation is int
        }
        return self.model_copy(
            update={
                **summed,
                "unresolved": list(dict.fromkeys([*self.unresolved, *other.unresolved])),
                "errors": list(dict.fromkeys([*self.errors, *other.errors])),
                "mappings": [*self.mappings, *other.mappings][:REPORTED_MAPPINGS],
            }
        )

    def line(self) -> str:
        """The report in one line, for the CLI and the ingest tool."""
        text = (
            f"{self.resolver}: {self.new_names} new names, {self.candidates} candidate pairs, "
            f"{self.mapped} mapped onto existing entities ({self.known} by name, {self.confirmed} confirmed "
            f"by the LLM), {self.rejected} rejected, {self.unjudged} undecided"
        )
        if self.over_budget:
            text += f" ({self.over_budget} over the budget of {self.max_llm_pairs} pairs)"
        if self.held:
            text += f" ({self.held} held back by the LLM token ceiling)"
        if self.llm_calls:
            text += f"; {self.llm_calls} LLM calls, {self.input_tokens + self.output_tokens:,} tokens"
        if self.unresolved:
            text += f"; {len(self.unresolved)} documents ingested unresolved after an LLM failure"
        return text
