"""The manager's own state in its session file: the same keys, written at the same points.

`state_writes_b7b30dd.json` was recorded from the scripted session below by the manager
of commit b7b30dd (its five mixins), before the manager was composed of collaborators:
every `put_states` call, labelled with the step that made it, and every compaction run's
`atomic` block. A value longer than 200 characters is kept as its digest.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from context_graph.importers import load_events
from orchestrator import ContextManager
from orchestrator.persistence.sqlite_store import SQLiteStore
from orchestrator.replay import model_call_points

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "context_graph" / "examples" / "example_session.jsonl"
GOLDEN = Path(__file__).with_name("data") / "state_writes_b7b30dd.json"


def _text(value: Any) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 200 else "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def record_session(path: Path, patch: Callable[[object, str, object], None]) -> list[list[Any]]:
    """Run the scripted session on a session file at `path`; its state writes in order.

    Ingests the bundled example one event at a time, renders at every model call,
    reports usage after every third render, marks a boundary halfway and compacts by
    hand at three quarters, then closes. `patch(SQLiteStore, name, function)` swaps in
    the recording `put_states` and `atomic`.
    """
    writes: list[list[Any]] = []
    step = ["open"]
    put, atomic = SQLiteStore.put_states, SQLiteStore.atomic

    def put_states(self: SQLiteStore, values: Any) -> None:
        writes.append([step[0], {key: _text(value) for key, value in values.items()}])
        put(self, values)

    @contextlib.contextmanager
    def recorded_atomic(self: SQLiteStore) -> Iterator[None]:
        writes.append([step[0], "begin"])
        with atomic(self):
            yield
        writes.append([step[0], "end"])

    patch(SQLiteStore, "put_states", put_states)
    patch(SQLiteStore, "atomic", recorded_atomic)
    events = list(load_events(EXAMPLE))
    points = model_call_points(events)
    manager = ContextManager.open(
        path,
        durable=False,
        format="anthropic",
        budget=9_000,
        profile="coding",
        clock=lambda: 1e9,
        redact_secrets=True,
    )
    renders = 0
    for fed in range(1, len(events) + 1):
        step[0] = f"ingest {fed}"
        manager.ingest([events[fed - 1]])
        if fed == len(events) // 2:
            step[0] = "boundary"
            manager.mark_boundary("half")
        if fed == 3 * len(events) // 4:
            step[0] = "compact"
            anyio.run(manager.compact)
        if fed in points:
            step[0] = f"render {fed}"
            result = manager.render_sync()
            renders += 1
            if renders % 3 == 0:
                step[0] = f"usage {fed}"
                manager.report_usage(result.tokens + 7)
    step[0] = "close"
    manager.close()
    return writes


class TestStateWrites:
    def test_a_scripted_session_writes_what_b7b30dd_wrote(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Every state write of the scripted session has the keys, values and step of b7b30dd's."""
        writes = record_session(tmp_path / "session.db", monkeypatch.setattr)
        assert writes == json.loads(GOLDEN.read_text(encoding="utf-8"))
