"""`evigraph mcp`: configuration from flags and environment, then serve.

The server writes only when asked (--allow-writes or --files-root): an agent reading documents
that carry instructions should not find a delete tool it was never meant to have. Without
either, the database is opened read-only, which other read-only processes may share.

The process opens the database first. If another evigraph process holds it, this one forwards
to that process instead of failing with a lock error (see `forwarding`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evigraph.display import display_name
from evigraph.errors import ConfigurationError, DatabaseLockedError, KnowledgeBaseMissingError
from evigraph.limits import DEFAULT_LIMITS, Limits
from evigraph.masking import credential_secrets
from evigraph.mcp.transports import MCP_PATH, mcp_path_of
from evigraph.serving.backend import LocalBackend
from evigraph.serving.forwarding import ForwardingListener, RemoteBackend, forward_options

if TYPE_CHECKING:
    from evigraph.kb import StoreLocation

TRANSPORTS = ("stdio", "http", "sse")
DEFAULT_PORT = 8765
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"", "0", "false", "no", "off"}


def _flag(name: str) -> bool:
    """A yes/no environment variable; anything else is refused rather than read as "no"."""
    value = os.environ.get(name, "").strip().lower()
    if value not in _TRUE | _FALSE:
        raise ConfigurationError(f"{name}={value!r} is not a yes/no value", hint=f"set {name}=1 or {name}=0")
    return value in _TRUE


log = logging.getLogger("evigraph.mcp")

MAX_OPEN_ALONE = "--max-open bounds a folder's open knowledge bases"
"""Said to --max-open given without --db-dir, by `evigraph mcp` and `evigraph serve` alike."""


@dataclass
class McpConfig:
    db: Path | StoreLocation
    """The database file, or a server graph (FalkorDB), which every process opens itself."""
    read_only: bool = True
    files_root: str | None = None
    transport: str = "stdio"
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    token: str | None = None
    scope: tuple[str, ...] = ()
    engine: str = "auto"
    mode_source: str = "default"
    """The flag or variable that chose read-only or writable, for the line said at start."""
    overridden: tuple[str, ...] = ()
    """Environment settings about writes that a flag overrode, also said at start."""
    project: str | None = None
    agent: str | None = None
    """With `project`, the task tools are served, recording as this agent in that project."""
    allow_reject: bool = False
    """Serve reject_decision, a person's override (EVIGRAPH_MCP_ALLOW_REJECT=yes); needs writes and a project."""
    limits: Limits = DEFAULT_LIMITS
    """The operator's limits (--max-hits, EVIGRAPH_MAX_HITS, ... see `evigraph.limits`)."""
    mcp_path: str = MCP_PATH
    """Where streamable HTTP is served (--mcp-path)."""

    @classmethod
    def from_env(
        cls,
        *,
        db: str | None = None,
        read_only: bool | None = None,
        allow_writes: bool | None = None,
        files_root: str | None = None,
        transport: str = "stdio",
        host: str = "127.0.0.1",
        port: int = DEFAULT_PORT,
        engine: str = "auto",
        project: str | None = None,
        agent: str | None = None,
        limits: Mapping[str, Any] | None = None,
        mcp_path: str | None = None,
        max_open: int | None = None,
    ) -> McpConfig:
        """Flags win over the environment (EVIGRAPH_DB, EVIGRAPH_MCP_READ_ONLY, _ALLOW_WRITES, _FILES_ROOT,
        _TOKEN, _SCOPE, _PROJECT, _AGENT, _ALLOW_REJECT; `limits`, the limit flags given, over
        EVIGRAPH_MAX_HITS and the other limits' variables). Writes are served only when asked for: with
        --allow-writes or --files-root (or their variables); asking for writes and for read-only at once
        is refused. The task tools need a project and an agent, both or neither; one alone is refused
        naming the other. `mcp_path` needs streamable HTTP, and `max_open` a folder (`ServeConfig`),
        not the one knowledge base this serves."""
        if transport not in TRANSPORTS:
            raise ConfigurationError(f"unknown transport {transport!r}", hint=f"use one of {', '.join(TRANSPORTS)}")
        if max_open is not None:
            raise ConfigurationError(MAX_OPEN_ALONE, hint="add --db-dir DIR")
        if mcp_path is not None and transport != "http":
            raise ConfigurationError("--mcp-path is where streamable HTTP is served", hint="add --transport http")
        mode = _write_mode(bool(read_only), bool(allow_writes), files_root)
        project = project or os.environ.get("EVIGRAPH_MCP_PROJECT") or None
        agent = agent or os.environ.get("EVIGRAPH_MCP_AGENT") or None
        allow_reject = _flag("EVIGRAPH_MCP_ALLOW_REJECT")
        _check_caller(project, agent, writes=not mode.read_only, allow_reject=allow_reject)
        scope = tuple(s.strip() for s in os.environ.get("EVIGRAPH_MCP_SCOPE", "").split(",") if s.strip())
        chosen_limits = Limits.from_env(**(limits or {}))
        # The server needs the database file itself: forwarding between processes meets beside it.
        from evigraph.kb import StoreLocation

        location = StoreLocation.parse(db)
        return cls(
            db=location if location.server else location.embedded_path().resolve(),
            read_only=mode.read_only,
            files_root=mode.files_root,
            transport=transport,
            host=host,
            port=port,
            token=os.environ.get("EVIGRAPH_MCP_TOKEN") or None,
            scope=scope,
            engine=location.engine_for(engine),
            mode_source=mode.source,
            overridden=mode.overridden,
            project=project,
            agent=agent,
            allow_reject=allow_reject,
            limits=chosen_limits,
            mcp_path=mcp_path_of(mcp_path),
        )

    def describe(self, forwarding_to: int | None = None) -> str:
        """The line said on stderr at start: what this server may do to the database, and why."""
        where = display_name(str(self.db)) if isinstance(self.db, Path) else self.db.display
        return f"evigraph mcp on {where}: {self.mode(forwarding_to)}"

    def mode(self, forwarding_to: int | None = None) -> str:
        """What a server with these options may do to its database, and which setting chose it."""
        if self.read_only:
            why = "default: no --allow-writes or --files-root" if self.mode_source == "default" else self.mode_source
            line = f"read-only ({why}): the read tools only"
        else:
            line = f"writable ({self.mode_source}): the write tools are served"
            if self.files_root and "files" not in self.mode_source.lower():  # a flag asked, the variable gave it
                line += f", files root {display_name(self.files_root)} (EVIGRAPH_MCP_FILES_ROOT)"
        if self.project is not None:
            line += f"; task tools for project {self.project!r} as agent {self.agent!r}"
            if self.allow_reject and not self.read_only:
                line += ", reject_decision served (EVIGRAPH_MCP_ALLOW_REJECT)"
        if changed := self.limits.changed():
            line += "; limits: " + ", ".join(f"{name} {value:g}" for name, value in changed.items())
        if self.overridden:
            line += f"; ignored, as the flag wins: {', '.join(self.overridden)}"
        if forwarding_to is not None:
            line += f"; forwarding to evigraph process {forwarding_to}, which holds the database"
        elif self.read_only and isinstance(self.db, Path) and not self.db.exists():
            line += "; no knowledge base there yet (build one with `evigraph ingest`, or serve with --files-root DIR)"
        return line


_CALLER = {
    "project": "--project NAME (or set EVIGRAPH_MCP_PROJECT)",
    "agent": "--agent NAME (or set EVIGRAPH_MCP_AGENT)",
}


def _check_caller(project: str | None, agent: str | None, *, writes: bool, allow_reject: bool) -> None:
    """Refuse a start that names half of who records: a server given a project but no agent (or the
    reverse) would serve no task tools while its operator thinks the agent records its work; with
    writes on, that work is lost. reject_decision asked for on a writable server needs both too."""
    served = "a writable server" if writes else "the server"
    if project is None and agent is None:
        if writes and allow_reject:
            raise ConfigurationError(
                f"EVIGRAPH_MCP_ALLOW_REJECT asks {served} for reject_decision, which needs a project and an "
                "agent: both are missing",
                hint=f"pass {_CALLER['project']} and {_CALLER['agent']}, or unset EVIGRAPH_MCP_ALLOW_REJECT",
            )
        return
    if project is None or agent is None:
        gone, kept, value = ("agent", "project", project) if agent is None else ("project", "agent", agent)
        raise ConfigurationError(
            f"{served} was given {kept} {value!r} but no {gone}: the task and decision tools need both",
            hint=f"pass {_CALLER[gone]}, or leave out the {kept} to serve no task tools",
        )


@dataclass(frozen=True)
class _WriteMode:
    read_only: bool
    files_root: str | None
    source: str
    overridden: tuple[str, ...] = ()


def _write_mode(read_only: bool, allow_writes: bool, files_root: str | None) -> _WriteMode:
    """Read-only unless writes are asked for. The flags decide when they say anything about writes,
    else the environment; read-only and writes asked for at the same level is a usage error."""
    env_root = os.environ.get("EVIGRAPH_MCP_FILES_ROOT") or None
    # (asked read-only as, asked writes as) per level, each a list of the settings that asked.
    flags = (
        ["--read-only"] if read_only else [],
        _asked(" ", ("--allow-writes", allow_writes), ("--files-root", files_root)),
    )
    env = (
        ["EVIGRAPH_MCP_READ_ONLY"] if _flag("EVIGRAPH_MCP_READ_ONLY") else [],
        _asked(
            "=",
            ("EVIGRAPH_MCP_ALLOW_WRITES", _flag("EVIGRAPH_MCP_ALLOW_WRITES")),
            ("EVIGRAPH_MCP_FILES_ROOT", env_root),
        ),
    )
    chosen, ignored = (flags, env) if any(flags) else (env, ([], []))
    no_writes, writes = chosen
    if no_writes and writes:
        raise ConfigurationError(
            f"{no_writes[0]} conflicts with {' and '.join(writes)}",
            hint="ask for the read tools only or for the write tools (--allow-writes, or --files-root DIR), not both",
        )
    if writes:
        return _WriteMode(False, files_root or env_root, " and ".join(writes), tuple(ignored[0]))
    return _WriteMode(True, None, no_writes[0] if no_writes else "default", tuple(ignored[1]))


def _asked(sep: str, *settings: tuple[str, object]) -> list[str]:
    """The settings that are on, shown as given (a files root with its folder)."""
    return [name if value is True else f"{name}{sep}{display_name(str(value))}" for name, value in settings if value]


async def local_backend(config: McpConfig) -> LocalBackend:
    """Open the knowledge base in this process; raises DatabaseLockedError if another holds it."""
    from evigraph.kb import KnowledgeBase
    from evigraph.providers.llms import llm_spec_from_env
    from evigraph.tools.toolkit import Toolkit

    kb = KnowledgeBase(
        config.db,
        read_only=config.read_only,
        engine=config.engine,
        embedder=os.environ.get("EVIGRAPH_EMBEDDER") or None,  # unset: the one the knowledge base records
        llm=llm_spec_from_env(),  # unset: the one the knowledge base records; with one, `answer` is served
        scope=config.scope or None,
        limits=config.limits,
    )
    with contextlib.suppress(KnowledgeBaseMissingError):  # a read-only server on no database reports it per call
        await kb.open(for_write=not config.read_only)
    toolkit = Toolkit(
        kb,
        read_only=config.read_only,
        files_root=config.files_root,
        project=config.project,
        agent=config.agent,
        allow_reject=config.allow_reject,
    )
    backend = LocalBackend(toolkit)
    if not isinstance(config.db, Path):  # a falkordb://user:password@ URL given as --db
        backend.secrets = (*backend.secrets, *credential_secrets(config.db.username, config.db.password))
    return backend


async def serve(config: McpConfig) -> None:
    from evigraph.mcp.transports import check_network, check_port_free, served_url

    if config.transport != "stdio":
        check_network(config.host, config.token)
        check_port_free(config.host, config.port)
    listener: ForwardingListener | None = None
    backend: LocalBackend | RemoteBackend
    try:
        backend = await local_backend(config)
        if isinstance(config.db, Path):  # a server graph takes every process's calls itself: nothing to forward
            listener = ForwardingListener(config.db, backend)
            await listener.start()
    except DatabaseLockedError:
        held = config.db
        assert isinstance(held, Path)  # only an embedded file is ever held by one process
        log.info("%s is served by another evigraph process; forwarding to it", held)

        async def take_over() -> LocalBackend:
            nonlocal listener
            local = await local_backend(config)
            listener = ForwardingListener(held, local)
            await listener.start()
            return local

        options = forward_options(
            config.read_only,
            config.files_root,
            config.scope,
            config.project,
            config.agent,
            config.allow_reject,
            config.limits,
        )
        backend = await RemoteBackend.connect(held, take_over, options)
    # Said on every start, as the database's safety depends on it; stderr, as stdout carries the protocol.
    print(config.describe(backend.served_pid if isinstance(backend, RemoteBackend) else None), file=sys.stderr)
    if config.transport != "stdio":
        kind = "streamable HTTP" if config.transport == "http" else "SSE"
        url = served_url(config.transport, config.host, config.port, config.mcp_path)
        print(f"serving MCP over {kind} at {url}", file=sys.stderr)
    try:
        if config.transport == "stdio":
            from evigraph.mcp.stdio import serve_stdio

            await serve_stdio(backend)
        else:
            await serve_over_http(config, backend)
    finally:
        if listener is not None:
            await listener.close()
        if isinstance(backend, LocalBackend):
            await backend.toolkit.kb.close()
        else:
            await backend.close()


async def serve_over_http(config: McpConfig, backend: LocalBackend | RemoteBackend) -> None:
    """Streamable HTTP or SSE, through the SDK's server."""
    from evigraph.mcp.server import build_server
    from evigraph.mcp.transports import http_app, serve_http, sse_app

    server = build_server(backend)
    if config.transport == "http":
        app = http_app(server, config.host, config.port, config.token, config.mcp_path)
    else:
        app = sse_app(server, config.host, config.port, config.token)
    await serve_http(app, config.host, config.port)


def configure_logging() -> None:
    """Logs go to stderr: over stdio, stdout carries only the protocol."""
    logging.basicConfig(
        stream=sys.stderr, level=os.environ.get("EVIGRAPH_LOG_LEVEL", "WARNING").upper(), format="%(name)s: %(message)s"
    )
