"""Code ingest on the knowledge base: `kb.ingest_code`, and passages linked to the code they name.

The algorithm lives in `evigraph.ingest.code`; this wires it to the store under the write gate,
so a code ingest and a document ingest never interleave their writes.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from evigraph.errors import ConfigurationError
from evigraph.kb.core import KnowledgeBaseCore
from evigraph.store.base import GraphStore

if TYPE_CHECKING:
    from evigraph.ingest.code.run import CodeIngestReport
    from evigraph.ingest.files_root import FilesRoot

DEFAULT_MAX_FILE_KB = 1024
"""Source files larger than this are skipped and reported: generated code, minified bundles and
vendored blobs are rarely what an agent asks about, and parsing them costs the most."""


class CodeOps(KnowledgeBaseCore):
    """The code half of `KnowledgeBase`."""

    async def ingest_code(
        self,
        paths: Sequence[str | os.PathLike[str]] | str | os.PathLike[str],
        *,
        calls: bool = True,
        max_file_kb: int | None = DEFAULT_MAX_FILE_KB,
        root: FilesRoot | None = None,
    ) -> CodeIngestReport:
        """Ingest the structure of the source files under `paths`: repositories, modules, classes and
        functions (signatures, docstrings, line ranges; never bodies) and their CONTAINS, IMPORTS,
        INHERITS and CALLS edges.

        Files whose content is unchanged are skipped, a changed file's nodes are replaced, a file
        gone from a folder named is removed. Files that fail to parse or are over `max_file_kb`
        are reported in the result and keep what was stored for them. `calls=False` skips call
        resolution. With `root`, paths are under an agent's files root and read through it.
        Python needs nothing more; TypeScript, JavaScript, Go, Rust and Java need
        `pip install 'evigraph[code]'`.
        """
        from evigraph.ingest.code.run import ingest_code

        if isinstance(paths, str | os.PathLike):
            paths = [paths]
        named = [os.fspath(p) for p in paths]
        if not named:
            raise ConfigurationError("no paths were given", hint="name the folders or files of a repository")
        if max_file_kb is not None and max_file_kb <= 0:
            raise ConfigurationError(f"max_file_kb must be positive, not {max_file_kb}", hint="e.g. max_file_kb=1024")
        if root is None and self._store is None and not self._exists() and not any(os.path.exists(p) for p in named):
            from evigraph.ingest.code.run import CodeFileIssue, CodeIngestReport

            # Every path was wrong: a knowledge base that does not exist yet is not created empty.
            return CodeIngestReport(failed=[CodeFileIssue(path=p, error=f"{p} does not exist") for p in named])
        store = await self._open(for_write=True)
        async with self._gate.exclusive():
            return await ingest_code(
                store,
                named,
                calls=calls,
                max_file_bytes=None if max_file_kb is None else max_file_kb * 1024,
                files_root=root,
            )


async def link_documents_to_code(store: GraphStore, keys: Sequence[str]) -> list[tuple[str, str]]:
    """Link the passages of documents just written to the code symbols they name (none without code);
    the (passage id, symbol id) pairs linked."""
    if not keys:
        return []
    graph = await store.code_graph()
    if not graph.symbols:
        return []
    from evigraph.ingest.code.mentions import link_passages

    return await link_passages(store, graph.symbols, keys)
