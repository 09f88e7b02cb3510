"""Fuzzing every tool of a writable toolkit with hostile arguments generated from its JSON Schema.

An agent's arguments come from a model that may be steered by the documents it reads, and
over MCP they are any JSON at all. Every call must end in a result or a `ToolError`: anything
else (an engine `RuntimeError`, a `ValueError`, a result that cannot be encoded as JSON) is
unhandled, and a call that does not return within the timeout is a hang. Arguments follow each
tool's schema from `tool_specs()` most of the time, so calls reach the handlers, with hostile
values inside: lone surrogates, control and bidi characters, huge and negative numbers, path
tricks, evidence numbers that do not exist, Cypher and glob syntax; and, at every level, a
chance of the wrong type, a missing or unknown field, or nested junk. Results are shaped the
way the MCP server shapes them (JSON data and LLM text, both encoded as UTF-8).

Every tool of the registry is offered: `answer` with the tests' replay server as its LLM, the task
and decision tools under a project and an agent.

Prints per-tool counts, writes DIR/fuzz.json (and DIR/fuzz.png with matplotlib). The baseline
in the same run is the harness itself: the same calls, each answered by validation alone
(`model_validate`, no handler), so the time column shows what the tools add.

    python bench/fuzz.py --calls 10000 --out bench/out
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import math
import random
import sys
import tempfile
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from evigraph.errors import ToolError
from evigraph.kb import KnowledgeBase
from evigraph.providers.embedders import Embedder
from evigraph.tools.definitions import ToolSpec
from evigraph.tools.registry import load_tools
from evigraph.tools.results import ToolResult
from evigraph.tools.toolkit import Toolkit

sys.path.insert(0, str(Path(__file__).resolve().parent))
ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # the replay server lives with the tests

from tests.llm.replay_server import ReplayServer, chat_reply  # noqa: E402

# -- the knowledge base -------------------------------------------------------------------------

CORPUS = {
    "acme.md": "# Acme Robotics\n\nAcme Robotics Corp is a company in Oslo. Dr. Ingrid Halvorsen founded "
    "Acme Robotics Corp in 2011 with Lars Berg.\n\n## Products\n\n| Product | Units |\n|---|---|\n"
    "| Lifter | 1,200 |\n| Hawk | 780 |\n\n### Drones\n\nThe Hawk drone was designed by Lars Berg.\n\n"
    "## People\n\nLars Berg works with the Nordic Energy Agency on battery tests.\n",
    "notes/globex.txt": "Globex Company is a rival of Acme Robotics Corp based in Bergen. Prof. Hank Scorpio "
    "runs Globex Company. Globex Company reported revenue of 4.5 million euros in 2023.\n",
    "records.jsonl": '{"id": "rec-1", "title": "Tromsø", "text": "Dr. Ada Lind founded Polar Labs Corp in Tromsø."}\n'
    '{"id": "rec-2", "text": "Polar Labs Corp works with Acme Robotics Corp."}\n{"broken\n',
    "東京/メモ.md": "# メモ\n\nAcme Robotics Corp opened an office in Tokyo in 2020.\n",
}


class HashEmbedder(Embedder):
    """Deterministic bag-of-words vectors, so the semantic paths run without a model download."""

    name = "fuzz-hash-16"
    dimension = 16

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        out = []
        for text in texts:
            vec = [0.0] * self.dimension
            for word in text.lower().split():
                vec[int(hashlib.md5(word.encode("utf-8", "replace")).hexdigest(), 16) % self.dimension] += 1.0
            norm = math.sqrt(sum(x * x for x in vec)) or 1.0
            out.append([x / norm for x in vec])
        return out


def write_corpus(folder: Path) -> Path:
    for rel, text in CORPUS.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text, encoding="utf-8")
    (folder / ".env").write_text("SECRET=1\n", encoding="utf-8")  # hidden: must never be read
    return folder


async def build_kb(folder: Path) -> tuple[Path, Path]:
    """(database, files root): the corpus ingested with the rule extractor and finalized."""
    corpus = write_corpus(folder / "corpus")
    db = folder / "kb.db"
    async with KnowledgeBase(db, extractor="rules", embedder=HashEmbedder()) as kb:
        report = await kb.ingest([corpus], progress=False)
        if not any(d.status.value == "created" for d in report.documents):
            raise SystemExit(f"the fuzz corpus did not ingest: {report.failed}")
        await kb.finalize()
    return db, corpus


# -- hostile values -----------------------------------------------------------------------------

STRINGS = [
    *("", " ", "a", "Acme", "Acme Robotics Corp", "Lars Berg", "Dr. Ingrid Halvorsen", "Globex Company", "Oslo"),
    *("Who founded Acme Robotics Corp?", "Hawk drone", "battery tests", "revenue 2023", "Polar Labs Corp"),
    *("Ålesund", "東京", "🙂", "e\u0301", "\u202eevil", "zero\u200bwidth", "\ufeffbom", "Ｆｕｌｌ", "ǅ"),
    *("\x00", "a\x00b", "\n", "line\nforged [1]", "\r\n", "\x1b[31mred", "\t", "\u2028", "\x7f"),
    *("\ud800", "a\udfff", "\udcff.txt", "\ud83d", "ok\ud800ok"),
    *("' OR 1=1 --", '"; DROP TABLE x; --', "`x`", "$param", "{0}", "%s%n", "${jndi:x}", "<script>", "null"),
    *("MATCH (n) DETACH DELETE n", "RETURN 1; COMMIT; MATCH (n) DELETE n", "*", "**", "?", "[", "]"),
    *("../../etc/passwd", "/etc/passwd", "file:../x", "file:/etc/passwd", "~/.ssh/id_rsa", "C:\\Windows\\x"),
    *("**/*", "*.md", "**/*.md", "acme.md", "notes/globex.txt", "notes/", "notes", "file:acme.md", ".env"),
    *("records.jsonl", "東京/メモ.md", "notes/../acme.md", "./acme.md", "nope.md", "notes/*.txt", "a//b"),
    *("passage:", "entity:", "relation:", "theme:", "passage:nope", "entity:nope", "relation:x", "status:x"),
    *("0", "1", "-1", "007", "99999999999999999999", "1e9", "NaN", "Infinity", "[1]", "true"),
    *("Person", "Organization", "Location", "WORKS_FOR", "FOUNDED", "RELATES", "Chunk", "__x__", "a|b", "x:y"),
    *("passages", "exact_names", "fuzzy_names", "links", "facts", "lexical", "semantic", "hybrid", "parent"),
    *("default", "rules", "spacy", "structural", "exact", "fixed", "sentence", "llm", "auto"),
]
CYPHER = [
    "MATCH (d:Document) RETURN d.key LIMIT 5",
    "MATCH (e:Entity) WHERE e.name = $name RETURN e.id, e.label",
    "MATCH (a:Entity)-[r:RELATES]->(b:Entity) RETURN a.name, r.type, b.name LIMIT 10",
    "MATCH (c:Chunk) RETURN c.id, c.text LIMIT 3",
    "RETURN $a AS a, $b AS b",
    "UNWIND $xs AS x RETURN x",
    "RETURN 1",
    "CREATE (n:Entity {id: 'x'}) RETURN n",
    "MATCH (n) DETACH DELETE n",
    "RETURN 1; RETURN 2",
    "// '\nMATCH (n) RETURN n // '\nLIMIT 3",
    "MATCH (n) RETURN n /* unclosed",
    "RETURN 'unclosed",
    "MATCH (e:Entity) RETURN e.name ORDER BY e.name SKIP 2 LIMIT 2",
    "MATCH p=(a)-[*1..3]->(b) RETURN length(p) LIMIT 5",
]
LABELS = ["Person", "Organization", "Location", "Product", "Gadget", "WORKS_FOR", "FOUNDED", "RIVAL_OF", "Ort-Typ"]
NAMES = ["Acme Robotics Corp", "Lars Berg", "Dr. Ingrid Halvorsen", "Globex Company", "Oslo", "Polar Labs Corp"]
FILES = ["acme.md", "notes/globex.txt", "notes", "**/*.md", "*", "records.jsonl", "東京/メモ.md", "../x", ".env"]
FOCUS = {  # for well-formed calls: one of these field groups, so the handler has work to do
    "ingest": [("text", "document_key"), ("files",), ("files", "plan"), ("text", "document_key", "reextract")],
    "set_ontology": [("entities",), ("relations",), ("entities", "relations")],
}
INTS = [0, 1, 2, 3, 5, 7, 10, 20, 50, 100, 1000, -1, -(2**31), 2**31, 2**63, -(2**63), 10**30, -(10**30)]
FLOATS = [0.0, 0.5, 1.0, 1.5, -0.1, 1e-300, 1e308, -1e308, math.inf, -math.inf, math.nan]
JUNK: list[Any] = [None, True, False, 0, -1, 10**20, 1.5, math.nan, "", "x", [], {}, [None], {"": None}]


def nested_junk(rng: random.Random, depth: int = 0) -> Any:
    """JSON of random shape: the kind of value a confused or hostile client sends."""
    roll = rng.random()
    if depth > 4 or roll < 0.4:
        return rng.choice([*JUNK, rng.choice(STRINGS), rng.choice(INTS)])
    if roll < 0.7:
        return [nested_junk(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    keys = ["a", "id", "n", "\ud800", "", "$x"]
    return {rng.choice(keys): nested_junk(rng, depth + 1) for _ in range(rng.randint(0, 3))}


@dataclass
class Seen:
    """Values earlier results handed out (evidence numbers, ids, names), reused as an agent would."""

    numbers: dict[str, list[int]] = field(default_factory=dict)  # evidence kind -> numbers
    ids: dict[str, list[str]] = field(default_factory=dict)  # evidence kind -> evidence ids
    names: list[str] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    entities: list[tuple[str, str]] = field(default_factory=list)  # (name, label)
    relation_types: list[str] = field(default_factory=lambda: ["RELATED_TO"])

    def harvest(self, data: Any) -> None:
        stack = [data]
        while stack:
            item = stack.pop()
            if isinstance(item, dict):
                self._one(item)
                stack.extend(v for v in item.values() if isinstance(v, dict | list))
            elif isinstance(item, list):
                stack.extend(item[:50])

    def _one(self, item: dict[str, Any]) -> None:
        evidence, n = item.get("evidence_id"), item.get("n")
        if isinstance(evidence, str) and ":" in evidence:
            kind = evidence.split(":", 1)[0]
            _remember(self.ids.setdefault(kind, []), evidence)
            if isinstance(n, int) and n > 0:
                _remember(self.numbers.setdefault(kind, []), n)
        name, label = item.get("name"), item.get("label")
        if isinstance(name, str):
            _remember(self.names, name)
            if isinstance(label, str):
                _remember(self.entities, (name, label))
        if isinstance(label, str):
            _remember(self.labels, label)
        if isinstance(item.get("type"), str) and "patterns" in item:  # a relation type of the ontology
            _remember(self.relation_types, item["type"])
        for key in ("document_key", "document", "key"):
            if isinstance(item.get(key), str):
                _remember(self.ids.setdefault("document", []), item[key])

    def pick_ref(self, rng: random.Random, kind: str) -> int | str | None:
        """An evidence number or id of `kind` handed out earlier, or None."""
        numbers, ids = self.numbers.get(kind, []), self.ids.get(kind, [])
        if numbers and (not ids or rng.random() < 0.5):
            return rng.choice(numbers)
        return rng.choice(ids) if ids else None


def _remember(pool: list[Any], value: Any, cap: int = 300) -> None:
    if value not in pool:
        pool.append(value)
        if len(pool) > cap:
            pool.pop(0)


class ArgumentMaker:
    """Arguments for one tool from its JSON Schema: mostly well-formed, hostile inside, sometimes broken."""

    def __init__(self, rng: random.Random, seen: Seen, mutation: float = 0.08) -> None:
        self.rng = rng
        self.seen = seen
        self.rate = mutation
        self.mutation = mutation

    def arguments(self, spec: ToolSpec) -> Any:
        """Half the calls well-formed (hostile only in their values, so they reach the handler), half broken."""
        roll = self.rng.random()
        if roll < 0.02:
            return nested_junk(self.rng)  # not even an object
        self.mutation = 0.0 if roll < 0.5 else self.rate
        args = self.value(spec.input_schema, spec.input_schema, "", 0)
        if self.mutation == 0.0 and spec.name in FOCUS and isinstance(args, dict):
            props = spec.input_schema.get("properties", {})
            for key in self.rng.choice(FOCUS[spec.name]):  # fields that make the call do something
                for _ in range(5):  # past the schema's null branch
                    if args.get(key) is None:
                        args[key] = self.value(props[key], spec.input_schema, key, 1)
        if self.mutation == 0.0 and isinstance(args, dict) and self.rng.random() < 0.7:
            self._plausible(spec.name, args)
        return args

    def _plausible(self, tool: str, args: dict[str, Any]) -> None:
        """Swap in things that exist (entities, passages, relation types), so deeper code runs."""
        rng, seen = self.rng, self.seen
        typed = [e for e in seen.entities if e[1] != "Unknown"]  # Unknown is reserved, refused as a label
        if tool == "upsert_relations" and typed and isinstance(args.get("relations"), list):
            for rel in args["relations"]:
                if isinstance(rel, dict):
                    for end in ("source", "target"):
                        name, label = rng.choice(typed)
                        rel[end] = {"name": name, "label": label}
                    rel["type"] = rng.choice(seen.relation_types)
                    rel["evidence"] = [r for r in (seen.pick_ref(rng, "passage") for _ in range(2)) if r is not None]
        elif tool == "upsert_entities" and typed and isinstance(args.get("entities"), list):
            for ent in args["entities"]:
                if isinstance(ent, dict):
                    ent["label"] = rng.choice(typed)[1]
        elif tool in ("read_passages", "get_context") and (ref := seen.pick_ref(rng, "passage")) is not None:
            key = "passages" if tool == "read_passages" else "evidence"
            if tool == "read_passages" or isinstance(ref, int):
                args[key] = [ref, *(args.get(key) or [])[:3]]
        elif tool == "navigate_document" and (ref := seen.pick_ref(rng, "passage")) is not None:
            args["passage"] = ref
        elif tool == "explore_relationships":
            ref = seen.pick_ref(rng, "entity") if rng.random() < 0.6 else None
            args["entity"] = ref if ref is not None else rng.choice([*NAMES, *seen.names])

    def value(self, schema: dict[str, Any], root: dict[str, Any], name: str, depth: int) -> Any:
        rng = self.rng
        if depth > 0 and rng.random() < self.mutation:
            return nested_junk(rng)
        if "$ref" in schema:
            ref = schema["$ref"].rsplit("/", 1)[-1]
            return self.value(root["$defs"][ref], root, name, depth + 1)
        if "anyOf" in schema:
            return self.value(rng.choice(schema["anyOf"]), root, name, depth + 1)
        if "const" in schema:
            return schema["const"]
        if "enum" in schema:
            return rng.choice(schema["enum"]) if rng.random() < 0.9 else rng.choice(STRINGS)
        kind = schema.get("type")
        if kind == "object":
            return self._object(schema, root, depth)
        if kind == "array":
            return self._array(schema, root, name, depth)
        if kind == "string":
            return self._string(schema, name)
        if kind == "integer":
            return self._integer(schema, name)
        if kind == "number":
            low, high = schema.get("minimum", -1e6), schema.get("maximum", 1e6)
            return rng.uniform(low, high) if rng.random() < 0.7 else rng.choice(FLOATS)
        if kind == "boolean":
            return rng.random() < 0.5
        if kind == "null":
            return None
        return nested_junk(rng)  # untyped (query parameters): any JSON

    def _object(self, schema: dict[str, Any], root: dict[str, Any], depth: int) -> dict[str, Any]:
        rng = self.rng
        props: dict[str, Any] = schema.get("properties", {})
        required = set(schema.get("required", []))
        out: dict[str, Any] = {}
        broken = self.mutation > 0
        for key, sub in props.items():
            wanted = rng.random() > 0.05 or not broken if key in required else rng.random() < 0.35
            if wanted:
                out[key] = self.value(sub, root, key, depth + 1)
        if broken and rng.random() < 0.05:
            out[rng.choice(["extra", "\ud800", "", "query "])] = nested_junk(rng)
        if schema.get("additionalProperties") is True and rng.random() < 0.7:  # free-form maps (query parameters)
            for _ in range(rng.randint(1, 3)):
                out[rng.choice(["a", "b", "xs", "name", "l", "\ud800", ""])] = self._parameter()
        return out

    def _parameter(self) -> Any:
        rng = self.rng
        choices: list[Any] = [rng.choice(STRINGS), rng.choice(INTS), rng.choice(FLOATS), None, True]
        choices += [[1, "a", None], [[1], [2]], {"k": "v"}, [rng.choice(STRINGS)] * 3, list(range(50))]
        return rng.choice(choices)

    def _array(self, schema: dict[str, Any], root: dict[str, Any], name: str, depth: int) -> list[Any]:
        rng = self.rng
        if "prefixItems" in schema:
            return [self.value(s, root, name, depth + 1) for s in schema["prefixItems"]]
        low = schema.get("minItems", 0)
        high = schema.get("maxItems", low + 5)
        roll = rng.random()
        if roll < 0.03:
            count = high + 1
        elif roll < 0.05:
            count = max(0, low - 1)
        else:
            count = rng.randint(low, min(high, low + 4))
        item = schema.get("items", {})
        return [self.value(item, root, name, depth + 1) for _ in range(count)]

    def _string(self, schema: dict[str, Any], name: str) -> str:
        rng = self.rng
        low, high = int(schema.get("minLength", 0)), int(schema.get("maxLength", 2000))
        roll = rng.random()
        if roll < 0.03:
            return "x" * (high + 1)  # one over the bound
        if roll < 0.05:
            return ("Acme Robotics Corp founded by Lars Berg. " * (min(high, 50_000) // 40 + 1))[: min(high, 50_000)]
        if name == "query" and rng.random() < 0.5:
            return rng.choice(CYPHER)
        pool = self._pool(name)
        text = rng.choice(pool) if pool and rng.random() < 0.6 else rng.choice(STRINGS)
        if rng.random() < 0.1:
            text = text + rng.choice(STRINGS)
        return text if len(text) >= low or rng.random() < 0.3 else text + "x" * low

    def _pool(self, name: str) -> list[str]:
        seen = self.seen
        if name in ("label", "labels", "patterns", "properties"):
            return [*LABELS, *seen.labels]
        if name in ("relation_types", "type"):
            return [*LABELS, *seen.relation_types]
        if name in ("name", "aliases", "entity", "question", "query", "fact", "source", "target", "answer"):
            return [*NAMES, *seen.names, *seen.ids.get("entity", [])]
        if name in ("files", "match"):
            return FILES
        if name in ("chunker", "extractor", "resolver"):
            return ["default", "rules", "structural", "exact", "sentence", "fixed", "spacy", "nope"]
        if name in ("passages", "passage", "evidence"):
            return seen.ids.get("passage", [])
        return [x for ids in seen.ids.values() for x in ids]

    def _integer(self, schema: dict[str, Any], name: str) -> int:
        rng = self.rng
        low, high = schema.get("minimum"), schema.get("maximum")
        roll = rng.random()
        kind = "entity" if name == "entity" else "passage"
        numbers = [*self.seen.numbers.get(kind, []), *(n for ns in self.seen.numbers.values() for n in ns[:3])]
        if name in ("evidence", "passages", "passage", "entity") and numbers and roll < 0.7:
            return rng.choice(numbers) + rng.choice([0, 0, 0, 0, 1, 10_000])
        if roll < 0.2:
            return rng.choice(INTS)
        if roll < 0.3 and low is not None:
            return int(low) - 1
        if roll < 0.4 and high is not None:
            return int(high) + 1
        lo = int(low) if low is not None else 0
        hi = int(high) if high is not None else lo + 50
        return rng.randint(lo, min(hi, lo + 1000))


# -- running ------------------------------------------------------------------------------------


@dataclass
class Failure:
    tool: str
    kind: str  # "unhandled" or "hang"
    error: str
    where: str
    arguments: str


@dataclass
class ToolCounts:
    calls: int = 0
    results: int = 0
    tool_errors: int = 0
    unhandled: int = 0
    hangs: int = 0
    seconds: float = 0.0


@dataclass
class FuzzReport:
    calls: int = 0
    seconds: float = 0.0
    tools: dict[str, ToolCounts] = field(default_factory=dict)
    failures: list[Failure] = field(default_factory=list)

    @property
    def unhandled(self) -> int:
        return sum(t.unhandled for t in self.tools.values())

    @property
    def hangs(self) -> int:
        return sum(t.hangs for t in self.tools.values())


def _shown(args: Any, limit: int = 400) -> str:
    text = repr(args)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} chars)"


def _where(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    own = [f for f in frames if "evigraph" in f.filename] or frames
    last = own[-1] if own else None
    return f"{Path(last.filename).name}:{last.lineno} {last.name}" if last else "?"


def shape(result: ToolResult) -> None:
    """What the MCP server does with a result: JSON data and LLM text, both sent as UTF-8."""
    json.dumps(result.model_dump(mode="json"), ensure_ascii=False).encode("utf-8")
    result.to_llm_text().encode("utf-8")


async def fuzz(toolkit: Toolkit, calls: int, *, seed: int = 0, timeout: float = 20.0, sessions: int = 4) -> FuzzReport:
    """`calls` calls round-robin over every tool the toolkit offers, through several sessions."""
    rng = random.Random(seed)
    seen = Seen()
    maker = ArgumentMaker(rng, seen)
    specs = toolkit.tool_specs()
    pool = [toolkit, *(toolkit.new_session() for _ in range(sessions - 1))]
    report = FuzzReport(tools={s.name: ToolCounts() for s in specs})
    start = time.perf_counter()
    for i in range(calls):
        spec = specs[i % len(specs)]
        session = pool[rng.randrange(len(pool))]
        args = maker.arguments(spec)
        counts = report.tools[spec.name]
        counts.calls += 1
        t0 = time.perf_counter()
        try:
            result = await asyncio.wait_for(session.call(spec.name, args), timeout)
            shape(result)
            seen.harvest(result.model_dump(mode="json"))
            counts.results += 1
        except ToolError as exc:
            try:
                str(exc).encode("utf-8")  # the message goes back over the wire too
                counts.tool_errors += 1
            except UnicodeEncodeError as bad:
                counts.unhandled += 1
                report.failures.append(Failure(spec.name, "unhandled", repr(bad), _where(bad), _shown(args)))
        except TimeoutError:
            counts.hangs += 1
            report.failures.append(Failure(spec.name, "hang", f"no answer in {timeout} s", "", _shown(args)))
        except Exception as exc:
            counts.unhandled += 1
            error = f"{type(exc).__name__}: {str(exc)[:300]}"
            report.failures.append(Failure(spec.name, "unhandled", error, _where(exc), _shown(args)))
        counts.seconds += time.perf_counter() - t0
        report.calls += 1
    report.seconds = time.perf_counter() - start
    return report


def validation_floor(toolkit: Toolkit, calls: int, seed: int) -> float:
    """Seconds for the same argument stream answered by validation alone: the harness's own cost."""
    rng = random.Random(seed)
    maker = ArgumentMaker(rng, Seen())
    specs = toolkit.tool_specs()
    tools = load_tools()
    t0 = time.perf_counter()
    for i in range(calls):
        spec = specs[i % len(specs)]
        rng.randrange(4)  # the session pick, so the stream matches `fuzz`
        args = maker.arguments(spec)
        with contextlib.suppress(ValidationError):
            tools[spec.name].input.model_validate(args)
    return time.perf_counter() - t0


# -- the bench ----------------------------------------------------------------------------------


def print_table(report: FuzzReport, floor_seconds: float) -> None:
    print(f"{'tool':24} {'calls':>6} {'results':>8} {'ToolError':>10} {'unhandled':>10} {'hangs':>6} {'ms/call':>8}")
    for name, c in report.tools.items():
        per = 1000 * c.seconds / c.calls if c.calls else 0.0
        print(f"{name:24} {c.calls:6} {c.results:8} {c.tool_errors:10} {c.unhandled:10} {c.hangs:6} {per:8.1f}")
    print(
        f"{'total':24} {report.calls:6} {sum(c.results for c in report.tools.values()):8} "
        f"{sum(c.tool_errors for c in report.tools.values()):10} {report.unhandled:10} {report.hangs:6}"
    )
    print(f"time {report.seconds:.1f} s; baseline (validation only, same arguments) {floor_seconds:.2f} s")
    seen: set[tuple[str, str, str]] = set()
    for f in report.failures:
        key = (f.tool, f.error.split(":")[0], f.where)
        if key not in seen:
            seen.add(key)
            print(f"  {f.kind} {f.tool} at {f.where}: {f.error}\n    args {f.arguments}")


def plot(report: FuzzReport, path: Path) -> None:
    from _common import pyplot

    plt = pyplot()
    if plt is None:
        return
    names = list(report.tools)
    fig, ax = plt.subplots(figsize=(10, 6))
    left = [0] * len(names)
    for label, values in (
        ("result", [report.tools[n].results for n in names]),
        ("ToolError", [report.tools[n].tool_errors for n in names]),
        ("unhandled", [report.tools[n].unhandled for n in names]),
        ("hang", [report.tools[n].hangs for n in names]),
    ):
        ax.barh(names, values, left=left, label=label)
        left = [a + b for a, b in zip(left, values, strict=True)]
    ax.invert_yaxis()
    ax.set_xlabel("calls")
    ax.set_title(f"fuzz: {report.calls} calls, {report.unhandled} unhandled, {report.hangs} hangs")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


async def main_async(calls: int, seed: int, timeout: float, out: Path) -> FuzzReport:
    from evigraph.providers.llms import OpenAICompatibleLLM

    # Every tool is offered: an LLM for `answer` (the tests' replay server, answering each question
    # with a cited sentence), and a project, an agent and rejections for the task and decision tools.
    with ReplayServer(answer=lambda request: chat_reply("It is stated there [1].")) as server:
        llm = OpenAICompatibleLLM("stand-in", base_url=server.url, api_key="sk-fuzz", timeout=60)
        async with llm:
            return await fuzz_all(calls, seed, timeout, out, llm)


async def fuzz_all(calls: int, seed: int, timeout: float, out: Path, llm: Any) -> FuzzReport:
    with tempfile.TemporaryDirectory() as tmp:
        db, corpus = await build_kb(Path(tmp))
        async with KnowledgeBase(db, extractor="rules", embedder=HashEmbedder(), llm=llm) as kb:
            toolkit = Toolkit(kb, read_only=False, files_root=corpus, project="fuzz", agent="fuzzer", allow_reject=True)
            missing = sorted(set(load_tools()) - {s.name for s in toolkit.tool_specs()})
            if missing:
                raise SystemExit(f"the toolkit does not offer {missing}; every tool must be fuzzed")
            floor = validation_floor(toolkit, calls, seed)
            report = await fuzz(toolkit, calls, seed=seed, timeout=timeout)
    print_table(report, floor)
    out.mkdir(parents=True, exist_ok=True)
    data = {
        "calls": report.calls,
        "seconds": round(report.seconds, 1),
        "baseline_validation_seconds": round(floor, 2),
        "unhandled": report.unhandled,
        "hangs": report.hangs,
        "seed": seed,
        "timeout_s": timeout,
        "tools": {n: vars(c) for n, c in report.tools.items()},
        "failures": [vars(f) for f in report.failures[:200]],
    }
    (out / "fuzz.json").write_text(json.dumps(data, indent=2, ensure_ascii=True), encoding="utf-8")
    plot(report, out / "fuzz.png")
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=20.0, help="seconds after which a call counts as a hang")
    parser.add_argument("--out", type=Path, default=Path("bench/out"))
    args = parser.parse_args()
    report = asyncio.run(main_async(args.calls, args.seed, args.timeout, args.out))
    sys.exit(1 if report.unhandled or report.hangs else 0)


if __name__ == "__main__":
    main()
