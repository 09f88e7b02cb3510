"""`evigraph mcp`: configuration from flags and environment, then serve.

The process opens the database first. If another evigraph process holds it, this one forwards
to that process instead of failing with a lock error (see `forwarding`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from evigraph.errors import ConfigurationError, DatabaseLockedError, KnowledgeBaseMissingError
from evigraph.mcp.backend import LocalBackend
from evigraph.mcp.forwarding import ForwardingListener, RemoteBackend, forward_options

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


@dataclass
class McpConfig:
    db: Path
    read_only: bool = False
    files_root: str | None = None
    transport: str = "stdio"
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    token: str | None = None
    scope: tuple[str, ...] = ()
    engine: str = "auto"

    @classmethod
    def from_env(
        cls,
        *,
        db: str | None = None,
        read_only: bool | None = None,
        files_root: str | None = None,
        transport: str = "stdio",
        host: str = "127.0.0.1",
        port: int = DEFAULT_PORT,
        engine: str = "auto",
    ) -> McpConfig:
        """Flags win over the environment (EVIGRAPH_DB, EVIGRAPH_MCP_READ_ONLY, _FILES_ROOT, _TOKEN, _SCOPE)."""
        from evigraph.kb import resolve_db_path

        if transport not in TRANSPORTS:
            raise ConfigurationError(f"unknown transport {transport!r}", hint=f"use one of {', '.join(TRANSPORTS)}")
        if read_only is None:
            read_only = _flag("EVIGRAPH_MCP_READ_ONLY")
        scope = tuple(s.strip() for s in os.environ.get("EVIGRAPH_MCP_SCOPE", "").split(",") if s.strip())
        return cls(
            db=resolve_db_path(db).resolve(),
            read_only=read_only,
            files_root=files_root or os.environ.get("EVIGRAPH_MCP_FILES_ROOT") or None,
            transport=transport,
            host=host,
            port=port,
            token=os.environ.get("EVIGRAPH_MCP_TOKEN") or None,
            scope=scope,
            engine=engine,
        )


async def local_backend(config: McpConfig) -> LocalBackend:
    """Open the knowledge base in this process; raises DatabaseLockedError if another holds it."""
    from evigraph.kb import KnowledgeBase
    from evigraph.providers.embedders import embedder_from_env
    from evigraph.tools.toolkit import Toolkit

    store = None
    if config.scope:
        from evigraph.store.embedded.store import EmbeddedStore
        from evigraph.store.scoped import ScopedStore

        store = ScopedStore(EmbeddedStore(config.db, read_only=config.read_only, engine=config.engine), config.scope)
    kb = KnowledgeBase(
        config.db, store=store, read_only=config.read_only, engine=config.engine, embedder=embedder_from_env()
    )
    with contextlib.suppress(KnowledgeBaseMissingError):  # a read-only server on no database reports it per call
        await kb.open_store(for_write=not config.read_only)
    toolkit = Toolkit(kb, read_only=config.read_only, files_root=config.files_root)
    return LocalBackend(toolkit)


async def serve(config: McpConfig) -> None:
    from evigraph.mcp.server import build_server
    from evigraph.mcp.transports import check_network, http_app, serve_http, serve_stdio, sse_app

    if config.transport != "stdio":
        check_network(config.host, config.token)
    listener: ForwardingListener | None = None
    backend: LocalBackend | RemoteBackend
    try:
        backend = await local_backend(config)
        listener = ForwardingListener(config.db, backend)
        await listener.start()
    except DatabaseLockedError:
        log.info("%s is served by another evigraph process; forwarding to it", config.db)

        async def take_over() -> LocalBackend:
            nonlocal listener
            local = await local_backend(config)
            listener = ForwardingListener(config.db, local)
            await listener.start()
            return local

        options = forward_options(config.read_only, config.files_root, config.scope)
        backend = await RemoteBackend.connect(config.db, take_over, options)
    server = build_server(backend)
    try:
        if config.transport == "stdio":
            await serve_stdio(server)
        elif config.transport == "http":
            await serve_http(http_app(server, config.host, config.port, config.token), config.host, config.port)
        else:
            await serve_http(sse_app(server, config.host, config.port, config.token), config.host, config.port)
    finally:
        if listener is not None:
            await listener.close()
        if isinstance(backend, LocalBackend):
            await backend.toolkit.kb.close()
        else:
            await backend.close()


def configure_logging() -> None:
    """Logs go to stderr: over stdio, stdout carries only the protocol."""
    logging.basicConfig(
        stream=sys.stderr, level=os.environ.get("EVIGRAPH_LOG_LEVEL", "WARNING").upper(), format="%(name)s: %(message)s"
    )
