"""`ingest_code`: an agent indexes a repository's structure under the files root.

A write tool, offered only with a files root: paths are confined to it exactly as `ingest` and
`preview_files` confine theirs (`FilesRoot`), and files are read through it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evigraph.display import display_name, display_text
from evigraph.evidence.pack import Section
from evigraph.ingest.code.run import CodeIngestReport
from evigraph.tools.definitions import ToolGroup
from evigraph.tools.inputs import IngestCodeInput
from evigraph.tools.results import ToolResult

if TYPE_CHECKING:
    from evigraph.tools.toolkit import Toolkit


TOOLS = ToolGroup()


class IngestCodeResult(CodeIngestReport, ToolResult):
    """What `ingest_code` did, as the knowledge base reports it."""

    def header(self) -> str:
        return (
            f"repositories: {', '.join(self.repos) or 'none'}; files: {self.files} found, {self.parsed} parsed, "
            f"{self.unchanged} unchanged, {self.removed} removed, {len(self.failed)} failed, "
            f"{len(self.too_large)} too large; nodes +{self.nodes_added} -{self.nodes_removed}, "
            f"edges +{self.edges_added} -{self.edges_removed}"
            + (f"; {self.links_text()}" if self.passages_linked else "")
        )

    def sections(self) -> list[Section]:
        failed = [f"{display_name(f.path)}: {display_text(f.error)}" for f in self.failed]
        large = [f"{display_name(f.path)}: {display_text(f.error)}" for f in self.too_large]
        return [Section("Failed", failed), Section("Too large", large)]


@TOOLS.tool(
    "ingest_code",
    IngestCodeInput,
    "Index the STRUCTURE of source code under the files root: Repo, Module, Class and Function nodes "
    "(signature, docstring, path, line_start, line_end; never bodies) joined by CONTAINS, IMPORTS, INHERITS "
    "and CALLS. Python always; TypeScript/JavaScript, Go, Rust and Java with evigraph[code]. Unchanged files "
    "are skipped, deleted ones removed. Then answer structural questions with one Cypher query (get_ontology shows the "
    "tables) and read a body only at path:line_start-line_end.",
    write=True,
    destructive=True,
    idempotent=True,
    offered=lambda offer: offer.files_root,
)
async def ingest_code(tk: Toolkit, args: IngestCodeInput) -> IngestCodeResult:
    assert tk.files_root is not None
    report = await tk.kb.ingest_code(args.paths, calls=args.calls, max_file_kb=args.max_file_kb, root=tk.files_root)
    result = IngestCodeResult.model_validate(report.model_dump())
    if result.failed and not result.parsed and not result.unchanged:
        result.hint = "nothing was ingested: check the paths (relative to the files root) and the errors"
    return result
