"""What the LLM extractor sends and how it reads the answer.

Every token here is paid for on every call, so the prompt is terse: the ontology once per call,
then numbered passages, each with the names a local tagger proposed. The answer uses one-letter
keys and lets the model confirm a proposed name by its number, which is most of what it writes
on ordinary text; relations name their ends as written, since names are what gets aligned to
the passage. Change anything the model sees and `PROMPT_VERSION` must change too, so cached
extractions made with the old prompt are not reused.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from evigraph.models import DEFAULT_RELATION_TYPE, Ontology
from evigraph.providers.llms.base import answer_items

PROMPT_VERSION = "llm-extract-1"

MAX_DESCRIPTION_CHARS = 60
"""A type's description is cut to this: enough to tell Product from Technology, cheap per call."""

GENERIC_RELATION = "a relation the passage states, said by the fact"
"""How `DEFAULT_RELATION_TYPE` reads to the model: its stored description is about co-occurrence."""

_NAME = {"type": "string"}
ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "passages": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "p": {"type": "integer"},
                    "e": {
                        "type": "array",
                        "items": {
                            "anyOf": [
                                {"type": "integer"},
                                {"type": "object", "properties": {"n": _NAME, "t": _NAME}, "required": ["n", "t"]},
                            ]
                        },
                    },
                    "r": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {"s": _NAME, "t": _NAME, "o": _NAME, "f": _NAME},
                            "required": ["s", "t", "o", "f"],
                        },
                    },
                },
                "required": ["p", "e", "r"],
            },
        }
    },
    "required": ["passages"],
}
"""Sent as the JSON schema; `read_answer` checks the same shape, as not every server enforces it."""


def system_prompt(ontology: Ontology) -> str:
    """The instructions and the ontology: the same for every call of an ingest."""
    entity_types = "; ".join(_typed(e.label, e.description) for e in ontology.entities)
    if ontology.relations:
        relation_types = "; ".join(
            _typed(r.type, GENERIC_RELATION if r.type == DEFAULT_RELATION_TYPE else r.description)
            + _patterns(r.patterns)
            for r in ontology.relations
        )
    else:
        relation_types = "any, as UPPER_SNAKE_CASE verbs"
    return (
        "Extract a knowledge graph from numbered passages. Reply with JSON only: "
        '{"passages":[{"p":1,"e":[1,{"n":"Name","t":"Type"}],"r":[{"s":"Name","t":"TYPE","o":"Name","f":"Fact."}]}]}\n'
        f"Entity types: {entity_types}\n"
        f"Relation types: {relation_types}\n"
        "e: the named entities of the passage. A number keeps that candidate (names a tagger proposed, "
        "possibly wrong) with its type; {n,t} adds a missed name or retypes a candidate. n is copied exactly "
        "from the passage; t is one of the entity types; skip what fits none.\n"
        "r: relations the passage states between two of its entities; s and o as in e, t one of the relation "
        "types, f one short sentence stating it.\n"
        "Empty lists when nothing fits."
    )


def user_prompt(passages: Sequence[tuple[str, Sequence[tuple[str, str]]]]) -> str:
    """The passages of one call, numbered from 1, each with its numbered candidates (name, type)."""
    parts = []
    for number, (text, candidates) in enumerate(passages, start=1):
        part = f"[{number}] {' '.join(text.split())}"
        if candidates:
            listed = (f"{i} {name} ({label})" for i, (name, label) in enumerate(candidates, start=1))
            part += "\ncandidates: " + "; ".join(listed)
        parts.append(part)
    return "\n\n".join(parts)


@dataclass
class RawExtraction:
    """What the model said about one passage, names as it wrote them (aligned to the text later).

    This is what the cache holds, so alignment counts the same on a cached passage as on a fresh one.
    """

    entities: list[tuple[str, str]] = field(default_factory=list)
    """(name, type)."""
    relations: list[tuple[str, str, str, str]] = field(default_factory=list)
    """(source name, type, target name, fact)."""

    def dump(self) -> dict[str, Any]:
        return {"e": [list(e) for e in self.entities], "r": [list(r) for r in self.relations]}

    @classmethod
    def load(cls, data: dict[str, Any]) -> RawExtraction:
        return cls(
            entities=[(str(n), str(t)) for n, t in data.get("e", [])],
            relations=[(str(s), str(t), str(o), str(f)) for s, t, o, f in data.get("r", [])],
        )


def read_answer(data: Any, candidates: Sequence[Sequence[tuple[str, str]]], model: str) -> dict[int, RawExtraction]:
    """Passage index (0-based, in the order sent) -> what the model said about it.

    A malformed item (a candidate number out of range, a relation missing an end) is skipped: the
    rest of the passage is still good. An answer without a `passages` list is an `LLMResponseError`,
    which fails the documents of the call. A passage the model left out is absent here.
    """
    found: dict[int, RawExtraction] = {}
    for item in answer_items(data, "passages", model):
        if not isinstance(item.get("p"), int):
            continue
        index = item["p"] - 1
        if not 0 <= index < len(candidates):
            continue
        raw = found.setdefault(index, RawExtraction())
        proposed = candidates[index]
        for e in _list(item.get("e")):
            if isinstance(e, int) and not isinstance(e, bool) and 1 <= e <= len(proposed):
                raw.entities.append(proposed[e - 1])
            elif isinstance(e, dict) and _text(e.get("n")) and _text(e.get("t")):
                raw.entities.append((_text(e["n"]), _text(e["t"])))
        for r in _list(item.get("r")):
            if not isinstance(r, dict):
                continue
            ends = [_end(r.get(k), proposed) for k in ("s", "o")]
            rtype = _text(r.get("t"))
            if ends[0] and ends[1] and rtype:
                raw.relations.append((ends[0], rtype, ends[1], _text(r.get("f"))))
    return found


def _typed(name: str, description: str) -> str:
    text = " ".join(description.split())
    if len(text) > MAX_DESCRIPTION_CHARS:
        text = text[:MAX_DESCRIPTION_CHARS].rsplit(" ", 1)[0] + "…"
    return f"{name} ({text.rstrip('.')})" if text else name


def _patterns(patterns: Sequence[tuple[str, str]]) -> str:
    return f" [{', '.join(f'{a}->{b}' for a, b in patterns)}]" if patterns else ""


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _text(value: Any) -> str:
    return re.sub(r"\s+", " ", value).strip() if isinstance(value, str) else ""


def _end(value: Any, proposed: Sequence[tuple[str, str]]) -> str:
    """A relation's end: a name, or (some models insist) a candidate's number."""
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= len(proposed):
        return proposed[value - 1][0]
    return _text(value)
