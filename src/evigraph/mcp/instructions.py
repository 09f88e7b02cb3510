"""The guide an MCP client receives at start, written for the tools this server actually offers."""

from __future__ import annotations

from collections.abc import Collection

from evigraph.code_records import CODE_LABELS, CODE_QUERIES, SYMBOL_KINDS, SYMBOL_LINK_TYPES, link_shape


def build_instructions(tools: Collection[str]) -> str:
    """Steps that need a tool the server does not offer are left out, so the guide never lies."""
    lines = [
        "evigraph is a knowledge base of documents, passages, entities and relations. "
        "Every item a tool returns has an evidence number [n].",
    ]
    steps: list[str] = []
    if "retrieve" in tools:
        steps.append(
            "Call retrieve first with the user's question word for word (all paths unless you know it needs "
            "only a few)."
        )
        steps.append(
            "If that did not answer it, call retrieve again with exact names from what you found, or with "
            "expand_hops 2-3 (up to 5) for multi-hop questions."
        )
    if about := [t for t in ("status", "get_ontology") if t in tools]:
        steps.append(f"For questions about the knowledge base itself, use {' or '.join(about)}.")
    if "cypher_query" in tools:
        steps.append(code_step(tools))
    if "answer" in tools:
        steps.append(
            "answer drafts a cited answer with the knowledge base's LLM; use it only when verified is true, "
            "and cite its evidence numbers as your own."
        )
    steps.append("Answer briefly and cite every claim with its [n].")
    if "check_citations" in tools:
        steps.append("Always run check_citations on your draft before replying, and fix what it reports.")
    if "render_citations" in tools:
        steps.append("To list your sources under the answer, pass the draft to render_citations.")
    lines += [f"{i}. {step}" for i, step in enumerate(steps, start=1)]
    write_steps = []
    if "set_ontology" in tools:
        if "preview_files" in tools:
            write_steps.append(
                "ask the user for their ontology, or design one from preview_files (page with next_offset until it "
                "is null), with a specific relation type for each kind of link; declare it with set_ontology "
                "before the first ingest"
            )
        else:
            write_steps.append("ask the user for their ontology and declare it with set_ontology before ingesting")
    if "ingest" in tools:
        write_steps.append(
            "ingest text or files (at most 50 files per call) and check each result's pruned report: to keep what "
            "the ontology dropped, extend it with set_ontology and ingest again with reextract=true"
            if "set_ontology" in tools
            else "ingest text or files (at most 50 files per call)"
        )
    if "finalize" in tools:
        write_steps.append("call finalize once, after the last ingest of a batch")
    if "ingest_code" in tools:
        write_steps.append(
            "for source code, ingest_code its folders, then answer what calls, imports or inherits from what with "
            "one cypher_query (get_ontology shows the code tables) and read a body only at path:line_start-line_end"
        )
    if write_steps:
        lines.append("To build the knowledge base: " + "; then ".join(write_steps) + ".")
    return "\n".join(lines)


def code_step(tools: Collection[str]) -> str:
    """When to answer a question about source code with Cypher, the code graph's names read from
    its schema (`code_records.CODE_LINKS`), so the guide cannot name a table that is not there."""
    labels = ", ".join(f"(:{label})" for label in CODE_LABELS)
    edges = ", ".join(link_shape(kind) for kind in SYMBOL_LINK_TYPES)
    questions = ", ".join(question for question, _ in CODE_QUERIES)
    counted = " (status counts the files held)" if "status" in tools else ""
    step = (
        f"For source code{counted}: structural questions ({questions}) take one "
        f"cypher_query over {labels} joined by {edges}, e.g. {CODE_QUERIES[0][1]}; read a body only at "
        "path:line_start-line_end."
    )
    if "search_entities" in tools:
        step += f" search_entities finds a symbol by name (labels {', '.join(SYMBOL_KINDS)})."
    if "explore_relationships" in tools:
        step += " explore_relationships on a symbol's id or [n] shows its neighbours and the passages naming it."
    return step
