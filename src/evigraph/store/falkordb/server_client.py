"""Talking to a local FalkorDB server: an authenticated client that tries once, and the questions
`LocalServer` asks (modules, limits, persistence, who holds a port), kept apart from its lifecycle.

The Redis client is imported only when a server is started or asked about.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from evigraph.errors import ConfigurationError
from evigraph.extras import install_hint
from evigraph.store.falkordb import local_servers

if TYPE_CHECKING:
    import redis


def redis_module() -> Any:
    try:
        import redis
    except ImportError as exc:
        raise ConfigurationError(
            "talking to a FalkorDB server needs the falkordb client, which is not installed",
            hint=install_hint("falkordb"),
        ) from exc
    return redis


def connect(host: str, port: int, password: str | None, timeout: float = 2.0) -> redis.Redis:
    """A client that tries once: a silent listener costs `timeout`, not redis-py's retries."""
    module = redis_module()
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    client: redis.Redis = module.Redis(
        host=host,
        port=port,
        password=password,
        socket_timeout=timeout,
        socket_connect_timeout=timeout,
        decode_responses=True,
        retry=Retry(NoBackoff(), 0),
    )
    return client


def command(client: redis.Redis, *args: str) -> Any:
    """A raw command (redis-py leaves `execute_command` untyped)."""
    run: Any = client.execute_command
    return run(*args)


def module_names(client: redis.Redis) -> set[str]:
    names: set[str] = set()
    for entry in command(client, "MODULE", "LIST"):
        fields = entry if isinstance(entry, dict) else dict(zip(entry[::2], entry[1::2], strict=False))
        name = fields.get(b"name", fields.get("name", b""))
        names.add(name.decode() if isinstance(name, bytes) else str(name))
    return names


def limits(client: redis.Redis) -> dict[str, int]:
    """The FalkorDB module's per-query limits, as the server reports them (`GRAPH.CONFIG GET`)."""
    out: dict[str, int] = {}
    for name in ("QUERY_MEM_CAPACITY", "TIMEOUT_DEFAULT"):
        try:
            reply = command(client, "GRAPH.CONFIG", "GET", name)
        except Exception:  # an older module without the setting
            continue
        if isinstance(reply, list) and len(reply) == 2 and not isinstance(reply[0], list):
            out[name] = int(reply[1])
    return out


def has_save_points(client: redis.Redis, default: bool) -> bool:
    try:
        save = client.config_get("save").get("save", "")
    except Exception:  # CONFIG may be renamed or refused: the pidfile says how it was started
        return default
    return bool(str(save).strip())


def describe_listener(host: str, port: int) -> tuple[str, Path | None] | None:
    """Which Redis server answers on the port, if one does, and its folder when known: this user's
    registry names its evigraph servers (which ask for a password); a server without a password
    says its folder itself."""
    known = local_servers.registered_dir(port)
    if known is not None:
        return f"with its data in {known}", known
    try:
        redis = redis_module()
    except ConfigurationError:
        return None
    client = connect(host, port, None, timeout=0.5)
    try:
        folder = client.config_get("dir").get("dir")
    except redis.AuthenticationError:
        return "that asks for a password", None
    except redis.ResponseError as exc:
        return ("that asks for a password", None) if "auth" in str(exc).lower() else None
    except redis.RedisError:
        return None
    finally:
        client.close()
    if isinstance(folder, bytes):
        folder = folder.decode(errors="replace")
    return (f"with its data in {folder}", Path(folder)) if folder else None
