"""`evigraph serve`'s settings: the toolkit options `evigraph mcp` takes, and the HTTP ones.

The toolkit options (writes, files root, scope, project and agent) come from the same flags and
EVIGRAPH_MCP_* variables as `evigraph mcp`, read by the same code (`McpConfig.from_env`), so a
setting means one thing whichever surface serves the tools; the token too (`--token`, else
EVIGRAPH_MCP_TOKEN), as with --with-mcp one server answers both.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from evigraph.api.catalog import MAX_OPEN
from evigraph.display import display_name
from evigraph.errors import ConfigurationError
from evigraph.mcp.main import MAX_OPEN_ALONE, McpConfig
from evigraph.mcp.transports import MCP_PATH, mcp_path_of
from evigraph.serving.sessions import bounds_from_env

DEFAULT_PORT = 8471
MAX_OPEN_ENV = "EVIGRAPH_SERVE_MAX_OPEN"
_SHOWN_NAMES = 10
STATIC = Path(__file__).resolve().parent / "static"
"""The web UI's files, served at /."""


@dataclass(frozen=True)
class ServeConfig:
    toolkit: McpConfig
    """The options every knowledge base is served with; its `db` is the one served, or the folder."""
    folder: Path | None = None
    """With --db-dir: the folder whose NAME.db files are served."""
    cors_origins: tuple[str, ...] = ()
    with_mcp: bool = False
    max_open: int = MAX_OPEN
    """With --db-dir: knowledge bases kept open at once (`evigraph.api.catalog`)."""
    mcp_path: str = MCP_PATH
    """Where MCP is served (--mcp-path)."""
    rest: bool = True
    """The REST API and the web UI; off for `evigraph mcp --db-dir`, which serves MCP alone."""

    @property
    def host(self) -> str:
        return self.toolkit.host

    @property
    def port(self) -> int:
        return self.toolkit.port

    @property
    def token(self) -> str | None:
        return self.toolkit.token

    @classmethod
    def from_flags(
        cls,
        *,
        db_dir: str | None = None,
        token: str | None = None,
        cors_origins: tuple[str, ...] | list[str] = (),
        with_mcp: bool = False,
        max_open: int | None = None,
        mcp_path: str | None = None,
        rest: bool = True,
        transport: str = "http",
        **toolkit: Any,
    ) -> ServeConfig:
        """`toolkit` are `McpConfig.from_env`'s options (db, read_only, allow_writes, files_root, host,
        port, engine, project, agent), read the same way: flags win over the environment, and
        contradictions are refused here, whichever verb (or Python caller) gave them. `transport` is
        `evigraph mcp --db-dir`'s, which only streamable HTTP serves."""
        if toolkit.get("db") is not None and db_dir is not None:
            raise ConfigurationError("--db and --db-dir both name what to serve", hint="give one of them")
        if db_dir is not None and transport != "http":
            raise ConfigurationError(
                f"--db-dir serves a folder over streamable HTTP, where each client names its knowledge base; "
                f"{transport} serves one",
                hint="add --transport http, or serve one knowledge base with --db FILE",
            )
        if db_dir is None and max_open is not None:
            raise ConfigurationError(MAX_OPEN_ALONE, hint="add --db-dir DIR")
        path = _mcp_path(mcp_path, with_mcp=with_mcp)
        bounds_from_env()  # refused at start, not at the first request that opens a knowledge base
        folder = _folder(db_dir) if db_dir is not None else None
        if folder is not None:
            toolkit["db"] = str(folder)
        toolkit.setdefault("port", DEFAULT_PORT)
        options = McpConfig.from_env(**toolkit, transport="http")
        if token:
            options = dataclasses.replace(options, token=token)
        origins = tuple(_origin(o) for o in cors_origins)
        return cls(options, folder, origins, with_mcp, _max_open(max_open), path, rest)

    def describe(self, names: list[str]) -> str:
        """The line said on stderr at start: what is served, and what the tools may do to it."""
        if self.folder is not None:
            shown = ", ".join(names[:_SHOWN_NAMES]) + (", ..." if len(names) > _SHOWN_NAMES else "")
            kbs = f"{len(names)} knowledge bases: {shown or 'none yet'}; at most {self.max_open} open at once"
            where = f"{display_name(str(self.folder))} ({kbs})"
        else:
            db = self.toolkit.db
            where = display_name(str(db)) if isinstance(db, Path) else db.display
        return f"evigraph {'serve' if self.rest else 'mcp'} on {where}: {self.toolkit.mode()}"

    def urls(self) -> str:
        """Where clients connect, said at start."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        base = f"http://{host}:{self.port}"
        mcp = f"MCP (streamable HTTP) at {base}{self.mcp_path}"
        if self.folder is not None and self.with_mcp:
            mcp += ", choosing a knowledge base by the X-Evigraph-Db header or ?db=NAME"
        if not self.rest:
            return f"serving {mcp}"
        line = f"serving the REST API at {base}/api (OpenAPI: {base}/api/openapi.json), the web UI at {base}/"
        return line + (f", {mcp}" if self.with_mcp else "")


def _mcp_path(text: str | None, *, with_mcp: bool) -> str:
    """--mcp-path, clear of the REST API's and the web UI's own paths."""
    if text is not None and not with_mcp:
        raise ConfigurationError("--mcp-path says where MCP is served, and MCP is not", hint="add --with-mcp")
    return mcp_path_of(text, taken={"api", *(f.name for f in STATIC.iterdir())})


def _max_open(flag: int | None) -> int:
    """--max-open, else EVIGRAPH_SERVE_MAX_OPEN, else MAX_OPEN; at least 1."""
    text = str(flag) if flag is not None else os.environ.get(MAX_OPEN_ENV, "").strip()
    if not text:
        return MAX_OPEN
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        source = "--max-open" if flag is not None else MAX_OPEN_ENV
        raise ConfigurationError(
            f"{source} {text!r} is not a number of knowledge bases of 1 or more",
            hint=f"e.g. {MAX_OPEN} (the default); each open one holds its page cache and indexes in memory",
        )
    return value


def _folder(text: str) -> Path:
    folder = Path(text).expanduser()
    if not folder.is_dir():
        raise ConfigurationError(
            f"--db-dir {display_name(text)} is not a folder",
            hint="name the folder holding the knowledge base files (NAME.db)",
        )
    return folder.resolve()


def _origin(text: str) -> str:
    """`text` as browsers send it in Origin: scheme, host and port, nothing else (no path, no *)."""
    parts = urlsplit(text.strip())
    try:
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError:
        parts = parts._replace(netloc="")
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.path not in ("", "/") or parts.query:
        raise ConfigurationError(
            f"--cors-origin {display_name(text)} is not an origin",
            hint="give the scheme, host and port a page is served from, e.g. http://localhost:5173 (no path, no *)",
        )
    return f"{parts.scheme}://{parts.netloc.lower()}"
