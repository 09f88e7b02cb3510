"""The trace-tool phase of bench/tools.py: task and decision tools on a project with N decisions.

Seeds one project deterministically through `Toolkit.call`, as an agent would: per bench question
a session searches its passages, reads the top ones in full (`read_passages`), logs the search as
events, tracks a step, and records five decisions on it spread over the tasks:

    0  answer/<question>    the gold answer, on the two passages read     (a root, superseded later)
    1  answer/<question>    the same conclusion in another task, on one passage
    2  answer/<question>    every third question a rival conclusion (a conflict), else an alias
    3  source/<question>    which passage settles it: a passage and decision 0
    4  followup/<question>  decisions 0 and 3 only

Then it times every trace tool over the seeded project (reads interleaved in rotated order, like
the read phase), the writes, one re-ingest of documents decisions rest on against documents none
rests on (the former flags them needs_review in the ingest's own transaction), and the review
tools on what those re-ingests and the supersedes flagged. Writes go into the knowledge base: with
--db the project is named `bench` unless that project already has tasks, then `bench-<time>`.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from _latency import percentile_ms, rotated

AGENT = "bench-agent"
READS = (
    "get_task",
    "list_events",
    "fetch_event",
    "list_steps",
    "get_decision",
    "list_decisions",
    "list_support_history",
    "search_decisions",
    "list_conflicts",
)
WRITES = ("create_task", "record_event", "set_step", "record_decision", "supersede_decision")
REVIEW = ("continue_decision_review", "list_decisions_for_review", "reaffirm_decision")
ORDER = (*READS, *WRITES, *REVIEW)
PER_QUESTION = 5


def slug(text: str, limit: int = 80) -> str:
    return "-".join(re.findall(r"[a-z0-9]+", text.lower()))[:limit].strip("-") or "question"


@dataclass
class Seeded:
    project: str
    tasks: list[str]
    events: dict[str, int] = field(default_factory=dict)  # task -> its last event number
    decisions: list[str] = field(default_factory=list)
    variant: dict[str, int] = field(default_factory=dict)  # decision -> 0..4 (see the module docstring)
    deps: dict[str, list[str]] = field(default_factory=dict)  # decision -> decisions it rests on
    roots: list[str] = field(default_factory=list)  # variant 0: the ones superseded while timed
    by_document: dict[str, list[str]] = field(default_factory=dict)  # document -> decisions resting on it
    passages: dict[str, Any] = field(default_factory=dict)  # document -> a passage of it read in full
    steps: int = 0


class Timer:
    def __init__(self) -> None:
        self.times: dict[str, list[float]] = {}

    async def call(self, session: Any, name: str, args: dict[str, Any]) -> Any:
        t0 = time.perf_counter()
        result = await session.call(name, args)
        self.times.setdefault(name, []).append(time.perf_counter() - t0)
        return result


async def read_for(session: Any, question: str, limit: int = 3) -> list[Any]:
    """Search the question's passages and read the top ones in full in `session` (untimed)."""
    found = await session.call("search_passages", {"query": question, "mode": "lexical", "limit": 5})
    numbers = [h.n for h in found.hits[:limit]]
    if not numbers:
        return []
    read = await session.call("read_passages", {"passages": numbers})
    return [p for p in read.passages if not p.partial]


def _record(seeded: Seeded, found: Any, k: int, deps: list[str], passages: Sequence[Any]) -> str:
    d: str = found.decision.id
    seeded.decisions.append(d)
    seeded.variant[d] = k
    seeded.deps[d] = deps
    for p in passages:
        seeded.by_document.setdefault(p.source.document_key, []).append(d)
    return d


def decide(
    seeded: Seeded, row: dict[str, Any], qi: int, k: int, passages: Sequence[Any], roots: list[str]
) -> dict[str, Any]:
    """The arguments of decision variant `k` on question `row` (see the module docstring)."""
    question, answers = row["question"], row.get("answers") or ["unknown"]
    key = slug(question)
    p0, p1, p2 = passages[0], passages[min(1, len(passages) - 1)], passages[-1]
    said = f"{p0.source.title} [{p0.n}]: {p0.text[:300]}"
    task = seeded.tasks[(qi + k) % len(seeded.tasks)]
    base: dict[str, Any] = {"task_name": task, "choice_key": f"answer/{key}"}

    def passage(p: Any, note: str | None = None) -> dict[str, Any]:
        return {"kind": "passage", "evidence": p.n, "note": note}

    if k == 0:
        return base | {
            "conclusion": f"The answer to {question!r} is {answers[0]}.",
            "rationale": f"{said}\n{p1.source.title} [{p1.n}] links the second hop.",
            "supports": [passage(p0, "first hop"), passage(p1, "second hop")],
            "assumptions": [f"{p0.source.title} is the entity the question means"],
        }
    if k == 1:
        return base | {
            "conclusion": f"The answer to {question!r} is {answers[0]}.",
            "rationale": f"Checked again in task {task}: {said}",
            "supports": [passage(p0)],
        }
    if k == 2:
        rival = p2.source.title if qi % 3 == 0 else answers[-1]
        return base | {
            "conclusion": f"The answer to {question!r} is {rival}.",
            "rationale": f"{p2.source.title} [{p2.n}]: {p2.text[:300]}",
            "supports": [passage(p2)],
            "open_questions": [f"Does {p2.source.title} name the same {answers[0]}?"],
        }
    decision = {"kind": "decision", "decision_id": roots[0]}
    if k == 3:
        return base | {
            "choice_key": f"source/{key}",
            "conclusion": f"{p0.source.title} is the passage that settles {question!r}.",
            "rationale": f"It names {answers[0]} directly: {said}",
            "supports": [passage(p0), decision],
        }
    return base | {
        "choice_key": f"followup/{key}",
        "conclusion": f"Use {answers[0]} in the final answer and cite {p0.source.title}.",
        "rationale": f"The answer ({roots[0]}) and its source ({roots[1]}) are both decided.",
        "supports": [decision, {"kind": "decision", "decision_id": roots[1]}],
    }


async def seed(tk: Any, rows: Sequence[dict[str, Any]], project: str, n_tasks: int, n_decisions: int) -> Seeded:
    seeded = Seeded(project=project, tasks=[f"task-{t:02d}" for t in range(n_tasks)])
    for t, name in enumerate(seeded.tasks):
        goal = f"Answer the bench questions assigned to {name}, starting with: {rows[t % len(rows)]['question']}"
        await tk.call("create_task", {"task_name": name, "goal": goal})
        seeded.events[name] = 0
    qi = 0
    while len(seeded.decisions) < n_decisions:
        row = rows[qi % len(rows)]
        session = tk.new_session()  # one conversation per question: its own [n]
        passages = await read_for(session, row["question"])
        if passages:
            task = seeded.tasks[qi % len(seeded.tasks)]
            step = f"q{qi:04d}-{slug(row['question'], 40)}"
            await session.call("set_step", {"task_name": task, "name": step, "state": "in_progress", "kind": "read"})
            search = f'{{"tool": "search_passages", "query": {row["question"]!r}}}'
            await session.call("record_event", {"task_name": task, "kind": "tool_call", "payload": search})
            shown = "\n".join(f"[{p.n}] {p.source.title}: {p.text[:200]}" for p in passages)
            await session.call(
                "record_event",
                {"task_name": task, "kind": "tool_result", "payload": shown, "name": "read_passages"},
            )
            seeded.events[task] += 2
            seeded.passages.update((p.source.document_key, p) for p in passages)
            roots: list[str] = []
            for k in range(min(PER_QUESTION, n_decisions - len(seeded.decisions))):
                found = await session.call("record_decision", decide(seeded, row, qi, k, passages, roots))
                used = [] if k == 4 else [passages[0]] if k in (1, 3) else [passages[-1]] if k == 2 else passages[:2]
                d = _record(seeded, found, k, list(roots[:1] if k == 3 else roots[:2] if k == 4 else []), used)
                if k in (0, 3):
                    roots.append(d)
                if k == 0:
                    seeded.roots.append(d)
            result = f"decided {len(roots)} root(s); the answer is {row['answers'][0]}"
            await session.call(
                "set_step", {"task_name": task, "name": step, "state": "completed", "result": result, "kind": "read"}
            )
            seeded.events[task] += 1  # a completed step's result text is recorded as a note event
            seeded.steps += 1
        qi += 1
    return seeded


async def time_reads(tk: Any, timer: Timer, seeded: Seeded, rows: Sequence[dict[str, Any]], calls: int) -> None:
    session = tk.new_session()
    tasks, decisions = seeded.tasks, seeded.decisions
    for task in tasks:  # the real event counts (untimed): fetch_event names existing events only
        seeded.events[task] = (await session.call("get_task", {"task_name": task})).events
    stride = max(1, len(decisions) // max(1, calls))
    for i in range(calls):
        task = tasks[i % len(tasks)]
        decision = decisions[(i * stride + 7) % len(decisions)]
        args: dict[str, dict[str, Any]] = {
            "get_task": {"task_name": task},
            "list_events": {"task_name": task},
            "fetch_event": {"task_name": task, "seq": 1 + (i * 7) % max(1, seeded.events[task])},
            "list_steps": {"task_name": task, "state": "completed"},
            "get_decision": {"decision_id": decision},
            "list_decisions": {"task_name": task},
            "list_support_history": {"decision_id": decision},
            "search_decisions": {"query": rows[(i * 13 + 5) % len(rows)]["question"]},
            "list_conflicts": {},
        }
        for name in rotated(READS, i):
            await timer.call(session, name, args[name])


async def time_writes(tk: Any, timer: Timer, seeded: Seeded, rows: Sequence[dict[str, Any]], calls: int) -> list[str]:
    """Each write tool `calls` times, rotated; returns the superseded decisions."""
    superseded: list[str] = []
    roots = seeded.roots[:: max(1, len(seeded.roots) // max(1, calls))][:calls]
    for i in range(calls):
        session = tk.new_session()
        row = rows[(i * 17 + 3) % len(rows)]
        passages = await read_for(session, row["question"], 2)  # untimed: a decision needs its reading
        task = seeded.tasks[i % len(seeded.tasks)]
        for name in rotated(WRITES, i):
            if name == "create_task":
                await timer.call(session, name, {"task_name": f"timed-{i:03d}", "goal": f"Answer: {row['question']}"})
            elif name == "record_event":
                payload = f"note on {row['question']}: the answer looks like {row['answers'][0]}"
                await timer.call(session, name, {"task_name": task, "kind": "note", "payload": payload})
                seeded.events[task] += 1
            elif name == "set_step":
                await timer.call(session, name, {"task_name": task, "name": f"timed-{i:03d}", "state": "in_progress"})
            elif name == "record_decision" and passages:
                args = decide(seeded, row, 10_000 + i, 0, passages, [])
                _record(seeded, await timer.call(session, name, args), 0, [], passages[:2])
            elif name == "supersede_decision" and passages and i < len(roots):
                p = passages[0]
                args = {
                    "decision_id": roots[i],
                    "conclusion": f"Revised: the answer is {row['answers'][-1]}, per {p.source.title}.",
                    "rationale": f"{p.source.title} [{p.n}]: {p.text[:300]}",
                    "explanation": "A closer reading of the second hop names another entity.",
                    "supports": [{"kind": "passage", "evidence": p.n}],
                }
                new = await timer.call(session, name, args)
                _record(seeded, new, 0, [], [p])
                superseded.append(roots[i])
    return superseded


async def reingest(kb: Any, tk: Any, seeded: Seeded, repeats: int) -> tuple[dict[str, Any], list[Any]]:
    """Re-ingest `repeats` documents decisions rest on and as many that none rests on, alternated.

    Each new text is the document's current passage plus a revision line (musique records are one
    passage each). Returns the timings and, per rested document, its new passage read in full in
    a session (what reaffirm_decision cites).
    """
    probe = tk.new_session()
    rested = sorted(seeded.by_document, key=lambda k: (-len(seeded.by_document[k]), k))[:repeats]
    spare: list[Any] = []
    for row_title in ("river", "film", "war", "city", "born", "album", "president", "university"):
        for hit in (await kb.search_passages(row_title, mode="lexical", limit=20)).hits:
            key = hit.source.document_key
            if key not in seeded.by_document and all(key != s.source.document_key for s in spare):
                spare.append(hit)
    unrested = spare[:repeats]
    times: dict[str, list[float]] = {"rested": [], "unrested": []}
    fresh: list[Any] = []
    for i in range(min(len(rested), len(unrested))):
        for kind in ("rested", "unrested") if i % 2 == 0 else ("unrested", "rested"):
            if kind == "rested":
                read = seeded.passages[rested[i]]
                key, title, text = rested[i], read.source.title, read.text
            else:
                key, title = unrested[i].source.document_key, unrested[i].source.title
                text = (await kb.read_passages([unrested[i].id])).passages[0].text
            marker = f"revision{i}{kind}"
            t0 = time.perf_counter()
            report = await kb.ingest(text=f"{text}\nRevised in the bench run ({marker}).", key=key, title=title)
            times[kind].append(time.perf_counter() - t0)
            if not report.ok:
                raise SystemExit(f"re-ingest of {key} failed: {report.failed[:1]}")
            if kind == "rested":
                new = await probe.call("search_passages", {"query": marker, "mode": "lexical", "limit": 3})
                numbers = [h.n for h in new.hits if h.source.document_key == key][:1]
                if numbers:
                    fresh.extend((await probe.call("read_passages", {"passages": numbers})).passages)
    out: dict[str, Any] = {
        "documents_each": len(times["rested"]),
        "decisions_resting_per_document": [len(seeded.by_document[k]) for k in rested[: len(times["rested"])]],
    }
    for kind, values in times.items():
        out[f"{kind}_p50_ms"] = round(percentile_ms(values, 50), 1) if values else None
        out[f"{kind}_max_ms"] = round(max(values) * 1000, 1) if values else None
    if out["rested_p50_ms"] and out["unrested_p50_ms"]:
        out["rested_x_unrested"] = round(out["rested_p50_ms"] / out["unrested_p50_ms"], 2)
    return out, [probe, fresh]


async def time_review(
    tk: Any, timer: Timer, seeded: Seeded, calls: int, superseded: list[str], reread: list[Any]
) -> dict[str, int]:
    session = reread[0]  # holds the new versions' passages, read in full
    fresh = [p.n for p in reread[1]]
    for _ in range(calls):
        await timer.call(tk, "continue_decision_review", {"limit": 20})
    flagged: list[str] = []
    after: str | None = None
    while True:
        page = await tk.call("list_decisions_for_review", {"after_id": after, "limit": 100})
        flagged += [d.id for d in page.decisions]
        if not page.next_after_id:
            break
        after = page.next_after_id
    for i in range(calls):
        page_args = {"limit": 20} | ({"task_name": seeded.tasks[i % len(seeded.tasks)]} if i % 2 else {})
        await timer.call(tk, "list_decisions_for_review", page_args)
    from evigraph.errors import EvigraphError

    gone, waiting = set(superseded), set(flagged)
    done = refused = 0
    if fresh:
        for d in sorted(flagged, key=lambda d: (seeded.variant.get(d, 9), d)):
            if done >= calls:
                break
            if d not in seeded.variant or any(x in gone or x in waiting for x in seeded.deps.get(d, [])):
                continue
            reaffirm = {"decision_id": d, "evidence_ids": [fresh[done % len(fresh)]]}
            try:
                await timer.call(session, "reaffirm_decision", reaffirm | {"explanation": "Re-read the revised text."})
            except EvigraphError:  # rests on a decision this walk did not know was flagged: not timed
                refused += 1
                continue
            waiting.discard(d)
            done += 1
    return {"needs_review_after_reingest": len(flagged), "reaffirmed": done, "reaffirm_refused": refused}


async def run_traces(
    kb: Any,
    rows: Sequence[dict[str, Any]],
    *,
    decisions: int,
    tasks: int,
    calls: int,
    write_calls: int,
    reingests: int,
) -> dict[str, Any]:
    from evigraph import Toolkit

    project = "bench"
    if (await kb.traces(project, AGENT).list_tasks(limit=1)).tasks:  # a reused --db: keep runs apart
        project = f"bench-{int(time.time())}"
    tk = Toolkit(kb, project=project, agent=AGENT)
    t0 = time.perf_counter()
    seeded = await seed(tk, rows, project, tasks, decisions)
    info: dict[str, Any] = {"project": project, "tasks": tasks, "decisions_seeded": len(seeded.decisions)}
    info |= {"steps_seeded": seeded.steps, "events_seeded": sum(seeded.events.values())}
    info["seed_seconds"] = round(time.perf_counter() - t0, 1)
    timer = Timer()
    t0 = time.perf_counter()
    await time_reads(tk, timer, seeded, rows, calls)
    superseded = await time_writes(tk, timer, seeded, rows, write_calls)
    ingest, reread = await reingest(kb, tk, seeded, reingests)
    info |= await time_review(tk, timer, seeded, write_calls, superseded, reread)
    info["timed_seconds"] = round(time.perf_counter() - t0, 1)
    info["decisions_at_end"] = len(seeded.decisions)
    tools = {
        name: {
            "calls": len(timer.times[name]),
            "p50_ms": round(percentile_ms(timer.times[name], 50), 2),
            "p95_ms": round(percentile_ms(timer.times[name], 95), 2),
        }
        for name in ORDER
        if timer.times.get(name)
    }
    return {"info": info, "tools": tools, "reingest": ingest}
