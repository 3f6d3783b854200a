"""The workers of `test_interleavings.py`: real writers, in threads and in processes.

A worker runs a plan of operations (`Op`) the test drew for it, over several small
sessions at once, through the public API only (`ContextManager.open`, `ingest`,
`render_sync`, `refresh`, `compact`). Each user turn it ingests names the worker, the
session and its number (`w3:s1:7`), so the log says who wrote what, in which order.
This module is imported by the worker processes too (spawned: nothing is inherited).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio

from context_graph.errors import StoreConflictError, StoreLockedError
from context_graph.render import Renderer
from context_graph.testing import WordCounter
from orchestrator import ContextManager
from orchestrator.persistence import open_store
from orchestrator.policy import Policy

CLOCK = lambda: 1_700_000_000.0  # noqa: E731  (a fixed clock: the audit log compares)
#: A render's budget: a few tool turns overflow it, so renders compact.
BUDGET = 400
_OUTPUT = " ".join(f"row{i} ok" for i in range(60))


@dataclass(frozen=True, slots=True)
class Op:
    """One step of a worker's plan: `kind` on the session at `session` (an index)."""

    session: int
    kind: str
    """`turn` (a user turn), `tool` (a user turn, a call and its output), `render`,
    `refresh`, or `compact`."""


@dataclass(slots=True)
class Report:
    """What one worker did: the turns that landed per session, in order, and what failed."""

    landed: dict[int, list[str]] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    """Anything a caller should not have seen (a render that raised, say)."""
    refused: int = 0
    """Opens of a SQLite session refused because another writer holds it."""
    views: dict[int, str] = field(default_factory=dict)
    """The digest of each session's view after the last refresh (`view_digest`)."""


def open_manager(location: str) -> ContextManager:
    """A worker's manager on one session (the default pipeline, word counts)."""
    return ContextManager.open(
        location, counter=WordCounter(), durable=False, clock=CLOCK, policy=Policy()
    )


def view_digest(raw: Any, working: Any) -> str:
    """What a worker holds and would send: node ids, the audit log, the rendered payload."""
    payload = Renderer(format="openai").render(working).payload
    audit = [entry.model_dump(mode="json") for entry in working.audit()]
    text = json.dumps([[n.id for n in raw], audit, payload], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def fresh_digest(location: str) -> str:
    """The digest of what a fresh reader of the log holds."""
    with contextlib.closing(open_store(location, counter=WordCounter(), read_only=True)) as store:
        session = store.restore(clock=CLOCK)
    return view_digest(session.raw, session.working)


def events(name: str, tool: bool) -> list[dict[str, Any]]:
    """A user turn named `name`, and with `tool` a call and its output after it."""
    batch: list[dict[str, Any]] = [{"type": "user", "content": name}]
    if tool:
        call = {"id": f"call-{name}", "name": "bash", "arguments": {"cmd": "pytest"}}
        batch.append({"type": "assistant", "content": "checking", "tool_calls": [call]})
        batch.append({"type": "tool_result", "call_id": f"call-{name}", "content": _OUTPUT})
    return batch


def ingest(manager: ContextManager, batch: list[dict[str, Any]]) -> None:
    """The worker's loop of docs/deployment.md: on a conflict, refresh and retry."""
    while True:
        try:
            manager.ingest(batch)
            return
        except StoreConflictError:
            manager.refresh()


def step(manager: ContextManager, op: Op, name: str, report: Report) -> None:
    """Run one op on `manager`; a turn that lands is recorded under its session."""
    if op.kind in ("turn", "tool"):
        ingest(manager, events(name, op.kind == "tool"))
        report.landed.setdefault(op.session, []).append(name)
    elif op.kind == "refresh":
        manager.refresh()
    elif op.kind == "render":
        result = manager.render_sync(budget=BUDGET)
        if result.tokens > BUDGET:
            report.failures.append(f"{name}: a render of {result.tokens} > {BUDGET}")
    elif op.kind == "compact":
        try:
            anyio.run(manager.compact)
        except StoreConflictError:  # `compact()` says when the store refused its run
            manager.refresh()


def run_plan(
    worker: str,
    locations: Sequence[str],
    plan: Sequence[Op],
    wait: Callable[[], object],
) -> Report:
    """A worker with its own manager per session (PostgreSQL): run `plan`, then the views.

    After the plan it waits (`wait`, a barrier every writer passes) until every writer is
    done, refreshes each session and records its view's digest.
    """
    report = Report()
    counts = [0] * len(locations)
    with _managers(locations) as managers:
        for op in plan:
            counts[op.session] += 1
            name = f"{worker}:s{op.session}:{counts[op.session]}"
            try:
                step(managers[op.session], op, name, report)
            except Exception as exc:  # the test reports it: nothing may reach a caller
                report.failures.append(f"{name} {op.kind}: {exc!r}")
        wait()
        for index, manager in enumerate(managers):
            manager.refresh()
            report.views[index] = view_digest(manager.raw, manager.working)
    return report


def try_sqlite(worker: str, locations: Sequence[str], attempts: int) -> Report:
    """A SQLite writer in a process of its own while another process holds the files.

    Each open is refused by design (one writer per file); when an open is granted (the
    holder let go), the worker writes one turn, as any writer would.
    """
    report = Report()
    for attempt in range(attempts):
        index = attempt % len(locations)
        try:
            manager = open_manager(locations[index])
        except StoreLockedError:
            report.refused += 1
            continue
        name = f"{worker}:s{index}:{len(report.landed.get(index, [])) + 1}"
        try:
            ingest(manager, events(name, tool=False))
            report.landed.setdefault(index, []).append(name)
        finally:
            manager.close()
    return report


@contextlib.contextmanager
def _managers(locations: Sequence[str]) -> Iterator[list[ContextManager]]:
    managers: list[ContextManager] = []
    try:
        for location in locations:
            managers.append(open_manager(location))
        yield managers
    finally:
        for manager in managers:
            manager.close()
