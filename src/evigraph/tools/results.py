"""What tools return: typed results that also render as compact, cited text for an LLM.

Every result is a pydantic model (`model_dump_json()` for programs) and has `to_llm_text()` for
the model's context window. The text shares its budget between sections, so a long list of
relations cannot push the passages out, and every evidence item shows its `[n]`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import PurePosixPath
from typing import Any

from pydantic import BaseModel, Field

from evigraph.display import display_text, one_line
from evigraph.retrieval.context import Section, pack_sections
from evigraph.retrieval.result import EntityItem, PassageItem, RelationItem, Source

DEFAULT_TEXT_CHARS = 8000
PASSAGE_LINE_CHARS = 1200
PASSAGE_SHARE = 2.0


def num(value: float | int) -> str:
    """Whole-number floats print as integers (40, not 40.0); others keep up to 4 significant digits."""
    if isinstance(value, float):
        if value.is_integer():
            return str(int(value))
        return f"{value:.4g}"
    return str(value)


def where(source: Source | None) -> str:
    """A passage's label: its file name (or title), page and section."""
    if source is None:
        return ""
    label = PurePosixPath(source.path.replace("\\", "/")).name if source.path else (source.title or source.document)
    if source.page is not None:
        label += f", p. {source.page}"
    crumbs = [c for c in source.breadcrumbs if c != source.title]
    if crumbs:
        label += " > " + " > ".join(crumbs[-2:])
    return display_text(label)  # a file name must not start a line of its own, such as a forged [n]


def citation_line(source: Source) -> str:
    """A human citation: title, path and location, ready to paste under an answer."""
    parts = [source.title or source.document]
    if source.path:
        parts.append(source.path)
    if source.page is not None:
        parts.append(f"p. {source.page}")
    parts.append(f"chars {source.start}-{source.end}")
    return display_text(", ".join(parts))


def passage_line(p: PassageItem) -> str:
    text = " ".join(p.text.split())
    return f"[{p.n}] ({where(p.source)}) {text}" if p.n else f"({where(p.source)}) {text}"


def entity_line(e: EntityItem) -> str:
    desc = f": {e.description}" if e.description else ""
    return f"[{e.n}] " + one_line(f"{e.name} ({e.label}){desc}")


def relation_line(r: RelationItem) -> str:
    fact = f": {r.fact}" if r.fact.strip() else ""
    return f"[{r.n}] " + one_line(f"{r.source} -[{r.type}]-> {r.target}{fact}")


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
            header = f"{header}\nHint: {self.hint}" if header else f"Hint: {self.hint}"
        return pack_sections(self.sections(), max_chars, len, header=header, line_cap=PASSAGE_LINE_CHARS * 2)

    def header(self) -> str:
        return ""

    def sections(self) -> list[Section]:
        return []


def passages_section(items: Sequence[PassageItem], title: str = "Passages") -> Section:
    return Section(title, [passage_line(p) for p in items], PASSAGE_SHARE, line_cap=PASSAGE_LINE_CHARS)


def key_values(values: dict[str, Any]) -> str:
    return ", ".join(f"{k}: {num(v) if isinstance(v, int | float) else v}" for k, v in values.items())
