"""Scripted answers to the LLM extractor's calls, for the replay server: what the tests and
`bench/llm_cost.py` answer with.

The extractor's user message holds numbered passages (`[1] text`), each followed by its
candidates (`candidates: 1 Name (Label); 2 ...`); an answer function reads them back and answers
every passage of the call in one JSON reply, with a usage block counted by `count`, so the
client's accounting runs on numbers a server would send. Standard library only: the bench
imports this file by path.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable
from typing import Any

from tests.llm.replay_server import Answer, Reply, Request, chat_reply

Passage = tuple[str, list[tuple[str, str]]]
"""A passage's text and its candidates (name, label)."""

PerPassage = Callable[[str, list[tuple[str, str]]], dict[str, Any]]
"""What to answer for one passage: `{"e": [...], "r": [...]}`, as the extractor's schema says."""

_PASSAGE = re.compile(r"^\[(\d+)\] (.*)$")
_CANDIDATE = re.compile(r"^(\d+) (.*) \(([^()]*)\)$")


def approx_tokens(text: str) -> int:
    """About four characters a token, as OpenAI's tokenizers average on English."""
    return max(1, len(text) // 4) if text else 0


def is_extraction(request: Request) -> bool:
    return "Extract a knowledge graph" in request.prompt


def passages(request: Request) -> list[Passage]:
    """The passages of an extraction call, in order."""
    user = next((m["content"] for m in reversed(request.messages) if m.get("role") == "user"), "")
    found: list[Passage] = []
    for line in str(user).splitlines():
        match = _PASSAGE.match(line)
        if match:
            found.append((match.group(2), []))
        elif line.startswith("candidates: ") and found:
            for item in line[len("candidates: ") :].split("; "):
                cand = _CANDIDATE.match(item)
                if cand:
                    found[-1][1].append((cand.group(2), cand.group(3)))
    return found


def usage_of(request: Request, content: str, count: Callable[[str], int]) -> tuple[int, int]:
    """(prompt tokens, completion tokens) as a server would count them: each message with its
    framing, and the JSON schema it was sent."""
    prompt = sum(count(str(m.get("content", ""))) + 4 for m in request.messages) + 3
    body = request.body if isinstance(request.body, dict) else {}
    schema = (body.get("response_format") or {}).get("json_schema", {}).get("schema")
    if schema is not None:
        prompt += count(json.dumps(schema, separators=(",", ":")))
    return prompt, count(content)


def extraction_answer(per_passage: PerPassage, count: Callable[[str], int] = approx_tokens) -> Answer:
    """An answer function: each passage of a call answered by `per_passage`; other requests left
    to the server's other rules."""

    def answer(request: Request) -> Reply | None:
        if not is_extraction(request):
            return None
        body = {
            "passages": [{"p": i, **per_passage(text, cands)} for i, (text, cands) in enumerate(passages(request), 1)]
        }
        content = json.dumps(body, separators=(",", ":"))
        prompt, completion = usage_of(request, content, count)
        return chat_reply(content, prompt_tokens=prompt, completion_tokens=completion)

    return answer


_CAPITALISED = re.compile(r"\b[A-Z][a-z]+(?: [A-Z][a-z]+)*")
_NOT_NAMES = frozenset(
    [
        "A",
        "An",
        "The",
        "This",
        "That",
        "These",
        "Those",
        "It",
        "Its",
        "He",
        "She",
        "His",
        "Her",
        "They",
        "Their",
        "In",
        "On",
        "At",
        "By",
        "For",
        "Of",
        "From",
    ]
)


def capitalised_names(text: str, candidates: list[tuple[str, str]]) -> dict[str, Any]:
    """A stand-in model: candidates confirmed by number, other capitalised runs added as Concept,
    and each entity related to the next by RELATED_TO with the passage's first sentence as fact."""
    known = {name for name, _ in candidates}
    entities: list[Any] = list(range(1, len(candidates) + 1))
    names = [name for name, _ in candidates]
    for match in _CAPITALISED.finditer(text):
        if match.group() not in known and match.group() not in _NOT_NAMES:
            known.add(match.group())
            entities.append({"n": match.group(), "t": "Concept"})
            names.append(match.group())
    fact = text.split(". ")[0].rstrip(".") + "."
    relations = [{"s": a, "t": "RELATED_TO", "o": b, "f": fact} for a, b in itertools.pairwise(names)]
    return {"e": entities, "r": relations[:5]}
