"""What an integrity check reports, apart from `models` so that module stays one size: the same
records for both stores' `check`, the knowledge base and the CLI."""

from __future__ import annotations

from pydantic import BaseModel, Field


class IntegrityProblem(BaseModel):
    """One kind of damage an integrity check found: how much, a few examples, whether repair fixes it."""

    kind: str
    count: int
    detail: str
    examples: list[str] = Field(default_factory=list)
    repairable: bool = True


class IntegrityReport(BaseModel):
    """What `check` found and, with repair, what it fixed and what is left."""

    found: list[IntegrityProblem] = Field(default_factory=list)
    repaired: dict[str, int] = Field(default_factory=dict)
    remaining: list[IntegrityProblem] = Field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.remaining
