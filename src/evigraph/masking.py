"""Keeping secrets (API keys, tokens, URL passwords) out of everything a person or agent reads.

A key reaches text in more ways than the code that holds it: a server echoes a rejected key in
its error body or headers, a URL carries `api-key=` in its query, an HTTP library logs the URL
and the response headers at DEBUG. So masking is done where text leaves (error messages, our
log lines, tool results) and, for the HTTP libraries we do not control, by a logging filter on
their loggers. One module, so the embedders, the LLM clients and the MCP server mask alike.

A URL's `user:password@` travels further than the URL: the HTTP client sends it as
`Authorization: Basic base64(user:password)`, which a server or proxy may echo, and a message may
quote the password alone. So `url_secrets` turns every URL that carries credentials into the
values to mask (the password, `user:password`, their base64 forms), and a `Basic` header value
is masked by its shape wherever it appears.
"""

from __future__ import annotations

import base64
import binascii
import logging
import os
import re
import threading
from collections.abc import Iterable
from urllib.parse import quote, unquote, urlsplit

MASK = "***"

_CREDENTIAL = re.compile(
    r"(?i)(bearer\s+|api[_-]?key[\"'=:\s]+|x-api-key[\"'=:\s]+)([^\s\"',;&]{4,})"
    r"|\b(sk-[A-Za-z0-9_\-]{8,})\b"
)
"""Credentials recognisable by their shape: a bearer token, an `api-key=` value, an OpenAI `sk-` key."""

_BROAD = re.compile(
    r"(?i)(bearer\s+|api[_-]?key[\"'=:\s]+|token[\"'=:\s]+|password[\"'=:\s]+|secret[\"'=:\s]+)([^\s\"',;]{4,})"
    r"|\b(sk-[A-Za-z0-9_\-]{8,})\b"
)
"""Also `token: ...`, `password=...`: for agent-facing text, where over-masking costs nothing."""

_URL_PASSWORD = re.compile(r"(//[^/\s:@]+):[^/\s@]+@")

_BASIC = re.compile(r"(?i)\b(basic\s+)([A-Za-z0-9+/]{4,}={0,2})(?![A-Za-z0-9+/=])")
"""An HTTP Basic credential (`Authorization: Basic dXNlcjpwYXNz`); masked only when its value
decodes to `user:password`, so prose such as "basic information" is left alone."""

_URL_USERINFO = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s/?#@]*@[^\s]*")


def url_secrets(*urls: str | None) -> tuple[str, ...]:
    """The secrets the credentials in `urls` (`scheme://user:password@host...`) give away."""
    found: list[str] = []
    for text in urls:
        for match in _URL_USERINFO.finditer(text or ""):
            try:
                parts = urlsplit(match.group(0))
                user, password = parts.username, parts.password
            except ValueError:
                continue
            if password:
                found += credential_secrets(user or "", password)
                found += credential_secrets(unquote(user or ""), unquote(password))
    return tuple(dict.fromkeys(found))


def credential_secrets(user: str | None, password: str | None) -> tuple[str, ...]:
    """What a user and password give away: the password, `user:password`, and the base64 an HTTP
    client sends them as (`Authorization: Basic ...`), in UTF-8 and in Latin-1."""
    if not password:
        return ()
    pair = f"{user or ''}:{password}"
    found = [password, pair]
    for codec in ("utf-8", "latin-1"):
        try:
            found.append(base64.b64encode(pair.encode(codec)).decode())
        except UnicodeEncodeError:
            continue
    return tuple(dict.fromkeys(s for s in found if len(s) >= 4))


SECRET_ENV = ("EVIGRAPH_MCP_TOKEN", "OPENAI_API_KEY", "EVIGRAPH_EMBED_API_KEY", "EVIGRAPH_LLM_API_KEY")
"""Variables holding a key or token."""
URL_ENV = ("EVIGRAPH_LLM_BASE_URL", "EVIGRAPH_EMBED_BASE_URL", "EVIGRAPH_DB")
"""Variables holding a URL that may carry `user:password@`."""


def env_secrets() -> tuple[str, ...]:
    """The secret values this process's environment holds: keys, tokens and URL credentials."""
    # The embedder's key lives in the variable EVIGRAPH_EMBED_API_KEY_ENV names, when it names one.
    names = (*SECRET_ENV, os.environ.get("EVIGRAPH_EMBED_API_KEY_ENV", ""))
    keys = [v for k in names if k and (v := os.environ.get(k))]
    return (*keys, *url_secrets(*(os.environ.get(k) for k in URL_ENV)))


def _basic(match: re.Match[str]) -> str:
    try:
        decoded = base64.b64decode(match.group(2), validate=True)
    except (binascii.Error, ValueError):
        return match.group(0)
    return match.group(1) + MASK if b":" in decoded else match.group(0)


def _mask_known(text: str, secrets: Iterable[str]) -> str:
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, MASK)
            encoded = quote(secret, safe="")
            if encoded != secret:  # the form a key takes inside a URL
                text = text.replace(encoded, MASK)
    return text


def _sub(match: re.Match[str]) -> str:
    return (match.group(1) or "") + MASK if match.group(1) else MASK


def mask_credentials(text: str, secrets: Iterable[str] = ()) -> str:
    """`text` with the given secret values, credential-shaped strings and URL passwords masked.

    Narrow on purpose: provider error messages keep words like "token limit" readable.
    """
    text = _mask_known(text, secrets)
    text = _URL_PASSWORD.sub(rf"\1:{MASK}@", text)
    text = _BASIC.sub(_basic, text)
    return _CREDENTIAL.sub(_sub, text)


def mask_secrets(text: str, secrets: tuple[str, ...] = ()) -> str:
    """`text` with API keys, tokens, passwords, URL and Basic credentials and the given secret
    values replaced by `***`."""
    text = _URL_PASSWORD.sub(rf"\1:{MASK}@", _mask_known(text, secrets))
    return _BROAD.sub(_sub, _BASIC.sub(_basic, text))


class Secret:
    """A value that prints as `***`: in a repr, `vars()`, a debugger or a traceback's locals."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __bool__(self) -> bool:
        return bool(self._value)

    def __repr__(self) -> str:
        return f"Secret({MASK!r})"

    __str__ = __repr__


# -- logs of the HTTP libraries ---------------------------------------------------------------

HTTP_LOGGERS = (
    "httpx",
    "httpcore.connection",
    "httpcore.http11",
    "httpcore.http2",
    "httpcore.proxy",
    "httpcore.socks",
)
"""httpx logs each URL at INFO; httpcore logs response headers at DEBUG. A logger filter applies
only to records made by that very logger, so each is named."""

_SECRETS: set[str] = set()
_LOCK = threading.Lock()


class _MaskingFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        secrets = tuple(_SECRETS)
        if not secrets:
            return True
        try:
            message = record.getMessage()
        except Exception:  # a malformed record is the logging module's to report
            return True
        masked = _mask_known(message, secrets)
        if masked != message:
            record.msg, record.args = masked, ()
        return True


_FILTER = _MaskingFilter()


def protect_logs(*secrets: str) -> None:
    """Mask `secrets` in the records of the HTTP libraries' loggers, from now on in this process.

    Called by every client that sends a key, before its first request.
    """
    with _LOCK:
        _SECRETS.update(s for s in secrets if s and len(s) >= 4)
        for name in HTTP_LOGGERS:
            logger = logging.getLogger(name)
            if _FILTER not in logger.filters:
                logger.addFilter(_FILTER)
