"""Re-ingest per file: unchanged files skipped, changed ones replaced, deleted ones removed, and the
edges between them kept right; several repositories side by side, imports resolving across them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evigraph import KnowledgeBase

CORE = '''"""Core helpers."""


class Base:
    def close(self) -> None:
        """Release what is held."""


def backoff(attempt: int) -> float:
    """Seconds to wait before retrying."""
    return 2.0**attempt
'''
API = """from pkg.core import Base, backoff


class Client(Base):
    def fetch(self) -> float:
        self.close()
        return backoff(3)
"""
EXTRA = """def helper() -> None:
    pass
"""


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


async def graph(kb: KnowledgeBase, cypher: str) -> set[tuple[Any, ...]]:
    assert kb.store is not None
    return {tuple(r.values()) for r in await kb.store.cypher_query(cypher, limit=500)}


CALLS = "MATCH (f:Function)-[:CALLS]->(g:Function) RETURN f.qualname, g.qualname"


async def test_unchanged_skipped_changed_replaced_deleted_removed(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    write(repo, {"pkg/__init__.py": "", "pkg/core.py": CORE, "pkg/api.py": API, "pkg/extra.py": EXTRA})
    async with KnowledgeBase(tmp_path / "kb.db") as kb:
        first = await kb.ingest_code([repo])
        assert (first.parsed, first.unchanged, first.removed) == (4, 0, 0)
        assert await graph(kb, CALLS) == {("Client.fetch", "Base.close"), ("Client.fetch", "backoff")}

        again = await kb.ingest_code([repo])
        assert (again.parsed, again.unchanged, again.nodes_added, again.edges_added, again.edges_removed) == (
            0, 4, 0, 0, 0,
        )  # fmt: skip

        # core changes (its nodes are replaced), extra goes, a new module comes
        write(repo, {"pkg/core.py": CORE.replace("Seconds to wait", "How long to wait"), "pkg/new.py": EXTRA})
        (repo / "pkg" / "extra.py").unlink()
        third = await kb.ingest_code([repo])
        assert (third.parsed, third.unchanged, third.removed) == (2, 2, 1)
        assert await graph(kb, "MATCH (m:Module) RETURN m.name") == {
            ("pkg",),
            ("pkg.core",),
            ("pkg.api",),
            ("pkg.new",),
        }
        assert await graph(kb, "MATCH (f:Function {name: 'backoff'}) RETURN f.docstring") == {
            ("How long to wait before retrying.",)
        }
        # the unchanged caller's edges into the replaced module are found again
        assert await graph(kb, CALLS) == {("Client.fetch", "Base.close"), ("Client.fetch", "backoff")}
        assert await graph(kb, "MATCH (a:Class)-[:INHERITS]->(b:Class) RETURN a.name, b.name") == {("Client", "Base")}
        assert await graph(kb, "MATCH (f:Function {name: 'helper'}) RETURN f.path") == {("pkg/new.py",)}

        # a method removed from the changed module takes the call to it along
        write(repo, {"pkg/core.py": CORE.replace("    def close(self) -> None:\n", "    def shut(self) -> None:\n")})
        fourth = await kb.ingest_code([repo / "pkg"])
        assert (fourth.parsed, fourth.removed) == (1, 0)
        assert await graph(kb, CALLS) == {("Client.fetch", "backoff")}


async def test_a_folder_ingested_alone_deletes_only_under_itself(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    write(repo, {"a/one.py": EXTRA, "b/two.py": EXTRA})
    (repo / ".git").mkdir()  # the repository root, above both folders
    async with KnowledgeBase(tmp_path / "kb.db") as kb:
        await kb.ingest_code([repo])
        (repo / "b" / "two.py").unlink()
        report = await kb.ingest_code([repo / "a"])
        assert (report.repos, report.unchanged, report.removed) == (["repo"], 1, 0)
        assert await graph(kb, "MATCH (m:Module) RETURN m.path") == {("a/one.py",), ("b/two.py",)}
        assert (await kb.ingest_code([repo])).removed == 1


async def test_repositories_keep_their_own_nodes_and_imports_cross_between_them(tmp_path: Path) -> None:
    write(tmp_path / "lib", {"shared/__init__.py": "", "shared/core.py": CORE})
    write(tmp_path / "app", {"app/__init__.py": "", "app/api.py": API.replace("pkg.core", "shared.core")})
    write(tmp_path / "other" / "lib", {"shared/__init__.py": ""})  # a second folder named lib
    async with KnowledgeBase(tmp_path / "kb.db") as kb:
        report = await kb.ingest_code([tmp_path / "lib", tmp_path / "app"])
        assert sorted(report.repos) == ["app", "lib"]
        assert await graph(
            kb,
            """MATCH (r1:Repo)-[:CONTAINS]->(a:Module)-[:IMPORTS]->(b:Module)<-[:CONTAINS]-(r2:Repo)
               WHERE r1.id <> r2.id RETURN r1.name, a.name, r2.name, b.name""",
        ) == {("app", "app.api", "lib", "shared.core")}
        assert await graph(kb, CALLS) == {("Client.fetch", "Base.close"), ("Client.fetch", "backoff")}
        other = await kb.ingest_code([tmp_path / "other" / "lib"])
        [name] = other.repos
        assert name.startswith("lib-") and len(await graph(kb, "MATCH (r:Repo) RETURN r.id")) == 3


async def test_no_calls_leaves_calls_unresolved_until_a_run_with_them(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    write(repo, {"pkg/__init__.py": "", "pkg/core.py": CORE, "pkg/api.py": API})
    async with KnowledgeBase(tmp_path / "kb.db") as kb:
        await kb.ingest_code([repo], calls=False)
        assert await graph(kb, CALLS) == set()
        assert await graph(kb, "MATCH (a:Class)-[:INHERITS]->(b:Class) RETURN a.name, b.name") == {("Client", "Base")}
        assert kb.store is not None
        rows = await kb.store.cypher_query("MATCH (f:Function {name: 'fetch'}) RETURN f.calls AS calls")
        assert rows == [{"calls": ["self.close", "backoff"]}]
        await kb.ingest_code([repo])
        assert await graph(kb, CALLS) == {("Client.fetch", "Base.close"), ("Client.fetch", "backoff")}
