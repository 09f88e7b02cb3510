"""What every HTTP model client shares: when to retry and how long to wait, reading error bodies,
telling local servers from hosted APIs.

The embedders call blocking endpoints and the LLM clients async ones, so this module decides
(how long, whether at all) and each client sleeps its own way. httpx is not imported here, so
the registries stay light.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlparse

LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "0.0.0.0"})
RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})
"""Statuses that say "try again later": timeouts, conflicts, rate limits, overloaded servers."""


def is_local_url(url: str) -> bool:
    """Whether `url` names this machine, where servers usually need no key."""
    return (urlparse(url).hostname or "") in LOCAL_HOSTS


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with jitter, and the server's own `Retry-After` when it sends one.

    Jitter spreads the retries of many concurrent callers that were refused together, so they
    do not come back together. A server asking for a longer wait than `max_wait` is not retried
    early (it would refuse again): the caller gives up and says how long the server asked for.
    """

    retries: int = 3
    """Attempts after the first."""
    backoff: float = 0.5
    """Seconds before the first retry; doubles each time, up to `max_wait`."""
    max_wait: float = 60.0

    def delay(self, attempt: int, retry_after: float | None = None) -> float | None:
        """Seconds to wait after failed attempt `attempt` (0-based); None: give up now."""
        if attempt >= self.retries:
            return None
        if retry_after is not None:
            if retry_after > self.max_wait:
                return None
            return retry_after + random.uniform(0, min(1.0, 0.1 * retry_after + 0.05))
        base = min(self.max_wait, self.backoff * 2.0**attempt)
        return base / 2 + random.uniform(0, base / 2)


def retry_after(headers: Mapping[str, str]) -> float | None:
    """The wait a response asks for, in seconds: `retry-after-ms` (OpenAI), or `Retry-After` as
    seconds or an HTTP date; None when it asks for none or says it unreadably."""
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = (headers.get("retry-after") or "").strip()
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError, IndexError):
        return None


def error_message(text: str, limit: int = 300) -> str:
    """The endpoint's own message (`{"error": {"message": ...}}`) or the start of the body, on one line."""
    return " ".join(_error_text(text)[:limit].split()) or "(empty body)"


def json_object(text: str) -> dict[str, Any] | None:
    """The JSON object a body holds, else None (an HTML error page, a proxy's plain text, a list),
    which each caller reports in its own words."""
    try:
        body = json.loads(text)
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


def error_code(text: str) -> str:
    """The machine-readable `error.code` (or `type`) of an error body, "" when there is none."""
    body = json_object(text)
    error = body.get("error") if body is not None else None
    if isinstance(error, dict):
        return str(error.get("code") or error.get("type") or "")
    return ""


def _error_text(text: str) -> str:
    try:
        body = json.loads(text)
    except ValueError:
        return text.strip()
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
        if isinstance(error, str):
            return error
        if body.get("detail"):
            return str(body["detail"])
        if body.get("message"):
            return str(body["message"])
    return text.strip()
