"""What tools return: typed results that also render as compact, cited text for an LLM.

Every result is a pydantic model (`model_dump_json()` for programs) and has `to_llm_text()` for
the model's context window. Lines come from the evidence renderers and the budget from the
evidence packer, the same ones `RetrievalResult.to_context` uses, counted here in characters.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from evigraph.evidence.pack import Section, pack_sections
from evigraph.evidence.render import hint_line

DEFAULT_TEXT_CHARS = 8000
PASSAGE_LINE_CHARS = 1200


def num(value: float | int) -> str:
    """Whole-number floats print as integers (40, not 40.0); others keep up to 4 significant digits."""
    if isinstance(value, float):
        if value.is_integer():
            return str(int(value))
        return f"{value:.4g}"
    return str(value)


def next_page(param: str, after: int | str | None, *, quote: bool = False) -> str:
    """`; next page: after_seq=12` for a page's header, nothing on the last page: the agent pages on
    by passing what it reads, under the argument's own name. `quote` shows a name as Python
    writes it (`after_name='b c'`), so one with spaces or commas reads as one value."""
    if after is None:
        return ""
    return f"; next page: {param}={after!r}" if quote else f"; next page: {param}={after}"


def key_values(values: dict[str, Any]) -> str:
    return ", ".join(f"{k}: {num(v) if isinstance(v, int | float) else v}" for k, v in values.items())


def fields_of(found: BaseModel, result: type[BaseModel]) -> dict[str, Any]:
    """The fields of `found` that `result` declares too, as they are: a result carries what the
    knowledge base returned under the same names, and leaves out what an agent has no use for."""
    return {name: getattr(found, name) for name in result.model_fields if name in type(found).model_fields}


class ToolResult(BaseModel):
    """Base of every tool's result."""

    tool: str = Field("", description="the tool that produced this result")
    hint: str | None = Field(None, description="what to do next, when there is something to say")

    def to_llm_text(self, max_chars: int = DEFAULT_TEXT_CHARS) -> str:
        """Compact text within `max_chars`: a header, then sections sharing the budget."""
        if max_chars <= 0:
            raise ValueError(f"max_chars must be positive, not {max_chars}")
        header = self.header()
        if self.hint:
            header = f"{header}\n{hint_line(self.hint)}" if header else hint_line(self.hint)
        return pack_sections(self.sections(), max_chars, len, header=header, line_cap=PASSAGE_LINE_CHARS * 2)

    def header(self) -> str:
        return ""

    def sections(self) -> list[Section]:
        return []
