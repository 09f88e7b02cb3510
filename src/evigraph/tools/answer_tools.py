"""The `answer` tool: a cited answer written by the knowledge base's LLM, offered only when it has one.

It writes nothing to the knowledge base, but it is offered only when an LLM is configured, so a
client never lists a tool that cannot run. Its evidence is numbered in the session's ledger like
every other tool's, so the agent can cite it and `check_citations` accepts those numbers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from evigraph.errors import EvigraphError
from evigraph.evidence.citations import CitationCheck
from evigraph.kb.answers import AnswerInput, AnswerStatus
from evigraph.providers.llms.base import Usage
from evigraph.tools.definitions import ToolGroup
from evigraph.tools.passage_tools import RetrieveResult

if TYPE_CHECKING:
    from evigraph.tools.toolkit import Toolkit


TOOLS = ToolGroup()


class AnswerResult(RetrieveResult):
    answer: str = Field(description="the LLM's answer, citing the evidence below as [n]")
    status: AnswerStatus = Field(description="verified, not_found (says the knowledge base lacks it) or unverified")
    verified: bool = Field(description="whether every citation checked out")
    verdict: str = Field(description="the citation check's outcome in one line")
    citations: CitationCheck
    usage: Usage = Field(default_factory=Usage, description="LLM tokens this answer cost")

    def header(self) -> str:
        return f"answer: {self.question}\n{self.answer}\nCitation check: {self.verdict}"


def has_llm(tk: Toolkit) -> bool:
    """Whether the knowledge base has an LLM to answer with; one it cannot build (a recorded model
    whose key is missing here) counts as none, so the tool is not listed."""
    try:
        return tk.kb.llm is not None
    except EvigraphError:
        return False


@TOOLS.tool(
    "answer",
    AnswerInput,
    "A short answer to a question, written by the knowledge base's LLM from what retrieve finds (same "
    "options, plus max_context_tokens for the evidence and max_answer_tokens), every claim cited [n]. The "
    "citations are checked against the evidence the LLM was shown: trust the answer only when verified is "
    "true; status not_found means the knowledge base does not hold it. The evidence comes with its numbers, "
    "so you may cite it yourself and check_citations accepts them. Costs LLM tokens.",
    open_world=True,
    available=has_llm,
)
async def answer(tk: Toolkit, args: AnswerInput) -> AnswerResult:
    written = await tk.kb.answer(args, ledger=tk.ledger)
    fields = written.model_dump(include=set(AnswerResult.model_fields))
    result = AnswerResult.model_validate({**fields, "answer": written.text})
    if written.status == "unverified":
        result.hint = "the answer's citations failed the check: read the cited evidence before using it"
    elif written.match is not None and written.match.hint:
        result.hint = written.match.hint
    return result
