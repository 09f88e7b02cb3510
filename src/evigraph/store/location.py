"""Where a knowledge base lives: a file path, or a URL naming the engine that holds it.

`--db`, `$EVIGRAPH_DB` and `KnowledgeBase(db)` all take one string, so the engine is chosen by
what that string says, not by a separate switch per surface:

- `notes.db`, `~/kb/notes.db`: an embedded database file (the engine chosen by `engine=`);
- `kuzu:///abs/notes.db`: an embedded Kuzu file (three slashes: the path is absolute);
- `ladybug:///abs/notes.db`: an embedded LadybugDB file;
- `falkordb://[user:pass@]host:port/graph[?replicas=host2:port2,host3:port3]`: a graph on a
  FalkorDB server; reads go to the replicas named, writes to the primary.

Parsing never touches the disk; opening (`evigraph.store.connect`) does.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from urllib.parse import unquote, urlsplit

from evigraph.errors import ConfigurationError

DEFAULT_DB = "evigraph.db"
DB_ENV = "EVIGRAPH_DB"

EMBEDDED_SCHEMES = ("kuzu", "ladybug")
"""URL schemes of embedded engines; each is also the `engine` name the embedded store takes."""
SERVER_SCHEMES = ("falkordb",)
SCHEMES = (*EMBEDDED_SCHEMES, *SERVER_SCHEMES)
FALKORDB_PORT = 6379
FALKORDB_GRAPH = "evigraph"

_URL = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://")
_TENANT = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
"""Lower case only, as a file system that ignores case would give Acme and acme one file."""
_CREDENTIALS = re.compile(r"(?<=://)([^/@:]*):[^/@]*@")
_FORMS = "a file path, kuzu:///abs/path.db, ladybug:///abs/path.db or falkordb://host:port/graph"


@dataclass(frozen=True)
class StoreLocation:
    """A parsed `--db` value.

    `path` is set for embedded locations (a file on this machine: the MCP server's forwarding
    socket and "does it exist" checks need it) and None for server ones. `engine` is the
    engine the URL names, None for a plain path (the caller's `engine=` decides).
    """

    scheme: str
    """"path" for a plain path, else the URL scheme (lower case)."""
    display: str
    """How to show it to a user: the path, or the URL without its password."""
    path: Path | None = None
    engine: str | None = None
    host: str | None = None
    port: int | None = None
    graph: str | None = None
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    replicas: tuple[tuple[str, int], ...] = ()
    """Servers replicating the primary (`?replicas=h:p,...`): every read goes to them in turn."""

    @property
    def embedded(self) -> bool:
        return self.path is not None

    def for_tenant(self, tenant: str) -> StoreLocation:
        """Tenant `tenant`'s own knowledge base beside this one: the graph `<graph>__<tenant>` on the
        same server, or the file `<stem>__<tenant><suffix>` in the same folder; one rule, so every
        process serving a tenant finds the same one, and no tenant's name can reach another's."""
        if not _TENANT.fullmatch(tenant) or "__" in tenant:  # '__' joins base and tenant: shop + a__b == shop__a + b
            raise ConfigurationError(
                f"{tenant!r} is not a tenant name",
                hint="use lower-case letters, digits, '-' and '_' (up to 64, starting with a letter or digit, "
                "never '__'), e.g. acme",
            )
        if self.path is not None:
            path = self.path.with_name(f"{self.path.stem}__{tenant}{self.path.suffix}")
            return replace(self, path=path, display=self.display.replace(str(self.path), str(path)))
        graph = f"{self.graph}__{tenant}"
        display = self.display.replace(f":{self.port}/{self.graph}", f":{self.port}/{graph}", 1)
        return replace(self, graph=graph, display=display)

    @classmethod
    def parse(cls, db: str | os.PathLike[str] | StoreLocation | None = None) -> StoreLocation:
        """`db` if given, else `$EVIGRAPH_DB`, else `./evigraph.db`, read as a path or a URL."""
        if isinstance(db, StoreLocation):
            return db
        text = os.fspath(db) if db is not None else os.environ.get(DB_ENV) or DEFAULT_DB
        found = _URL.match(text)
        if found is None:
            path = Path(text).expanduser()
            return cls(scheme="path", display=str(path), path=path)
        scheme = found["scheme"].lower()
        rest = text[found.end() :]
        if scheme in EMBEDDED_SCHEMES:
            return cls._embedded(scheme, rest, text)
        if scheme == "falkordb":
            return cls._falkordb(text)
        raise ConfigurationError(
            f"unknown database scheme {scheme}:// in {_masked(text)!r}",
            hint=f"use {_FORMS}; supported schemes: {', '.join(s + '://' for s in SCHEMES)}",
        )

    @classmethod
    def _embedded(cls, scheme: str, rest: str, text: str) -> StoreLocation:
        if not rest.startswith("/"):
            raise ConfigurationError(
                f"{_masked(text)!r} names no absolute path: {scheme}:// URLs take one after a third slash",
                hint=f"write {scheme}:///abs/path.db (three slashes), or pass a relative path as is: {rest or 'kb.db'}",
            )
        path = Path(unquote(rest))
        if path == Path("/"):
            raise ConfigurationError(f"{text!r} names no database file", hint=f"e.g. {scheme}:///home/me/kb.db")
        return cls(scheme=scheme, display=f"{scheme}://{path}", path=path, engine=scheme)

    @classmethod
    def _falkordb(cls, text: str) -> StoreLocation:
        parts = urlsplit(text)
        try:
            port = parts.port or FALKORDB_PORT
        except ValueError as exc:
            raise ConfigurationError(
                f"{_masked(text)!r} has an invalid port", hint="e.g. falkordb://localhost:6379/kb"
            ) from exc
        if not parts.hostname:
            raise ConfigurationError(f"{_masked(text)!r} names no host", hint="e.g. falkordb://localhost:6379/kb")
        graph = unquote(parts.path.strip("/")) or FALKORDB_GRAPH
        user = unquote(parts.username or "")
        credentials = f"{user}:***@" if parts.password else (f"{user}@" if user else "")
        replicas = _replicas(text, parts.query)
        shown = f"?replicas={','.join(f'{h}:{p}' for h, p in replicas)}" if replicas else ""
        return cls(
            replicas=replicas,
            scheme="falkordb",
            display=f"falkordb://{credentials}{parts.hostname}:{port}/{graph}{shown}",
            host=parts.hostname,
            port=port,
            graph=graph,
            username=user or None,
            password=unquote(parts.password) if parts.password else None,
        )

    def engine_for(self, engine: str = "auto") -> str:
        """The embedded engine to open this location with: the one its URL names, else `engine`."""
        if self.engine is None or engine in ("auto", self.engine):
            return self.engine or engine
        raise ConfigurationError(
            f"{self.display} names the {self.engine} engine, but engine={engine!r} was asked for",
            hint=f"drop the engine option, or write the location as {engine}://{self.path}",
        )

    @property
    def server(self) -> bool:
        """A location on a graph server (FalkorDB), not a file on this machine."""
        return self.scheme in SERVER_SCHEMES

    def embedded_path(self) -> Path:
        """The database file; raises for a location no embedded engine can open."""
        if self.path is None:
            raise self.unsupported()
        return self.path

    def unsupported(self) -> ConfigurationError:
        """Why a server location will not do where a database file is needed."""
        return ConfigurationError(
            f"{self.display} is a graph on a FalkorDB server, not a database file",
            hint="pass a file path (--db ./evigraph.db) or kuzu:///abs/path.db here",
        )

    def __str__(self) -> str:
        return self.display


def _masked(text: str) -> str:
    """`text` with any password in it replaced: errors are shown and logged."""
    return _CREDENTIALS.sub(r"\1:***@", text)


def resolve_db_path(db: str | os.PathLike[str] | None = None) -> Path:
    """The embedded database file `db` names (a path or an embedded URL), else `$EVIGRAPH_DB`, else `./evigraph.db`."""
    return StoreLocation.parse(db).embedded_path()


def _replicas(text: str, query: str) -> tuple[tuple[str, int], ...]:
    """`replicas=h:p,h:p` from a URL's query; any other option is refused, not ignored."""
    from urllib.parse import parse_qs

    options = parse_qs(query, keep_blank_values=True)
    unknown = sorted(set(options) - {"replicas"})
    if unknown:
        raise ConfigurationError(
            f"{_masked(text)!r} has an unknown option {unknown[0]!r}",
            hint="the only option is replicas=host:port,host:port",
        )
    out = []
    for item in ",".join(options.get("replicas", [])).split(","):
        if not item.strip():
            continue
        host, sep, port = item.strip().rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ConfigurationError(
                f"replica {item.strip()!r} in {_masked(text)!r} is not host:port",
                hint="e.g. falkordb://primary:6379/kb?replicas=replica1:6380,replica2:6381",
            )
        out.append((host, int(port)))
    return tuple(out)
