"""Keeping secrets (API keys, tokens, URL passwords) out of everything a person or agent reads.

A key reaches text in more ways than the code that holds it: a server echoes a rejected key in
its error body or headers, a URL carries `api-key=` in its query, an HTTP library logs the URL
and the response headers at DEBUG. So masking is done where text leaves (error messages, our
log lines, tool results) and, for the HTTP libraries we do not control, by a logging filter on
their loggers. One module, so the embedders, the LLM clients and the MCP server mask alike.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable
from urllib.parse import quote

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
    return _CREDENTIAL.sub(_sub, text)


def mask_secrets(text: str, secrets: tuple[str, ...] = ()) -> str:
    """`text` with API keys, tokens, passwords and the given secret values replaced by `***`."""
    return _BROAD.sub(_sub, _mask_known(text, secrets))


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
