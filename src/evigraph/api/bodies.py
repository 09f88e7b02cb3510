"""The REST API's own bodies: errors and listings, as pydantic models.

They are models, not dicts, so the OpenAPI document is generated from the same classes the
routes fill in, as the tools' input schemas are generated from their input models.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, Field
from starlette.responses import JSONResponse

from evigraph.tools.definitions import ToolSpec


class FieldError(BaseModel):
    """One argument that failed validation, as pydantic reports it (without the value sent)."""

    loc: list[str | int] = Field(description="where the argument is: field names and list positions")
    msg: str = Field(description="what is wrong with it")
    type: str = Field(description="pydantic's error type, e.g. missing, string_too_long")


class ApiError(BaseModel):
    """Every error the API answers with: one line saying what went wrong, and what to do next."""

    error: str = Field(description="what went wrong, in one line")
    hint: str | None = Field(None, description="what to do next")
    kind: str | None = Field(
        None,
        description='for a failed tool call: "tool" when the tool refused the call (fix the arguments or the '
        "references), else the server-side kind: timeout, database, model provider, configuration, internal",
    )
    available: list[str] | None = Field(None, description="the names that would have been accepted")
    detail: list[FieldError] | None = Field(None, description="each argument that failed validation")


class Health(BaseModel):
    status: Literal["ok"] = "ok"


class DbEntry(BaseModel):
    name: str = Field(description="what ?db= and X-Evigraph-Db take: the file name without .db, never a path")
    open: bool = Field(description="whether this server has opened it yet (it opens each on first use)")


class DbList(BaseModel):
    dbs: list[DbEntry]
    default: str | None = Field(description="the knowledge base a request without ?db= or X-Evigraph-Db gets")


class ToolList(BaseModel):
    db: str = Field(description="the knowledge base these tools act on")
    tools: list[ToolSpec] = Field(description="the same specs (name, description, input schema) MCP lists")


class ApiProblem(Exception):
    """Raised by a route to answer with `body` and `status`; the app turns it into the response."""

    def __init__(self, status: int, body: ApiError) -> None:
        super().__init__(body.error)
        self.status = status
        self.body = body


class JsonBody(JSONResponse):
    """JSON as UTF-8, or escaped as ASCII when it holds a lone surrogate (which UTF-8 cannot carry).

    Tool results quote stored text and the arguments sent, and either may hold one; answering
    with an encoding error would turn a clean result into a server error.
    """

    def render(self, content: Any) -> bytes:
        try:
            return super().render(content)
        except UnicodeEncodeError:
            return json.dumps(content, ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode("ascii")


def problem_response(problem: ApiProblem) -> JsonBody:
    return JsonBody(problem.body.model_dump(exclude_none=True), status_code=problem.status)
