"""How the store code both backends share reads: a function from a query and its parameters to
rows, each a dict by column name. The embedded backend passes its transaction's `rows`, the
FalkorDB one its connection's `read_sync` (or the primary's, where a read must see the latest
write); the queries the shared code sends are written for both dialects."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Rows = Callable[[str, dict[str, Any]], list[dict[str, Any]]]
