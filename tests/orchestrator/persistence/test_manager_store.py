"""`ContextManager.open`: a session file that a restarted process resumes exactly."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import anyio
import pytest

from context_graph.errors import StoreCorruptError, StoreError, StoreLockedError
from context_graph.graph.events import AgentEvent
from context_graph.importers import load_events
from context_graph.testing import graph_snapshot
from orchestrator import ContextManager
from orchestrator.persistence.sqlite.store import SQLiteStore
from orchestrator.policy import Policy
from orchestrator.replay import model_call_points
from tests.orchestrator.policy_keywords import make_manager, open_manager

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "context_graph" / "examples" / "example_session.jsonl"
BUDGET = 12_000
TRACES = ROOT.parent / "shared" / "traces"
# Real sessions whose renders under a tight budget drop units and (with the default
# pipeline) compact: OpenHands twice and Claude Code.
RESUME_TRACES = [
    "openhands_claude35_swebench_verified/llm_completions/astropy__astropy-12907/"
    "litellm_proxy__claude-3-5-sonnet-20241022-1733339462.430701.json",
    "openhands_claude35_swebench_verified/llm_completions/astropy__astropy-7166/"
    "litellm_proxy__claude-3-5-sonnet-20241022-1733343945.511007.json",
    "claude_code/moredip_session-share/0ccf1a04-1b4c-43b6-8aa5-79e41db43a68.jsonl",
]


@pytest.fixture(scope="module", name="events")
def fixture_events() -> list[AgentEvent]:
    return list(load_events(EXAMPLE))


def _options() -> dict[str, Any]:
    return {"format": "anthropic", "budget": BUDGET, "profile": "coding", "clock": lambda: 1e9}


def _stored_state(path: Path) -> dict[str, Any]:
    """The manager's state as the session file keeps it (read without locking the file)."""
    with SQLiteStore.open(path, read_only=True) as store:
        return store.state()


def _pristine(manager: ContextManager) -> int:
    return len(manager.raw) - len(manager.raw.derived())


def _feed(manager: ContextManager, events: list[AgentEvent], start: int, stop: int) -> list[Any]:
    """Ingest events[start:stop] one by one; render at each model call; the payloads."""
    points = model_call_points(events)
    payloads = []
    for fed in range(start + 1, stop + 1):
        manager.ingest([events[fed - 1]])
        if fed in points:
            payloads.append(manager.render_sync().payload)
    return payloads


class TestResume:
    def test_a_restarted_process_continues_exactly(
        self, tmp_path: Path, events: list[AgentEvent]
    ) -> None:
        """Stop halfway, reopen, go on: the same requests as a manager never stopped."""
        half = len(events) // 2
        path = tmp_path / "session.db"
        reference = make_manager(**_options())
        expected = _feed(reference, events, 0, len(events))

        first = open_manager(path, durable=False, **_options())
        before = _feed(first, events, 0, half)
        first.report_usage(first.stats().last_render_tokens or 1)
        audit = first.working.audit()
        assert audit, "the first half compacts at this budget"
        first.close()
        stored = _stored_state(path)

        resumed = open_manager(path, durable=False, **_options())
        resumed.close()
        # Closing saves every key whose value differs from the one loaded, so an
        # unchanged file says the resumed state (triggers, guards, counters, calibration,
        # ...) is the first process's.
        assert _stored_state(path) == stored
        second = open_manager(path, durable=False, **_options())
        assert graph_snapshot(second.raw) == graph_snapshot(first.raw)
        assert second.working.audit() == audit
        assert second.working.view.transcript() == first.working.view.transcript()
        assert second.stats().proposals_applied == first.stats().proposals_applied
        for node_id in second.working.view.current_ids():
            assert second.expand(node_id) == first.expand(node_id)
        reference_calibrated = make_manager(**_options())
        _feed(reference_calibrated, events, 0, half)
        reference_calibrated.report_usage(reference_calibrated.stats().last_render_tokens or 1)
        after = _feed(second, events, half, len(events))
        rest = _feed(reference_calibrated, events, half, len(events))
        second.close()
        assert before == expected[: len(before)]
        assert after == rest

    @pytest.mark.parametrize("pipeline", ["default", "none"])
    @pytest.mark.parametrize("trace", RESUME_TRACES, ids=lambda name: name.split("/")[2][:24])
    def test_reopened_before_every_render_renders_the_same_requests(
        self, tmp_path: Path, trace: str, pipeline: str
    ) -> None:
        """Closed and reopened before each render, every request equals a never-stopped one."""
        if not (TRACES / trace).exists():
            pytest.skip("shared traces not present")
        events = list(load_events(TRACES / trace))
        probe = ContextManager(policy=Policy(pipeline=[]))
        probe.ingest(events)
        options: dict[str, Any] = {
            "format": "openai",
            "budget": int(probe.render_sync().tokens * 0.35),
            "clock": lambda: 1e9,
        }
        if pipeline == "none":
            options["pipeline"] = []
        points = sorted(model_call_points(events))
        reference = make_manager(**options)
        path = tmp_path / "session.db"
        manager = open_manager(path, durable=False, **options)
        fed = 0
        expected, got, sent, rendered = [], [], [], [0]
        for point in points:
            reference.ingest(events[fed:point])
            manager.ingest(events[fed:point])
            fed = point
            manager.close()
            sent.append(_stored_state(path)["sent"])
            manager = open_manager(path, durable=False, **options)
            expected.append(reference.render_sync())
            got.append(manager.render_sync())
            rendered.append(_pristine(manager))
        manager.close()
        assert [r.payload for r in got] == [r.payload for r in expected]
        assert [r.dropped for r in got] == [r.dropped for r in expected]
        # What was sent is the pristine nodes the previous request carried.
        assert sent == [{"nodes": count} for count in rendered[:-1]]
        assert reference.stats().proposals_applied == manager.stats().proposals_applied
        if pipeline == "none":
            assert any(_stored_state(path)["renderers"].values())  # type: ignore[union-attr]

    def test_a_version_1_session_opens_and_is_upgraded(self, tmp_path: Path) -> None:
        """A file of session schema 1 (no `sent`, no `renderers`) opens and is marked 2."""
        path = tmp_path / "old.db"
        manager = ContextManager.open(path, durable=False, policy=Policy())
        manager.add_user("hello")
        manager.close()
        with sqlite3.connect(path) as connection:
            connection.execute("DELETE FROM state WHERE key IN ('sent', 'renderers')")
            connection.execute("PRAGMA user_version = 1")
        again = ContextManager.open(path, durable=False, policy=Policy())
        assert [node.text for node in again.raw] == ["hello"]
        again.close()  # nothing is taken for unsent: the one node counts as sent
        assert _stored_state(path)["sent"] == {"nodes": 1}
        with sqlite3.connect(path) as connection:
            assert connection.execute("PRAGMA user_version").fetchone()[0] == 2

    def test_nodes_ingested_after_the_last_state_write_are_unsent_after_a_crash(
        self, tmp_path: Path
    ) -> None:
        """What the model was not sent is known from the journal, not only from the state."""
        path = tmp_path / "session.db"
        manager = ContextManager.open(path, durable=False, policy=Policy(pipeline=[]))
        manager.add_user("sent")
        manager.render_sync()
        manager.add_user("not sent yet")
        store = manager.store
        assert store is not None
        store.close()  # the process dies: the state is not written again
        assert _stored_state(path)["sent"] == {"nodes": 1}
        again = ContextManager.open(path, durable=False, policy=Policy(pipeline=[]))
        again.close()  # saves `sent` anew: 1 if the late node was taken for unsent
        assert _stored_state(path)["sent"] == {"nodes": 1}

    def test_reopening_an_empty_session(self, tmp_path: Path) -> None:
        path = tmp_path / "new.db"
        ContextManager.open(path, policy=Policy()).close()
        manager = ContextManager.open(path, policy=Policy())
        assert len(manager.raw) == 0
        manager.add_user("hello")
        manager.close()
        again = ContextManager.open(path, policy=Policy())
        assert [node.text for node in again.raw] == ["hello"]
        again.close()


class TestOneWriter:
    def test_a_second_manager_on_the_same_file_is_refused(self, tmp_path: Path) -> None:
        path = tmp_path / "session.db"
        manager = ContextManager.open(path, policy=Policy())
        with pytest.raises(StoreLockedError):
            ContextManager.open(path, policy=Policy())
        manager.close()
        ContextManager.open(path, policy=Policy()).close()  # free again once closed

    def test_a_closed_manager_refuses_ingest_and_changes_nothing(self, tmp_path: Path) -> None:
        path = tmp_path / "session.db"
        manager = ContextManager.open(path, policy=Policy())
        manager.add_user("first")
        manager.close()
        manager.close()  # twice is harmless
        with pytest.raises(StoreError):
            manager.add_user("second")
        reopened = ContextManager.open(path, policy=Policy())
        assert [node.text for node in reopened.raw] == ["first"]
        reopened.close()

    def test_async_with_closes_the_file(self, tmp_path: Path) -> None:
        path = tmp_path / "session.db"

        async def main() -> None:
            async with ContextManager.open(path, policy=Policy()) as manager:
                manager.add_user("inside")
                await manager.render()

        anyio.run(main)
        ContextManager.open(path, policy=Policy()).close()  # the lock was released

    def test_close_inside_async_with_is_refused(self, tmp_path: Path) -> None:
        async def main() -> None:
            async with ContextManager.open(tmp_path / "s.db", policy=Policy()) as manager:
                with pytest.raises(RuntimeError, match="aclose"):
                    manager.close()

        anyio.run(main)


class TestBadFiles:
    def test_state_of_the_wrong_shape_is_refused_and_the_file_kept(self, tmp_path: Path) -> None:
        path = tmp_path / "session.db"
        manager = ContextManager.open(path, policy=Policy())
        manager.add_user("hello")
        manager.render_sync()
        manager.close()
        with sqlite3.connect(path) as connection:
            connection.execute(
                "UPDATE state SET value = ? WHERE key = 'counters'", ('{"applied": "many"}',)
            )
        before = path.read_bytes()
        with pytest.raises(StoreCorruptError, match=r"session\.db"):
            ContextManager.open(path, policy=Policy())
        assert path.read_bytes() == before

    def test_a_file_that_is_not_a_session_is_refused(self, tmp_path: Path) -> None:
        path = tmp_path / "notes.db"
        path.write_text("just some notes\n", encoding="utf-8")
        with pytest.raises(StoreError, match=r"notes\.db"):
            ContextManager.open(path, policy=Policy())
        assert path.read_text(encoding="utf-8") == "just some notes\n"

    def test_bad_options_fail_before_the_file_is_touched(self, tmp_path: Path) -> None:
        from context_graph.errors import ConfigurationError

        path = tmp_path / "session.db"
        with pytest.raises(ConfigurationError):
            ContextManager.open(path, budget=-1, policy=Policy())
        assert not path.exists()

    def test_a_database_url_naming_no_session_is_refused_by_name(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """`open` takes a store location: a PostgreSQL URL without a session is refused
        before connecting, its password kept out of the message, and no file is made."""
        from context_graph.errors import ConfigurationError

        monkeypatch.chdir(tmp_path)
        with pytest.raises(ConfigurationError, match="name one") as info:
            ContextManager.open("postgresql://agent:hunter2@localhost/sessions", policy=Policy())
        assert "hunter2" not in str(info.value)
        assert list(tmp_path.iterdir()) == []
