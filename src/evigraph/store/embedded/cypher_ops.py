"""The free-form Cypher section of `EmbeddedStore`, kept apart so the store module stays a wiring."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from evigraph.errors import EngineError
from evigraph.store.core.schema_names import CYPHER_GUIDE
from evigraph.store.cypher.params import check_params
from evigraph.store.cypher.rows import QueryRows, Slots
from evigraph.store.embedded import cypher_run
from evigraph.store.embedded.cypher_guard import guard
from evigraph.store.embedded.cypher_worker import CypherWorkers, memory_allowance_mb
from evigraph.store.embedded.executor import Executor


class CypherOps:
    path: Path
    engine: str
    read_only: bool
    _cypher_slots: Slots
    _cypher_workers: CypherWorkers | None
    _cypher_budget: cypher_run.MemoryBudget | None

    @property
    def executor(self) -> Executor:
        raise NotImplementedError  # EmbeddedStore's

    async def cypher_query(
        self, cypher: str, params: dict[str, Any] | None = None, limit: int = 100, timeout_ms: int = 10_000
    ) -> list[dict[str, Any]]:
        """Agent-written Cypher: guarded (cypher_guard), plan-checked, bounded (cypher_run); on a file
        open read-only, in a worker process that a crash, a stall or a memory bomb ends alone
        (cypher_worker). A file open for writing cannot be read by another process meanwhile, so
        there it runs here, behind the guard's bounds, interrupted if this process grows by more than
        a worker may (`cypher_run.MemoryWatch`)."""
        guarded = guard(cypher, check_params(params), row_cap=limit)
        executor = self.executor
        workers = self._workers() if self.read_only and os.name == "posix" else None  # pipes and select
        watch = None if workers is not None else self._cypher_memory().watch()  # refused once spent

        def work() -> QueryRows:
            with self._cypher_slots:
                if workers is not None:
                    return workers.run(guarded, limit, timeout_ms)
                return executor.read_sync(lambda tx: cypher_run.run(tx, guarded, limit), timeout_ms, watch)

        try:
            return await asyncio.to_thread(work)
        except EngineError as exc:
            if watch is not None and watch.fired:
                raise watch.failure() from exc
            raise cypher_run.query_failure(exc) from exc

    def _cypher_memory(self) -> cypher_run.MemoryBudget:
        if self._cypher_budget is None:
            self._cypher_budget = cypher_run.MemoryBudget(memory_allowance_mb() << 20)
        return self._cypher_budget

    def _workers(self) -> CypherWorkers:
        if self._cypher_workers is None:
            self._cypher_workers = CypherWorkers(self.path, self.engine)
        return self._cypher_workers

    def _close_workers(self) -> None:
        if self._cypher_workers is not None:
            workers, self._cypher_workers = self._cypher_workers, None
            workers.close()

    def cypher_guide(self) -> str:
        return CYPHER_GUIDE
