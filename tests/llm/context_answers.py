"""Scripted answers to the contextual chunker's calls, for the replay server.

The chunker's user message shows parts of one document with `⟦n⟧` where passage n begins; an
answer function reads the passages back (each runs to the next mark or gap) and answers every
one of them in one JSON reply, with a usage block counted as a server would. Standard library
only, like `extraction_answers`, so a benchmark can import it by path.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from tests.llm.extraction_answers import approx_tokens, usage_of
from tests.llm.replay_server import Answer, Reply, Request, chat_reply

PerPassage = Callable[[str, str], str]
"""The context to write for one passage: (document title, passage text) -> sentence."""

_MARK = re.compile(r"⟦(\d+)⟧")


def is_context_call(request: Request) -> bool:
    return "You situate passages" in request.prompt


def title_and_passages(request: Request) -> tuple[str, list[str]]:
    """The document's title and each marked passage's text (up to the next mark or gap), in order."""
    user = next((str(m["content"]) for m in reversed(request.messages) if m.get("role") == "user"), "")
    title = user.splitlines()[0].removeprefix("Title: ") if user else ""
    document = user.partition("\nDocument:\n")[2]
    pieces = _MARK.split(document)  # text, n, text, n, text ...
    found = {int(pieces[i]): pieces[i + 1].split("[...]")[0].strip() for i in range(1, len(pieces) - 1, 2)}
    return title, [found[n] for n in sorted(found)]


def context_answer(per_passage: PerPassage, count: Callable[[str], int] = approx_tokens) -> Answer:
    """An answer function for context calls; other requests are left to the server's other rules."""

    def answer(request: Request) -> Reply | None:
        if not is_context_call(request):
            return None
        title, passages = title_and_passages(request)
        body = {"contexts": [{"p": n, "c": per_passage(title, text)} for n, text in enumerate(passages, 1)]}
        content = json.dumps(body, separators=(",", ":"))
        prompt, completion = usage_of(request, content, count)
        return chat_reply(content, prompt_tokens=prompt, completion_tokens=completion)

    return answer
