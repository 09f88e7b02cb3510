"""Stores: the `GraphStore` contract, where a knowledge base lives, and `connect` to open one.

Engines are imported only when a store is built, so importing this package stays cheap.
"""

from __future__ import annotations

from evigraph.store.base import GraphStore
from evigraph.store.location import DEFAULT_DB, SCHEMES, StoreLocation, resolve_db_path
from evigraph.store.opening import connect, embedded_files, knowledge_bases

__all__ = [
    "DEFAULT_DB",
    "SCHEMES",
    "GraphStore",
    "StoreLocation",
    "connect",
    "embedded_files",
    "knowledge_bases",
    "resolve_db_path",
]
