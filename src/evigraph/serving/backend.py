"""Running one tool call for one client and shaping the reply, independent of any transport.

The MCP server, and a second `evigraph mcp` process forwarding to this one, both go through
`LocalBackend.call`, so size limits, evidence dropping and error masking happen in one place.
"""

from __future__ import annotations

import logging
import traceback
from dataclasses import dataclass, field
from typing import Any

from evigraph.errors import ToolError
from evigraph.masking import env_secrets, mask_secrets
from evigraph.serving.sessions import Sessions
from evigraph.serving.shaping import failure_kind, truncate
from evigraph.tools.definitions import ToolSpec
from evigraph.tools.results import ToolResult
from evigraph.tools.toolkit import Toolkit

log = logging.getLogger("evigraph.mcp")


@dataclass
class Reply:
    """What a tool call sends back: structured data and text, or an error message.

    `failure` says what kind of error: "tool" for a refusal the caller can fix (a `ToolError`),
    else the kind `failure_kind` names ("timeout", "database", ...), so a surface with status
    codes (REST) can tell the caller's mistakes from the server's.
    """

    text: str
    data: dict[str, Any] | None = None
    error: bool = False
    dropped: list[int] = field(default_factory=list)
    failure: str | None = None

    def to_wire(self) -> dict[str, Any]:
        wire = {"text": self.text, "data": self.data, "error": self.error, "dropped": self.dropped}
        return {**wire, "failure": self.failure}

    @classmethod
    def from_wire(cls, raw: dict[str, Any]) -> Reply:
        return cls(
            text=raw["text"],
            data=raw.get("data"),
            error=bool(raw.get("error")),
            dropped=raw.get("dropped", []),
            failure=raw.get("failure"),
        )


class LocalBackend:
    """Tool calls against this process's toolkit, one evidence session per client key."""

    def __init__(self, toolkit: Toolkit) -> None:
        self.toolkit = toolkit
        self.sessions = Sessions(toolkit)
        self.max_chars = toolkit.limits.max_response_chars
        """The operator's max_response_chars: a result's JSON is shortened to fit."""
        self.secrets = env_secrets()
        self.calls_in_flight = 0
        """Calls running now, from any surface: a server bounding its open knowledge bases closes none with one."""

    def specs(self) -> list[ToolSpec]:
        return self.toolkit.tool_specs()

    async def call(self, client: str, name: str, args: dict[str, Any] | None) -> Reply:
        self.calls_in_flight += 1
        try:
            return await self._call(client, name, args)
        finally:
            self.calls_in_flight -= 1

    async def _call(self, client: str, name: str, args: dict[str, Any] | None) -> Reply:
        session = self.sessions.get(client)
        try:
            result = await session.call(name, args or {})
        except ToolError as exc:
            return Reply(text=self._mask(str(exc)), error=True, failure="tool")
        except Exception as exc:  # the agent gets the kind and a next step; the log gets the details
            kind, step = failure_kind(exc)
            trace = "".join(traceback.format_exception(exc))  # masked too: its last line repeats the message
            log.error("tool %s failed: %s\n%s", name, self._mask(f"{type(exc).__name__}: {exc}"), self._mask(trace))
            return Reply(text=f"{name} failed ({kind} error). Next step: {step}.", error=True, failure=kind)
        return self.shape(session, result)

    def shape(self, session: Toolkit, result: ToolResult) -> Reply:
        data = result.model_dump(mode="json")
        data, _, dropped = truncate(data, self.max_chars)
        if dropped:
            session.ledger.drop(dropped)
            try:  # render the text from what is left, so it shows no number that was dropped
                result = type(result).model_validate({k: v for k, v in data.items() if k != "truncated"})
            except Exception:
                log.warning("could not rebuild a truncated %s result for its text", result.tool, exc_info=True)
                return Reply(text=str(data.get("hint", "result truncated")), data=data, dropped=sorted(dropped))
        return Reply(text=result.to_llm_text(), data=data, dropped=sorted(dropped))

    def _mask(self, text: str) -> str:
        return mask_secrets(text, self.secrets)
