from __future__ import annotations

import itertools
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from context_graph import (
    AgentEvent,
    AssistantTurn,
    ConfigurationError,
    ContextGraph,
    IngestError,
    InvariantViolation,
    SystemPrompt,
    ToolCall,
    ToolResult,
    UserTurn,
)
from context_graph.errors import (
    StoreCorruptError,
    StoreError,
    StoreFormatError,
    StoreLockedError,
)
from context_graph.importers import load_events, load_sessions
from context_graph.render import Renderer
from context_graph.testing import WordCounter, graph_snapshot, strict_trace, trace_files
from orchestrator.bus import EventBus
from orchestrator.compaction.pipeline import StageSettings, output_targets, run_pipeline
from orchestrator.persistence import RestoredSession, SQLiteStore
from orchestrator.persistence.sqlite.store import SCHEMA_VERSION
from orchestrator.working.buffer import WorkingGraph
from processors.base import Drop, ProcessorContext, Proposal, run_processor
from processors.distill import Distiller
from processors.mask import ObservationMasker
from processors.summarize import HistorySummarizer
from processors.truncate import ToolOutputTruncator

ROOT = Path(__file__).resolve().parents[3]
TRACES = ROOT.parent / "shared" / "traces"
TRACE_FILES = trace_files(TRACES)
# Real sessions of four agents whose pipelines make replacements (mask, truncate) and
# summaries (abstracts): Claude Code with thinking blocks, mini-swe-agent, OpenHands, tau-bench.
PIPELINE_TRACES = [
    "claude_code/marot_spotter/tool_heavy.jsonl",
    "mini_swe_agent_deepseek/deepseek_chat_test_1-100/django__django-11905/django__django-11905.traj.json",
    "openhands_claude35_swebench_verified/llm_completions/astropy__astropy-12907/"
    "litellm_proxy__claude-3-5-sonnet-20241022-1733339462.430701.json",
    "tau_bench_gpt4o_airline/gpt-4o-airline.sample12.json",
]
needs_traces = pytest.mark.skipif(not TRACE_FILES, reason="shared traces not present")


def _pipeline() -> tuple[Any, ...]:
    return (
        ObservationMasker(keep_turns=1, min_tokens=20),
        ToolOutputTruncator(max_tokens=150),
        Distiller(),
        HistorySummarizer(),
    )


def _ticking(start: float = 1_700_000_000.25) -> Callable[[], float]:
    """A clock that moves on by a fraction of a second at every reading."""
    ticks = itertools.count()
    return lambda: start + next(ticks) * 0.137


@pytest.fixture(name="path")
def path_fixture(tmp_path: Path) -> Path:
    return tmp_path / "session.db"


def _open(path: Path, **options: Any) -> SQLiteStore:
    """A store counting words; without fsync unless asked (the tests need no power-cut safety)."""
    return SQLiteStore.open(path, counter=WordCounter(), **{"durable": False, **options})


def _drop_unit(working: WorkingGraph, index: int = 0) -> Proposal | None:
    """A proposal dropping the `index`-th unpinned assistant unit of the view, if any."""
    view = working.snapshot()
    units = [
        u for u in view.units() if u.kind == "assistant" and not any(view[i].pinned for i in u)
    ]
    if len(units) <= index:
        return None
    targets = units[index].node_ids
    return Proposal(
        processor="dropper",
        edits=(Drop(targets=targets),),
        tokens_before=sum(view.tokens(t) for t in targets),
        base_version=view.version,
        note="drop one whole unit",
    )


def _assert_same_session(a: RestoredSession, b: RestoredSession) -> None:
    """The two sessions agree on everything observable: record, view, audit, renders."""
    assert graph_snapshot(a.raw) == graph_snapshot(b.raw)
    assert [n.model_dump() for n in a.raw] == [n.model_dump() for n in b.raw]
    wa, wb = a.working, b.working
    assert wa.version == wb.version
    assert wa.units() == wb.units()
    assert wa.current_ids() == wb.current_ids()
    assert wa.total_tokens == wb.total_tokens
    assert wa.audit() == wb.audit()
    assert [wa[i].model_dump() for i in wa.current_ids()] == [
        wb[i].model_dump() for i in wb.current_ids()
    ]
    derived = wa.view.overlay.derived
    assert derived.keys() == wb.view.overlay.derived.keys()
    for node_id in derived:
        assert wa.expand(node_id) == wb.expand(node_id)
    for fmt in ("openai", "anthropic"):
        assert Renderer(format=fmt).render(wa).payload == Renderer(format=fmt).render(wb).payload


class TestRoundTrip:
    @needs_traces
    @pytest.mark.parametrize("trace", PIPELINE_TRACES, ids=lambda t: t.split("/")[0])
    async def test_real_session_with_real_proposals_restores_exactly(
        self, path: Path, trace: str
    ) -> None:
        """A session ingested in batches and compacted by real processors comes back whole."""
        events = load_events(TRACES / trace)
        with _open(path) as store:
            live = store.restore(clock=_ticking())
            bus = EventBus()
            dropped = False
            for start in range(0, len(events), 7):
                live.raw.ingest(events[start : start + 7])
                first, second = _drop_unit(live.working, 0), _drop_unit(live.working, 1)
                if not dropped and first is not None and second is not None:
                    live.working.apply_batch((first, second))  # one entry, two proposals
                    dropped = True
                settings = StageSettings(None, None, None)
                await run_pipeline(_pipeline(), live.working, bus, settings)
            store.put_state("triggers", {"disarmed": ["budget_soft"], "manual": False})
        with _open(path) as reopened:
            restored = reopened.restore()
            journal = list(reopened.journal())
        assert restored.entries == len(journal)
        ops = {edit.op for entry in journal for p in entry.proposals for edit in p.edits}
        assert ops == {"replace", "abstract", "drop"}
        _assert_same_session(live, restored)
        assert restored.state == {"triggers": {"disarmed": ["budget_soft"], "manual": False}}

    async def test_default_counter_is_recorded_and_used(self, path: Path) -> None:
        """A session stored with the default counter restores with its token counts."""
        with SQLiteStore.open(path) as store:
            live = store.restore()
            live.raw.ingest([UserTurn(content="count these words with tiktoken please")])
        with SQLiteStore.open(path) as store:
            restored = store.restore()
        assert restored.raw.total_tokens == live.raw.total_tokens > 0
        with pytest.raises(StoreError, match="tiktoken"):
            _open(path)

    def test_restored_store_keeps_appending_and_restores_again(self, path: Path) -> None:
        """A restored session journals what happens next; a later restore has all of it."""
        clock = _ticking()
        reference = ContextGraph(counter=WordCounter())
        working = WorkingGraph(reference, clock=_ticking())
        halves = (_session_events(0, 4), _session_events(4, 8))
        for half in halves:
            with _open(path) as store:
                session = store.restore(clock=clock)
                for batch in half:
                    session.raw.ingest(batch)
                    reference.ingest(batch)
                    proposal = _drop_unit(session.working)
                    if proposal is not None:
                        session.working.apply(proposal)
                        working.apply(proposal)
        with _open(path, read_only=True) as store:
            restored = store.restore()
        _assert_same_session(restored, RestoredSession(reference, working, {}, 0))
        assert len(restored.working.audit()) >= 2

    def test_read_only_store_sees_what_the_writer_committed(self, path: Path) -> None:
        """While a writer is open, a read-only store restores everything it committed."""
        with _open(path) as writer:
            live = writer.restore()
            for batch in _session_events(0, 3):
                live.raw.ingest(batch)
            with _open(path, read_only=True) as reader:
                restored = reader.restore()
                _assert_same_session(live, restored)
                with pytest.raises(StoreError, match="read-only"):
                    reader.put_state("x", 1)
                restored.raw.add_user("a plain copy: not journaled, not refused")
            assert len(list(writer.journal())) == 4  # the system prompt and three turns


def _session_events(first: int, last: int) -> list[list[AgentEvent]]:
    """Batches of a small coding session: turns `first` to `last`, one batch each."""
    batches: list[list[AgentEvent]] = []
    if first == 0:
        batches.append([SystemPrompt(content="you are a careful agent")])
    for turn in range(first, last):
        call = ToolCall(id=f"c{turn}", name="bash", arguments={"cmd": f"make test{turn}"})
        batches.append(
            [
                UserTurn(content=f"please run test {turn} and report"),
                AssistantTurn(content=f"running test {turn}", tool_calls=(call,)),
                ToolResult(call_id=f"c{turn}", content=f"test {turn} output " * 20),
            ]
        )
    return batches


@needs_traces
@pytest.mark.slow
@pytest.mark.parametrize("trace", TRACE_FILES, ids=lambda p: str(p.relative_to(TRACES)))
@pytest.mark.ingests_traces
def test_every_shared_trace_round_trips_with_the_same_ids(tmp_path: Path, trace: Path) -> None:
    """Every session of every shared trace, journaled in batches, replays to the same nodes."""
    for index, session in enumerate(load_sessions(trace, strict=strict_trace(trace))):
        path = tmp_path / f"session-{index}.db"
        expected = ContextGraph(counter=WordCounter())
        with _open(path) as store:
            live = store.restore()
            for start in range(0, len(session.events), 5):
                batch = session.events[start : start + 5]
                live.raw.ingest(batch)
                expected.ingest(batch)
        with _open(path, read_only=True) as store:
            restored = store.restore()
        assert restored.raw.transcript() == expected.transcript()
        assert graph_snapshot(restored.raw) == graph_snapshot(expected)
        assert [n.model_dump() for n in restored.raw] == [n.model_dump() for n in expected]


# -- one writer at a time -------------------------------------------------------------------

# A writer in another process: opens the session, says so, and waits for a line on stdin
# (`close`) or keeps ingesting turns until it is killed (`ingest`).
_WRITER = """
import sys
from context_graph.testing import WordCounter
from orchestrator.persistence import SQLiteStore

store = SQLiteStore.open(sys.argv[1], counter=WordCounter())
session = store.restore()
print("ready", flush=True)
if sys.argv[2] == "close":
    sys.stdin.readline()
    store.close()
    print("closed", flush=True)
else:
    for turn in range(1_000_000):
        session.raw.add_user(f"turn {turn} " + "word " * 200)
"""


@pytest.fixture(name="writer")
def writer_fixture(path: Path) -> Iterator[Callable[[str], subprocess.Popen[str]]]:
    """Starts writer processes on `path`; kills any still running at the end."""
    started: list[subprocess.Popen[str]] = []

    def start(mode: str) -> subprocess.Popen[str]:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *sys.path])}
        process = subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(path), mode],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        started.append(process)
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line == "ready\n", process.stderr.read() if process.stderr else line
        return process

    yield start
    for process in started:
        if process.poll() is None:
            process.kill()
        process.communicate()


class TestWriterLock:
    def test_second_open_in_the_same_process_is_refused(self, path: Path) -> None:
        """Two writable stores on one file in one process: the second is refused."""
        with _open(path) as first:
            with pytest.raises(StoreLockedError) as refused:
                _open(path)
            assert refused.value.pid == os.getpid()
            assert str(path) in str(refused.value)
            first.put_state("still", "writable")
        with _open(path) as again:
            assert again.get_state("still") == "writable"

    def test_open_in_another_process_is_refused_until_it_closes(
        self, path: Path, writer: Callable[[str], subprocess.Popen[str]]
    ) -> None:
        """A second process is refused, named by pid, and gets the file once the first closes."""
        other = writer("close")
        with pytest.raises(StoreLockedError) as refused:
            _open(path)
        assert refused.value.pid == other.pid
        assert f"process {other.pid}" in str(refused.value)
        with _open(path, read_only=True) as reader:  # reading needs no lock
            assert reader.restore().entries == 0
        assert other.stdin is not None and other.stdout is not None
        other.stdin.write("\n")
        other.stdin.flush()
        assert other.stdout.readline() == "closed\n"
        assert other.wait(timeout=30) == 0
        with _open(path) as store:
            assert store.restore().entries == 0

    def test_killed_writer_leaves_a_consistent_file_and_no_lock(
        self, path: Path, writer: Callable[[str], subprocess.Popen[str]]
    ) -> None:
        """A writer killed mid-stream leaves whole entries only, and its lock dies with it."""
        other = writer("ingest")
        deadline = time.monotonic() + 60
        with _open(path, read_only=True) as reader:
            while len(list(reader.journal())) < 20 and time.monotonic() < deadline:
                time.sleep(0.01)
        other.kill()
        other.wait(timeout=30)
        with _open(path) as store:
            restored = store.restore()
        assert restored.entries >= 20
        assert restored.raw.turns == restored.entries  # one user turn per entry
        texts = [node.text for node in restored.raw]
        assert texts == [f"turn {i} " + "word " * 200 for i in range(len(texts))]


# -- files that are not sessions, and sessions that were damaged -----------------------------


def _recorded(path: Path) -> RestoredSession:
    """A closed session file holding events, one applied drop, and a state key."""
    with _open(path) as store:
        session = store.restore(clock=_ticking())
        for batch in _session_events(0, 3):
            session.raw.ingest(batch)
        proposal = _drop_unit(session.working)
        assert proposal is not None
        session.working.apply(proposal)
        store.put_state("guards", {"runs": 3})
    return session


def _edit(path: Path, sql: str, *params: Any) -> None:
    connection = sqlite3.connect(path)
    with connection:
        connection.execute(sql, params)
    connection.close()


def _body(path: Path, seq: int) -> str:
    connection = sqlite3.connect(path)
    (body,) = connection.execute("SELECT body FROM journal WHERE seq = ?", (seq,)).fetchone()
    connection.close()
    return str(body)


def _rewrite(path: Path, seq: int, body: str) -> None:
    """Replace an entry's body and fix its checksum, as a careful vandal would."""
    from orchestrator.persistence.codec import checksum

    _edit(
        path, "UPDATE journal SET body = ?, checksum = ? WHERE seq = ?", body, checksum(body), seq
    )


class TestBadFiles:
    def test_missing_directory(self, tmp_path: Path) -> None:
        """A path in a directory that does not exist is refused; nothing is created."""
        path = tmp_path / "nowhere" / "session.db"
        with pytest.raises(StoreError, match=r"directory .*nowhere does not exist") as refused:
            _open(path)
        assert str(path) in str(refused.value)
        assert not (tmp_path / "nowhere").exists()

    def test_directory_instead_of_a_file(self, tmp_path: Path) -> None:
        """A directory is not a session file."""
        with pytest.raises(StoreError, match="is a directory"):
            _open(tmp_path)

    def test_file_that_is_not_sqlite(self, path: Path) -> None:
        """A text file is refused as not SQLite, untouched and without a lock file."""
        path.write_text('{"role": "user"}\n')
        with pytest.raises(StoreFormatError, match="not a SQLite database") as refused:
            _open(path)
        assert str(path) in str(refused.value)
        assert path.read_text() == '{"role": "user"}\n'
        assert not path.with_name("session.db.lock").exists()

    def test_sqlite_database_of_another_application(self, path: Path) -> None:
        """Another application's database is refused, naming its tables; it is unchanged."""
        _edit(path, "CREATE TABLE invoices (id INTEGER)")
        before = path.read_bytes()
        with pytest.raises(StoreFormatError, match=r"another application.*invoices"):
            _open(path)
        assert path.read_bytes() == before
        with _open(path.with_name("other.db")):
            pass  # the lock of the refused file was given back: nothing is held

    def test_session_of_a_newer_schema(self, path: Path) -> None:
        """A session written by a newer schema is refused with the versions named."""
        _recorded(path)
        _edit(path, f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
        newer = rf"newer context-graph \(session schema {SCHEMA_VERSION + 1}"
        with pytest.raises(StoreFormatError, match=newer):
            _open(path)
        with pytest.raises(StoreFormatError, match="upgrade context-graph"):
            _open(path, read_only=True)

    def test_session_with_missing_tables(self, path: Path) -> None:
        """A session whose tables were dropped is corrupt."""
        _recorded(path)
        _edit(path, "DROP TABLE state")
        with pytest.raises(StoreCorruptError, match="tables state are missing"):
            _open(path)

    def test_damaged_pages(self, path: Path) -> None:
        """A file whose SQLite pages were overwritten is refused as unreadable."""
        _recorded(path)
        data = bytearray(path.read_bytes())
        data[100:4096] = b"\xff" * (4096 - 100)  # the schema's page, past the header
        path.write_bytes(bytes(data))
        with pytest.raises(StoreCorruptError, match="SQLite cannot read it"):
            _open(path)

    def test_read_only_needs_an_existing_session(self, path: Path) -> None:
        """Read-only opening does not create a file, and refuses an empty one."""
        with pytest.raises(StoreError, match="does not exist"):
            _open(path, read_only=True)
        assert not path.exists()
        sqlite3.connect(path).close()
        with pytest.raises(StoreFormatError, match="empty database"):
            _open(path, read_only=True)


class TestDamagedJournal:
    def test_entry_changed_after_it_was_written(self, path: Path) -> None:
        """An entry edited in place is named by its seq, and nothing is restored."""
        _recorded(path)
        _edit(path, "UPDATE journal SET body = replace(body, 'test 1 output', 'test 9 output')")
        with _open(path) as store, pytest.raises(StoreCorruptError) as refused:
            store.restore()
        assert refused.value.seq == 3
        assert "journal entry 3" in str(refused.value)
        assert "changed after it was written" in str(refused.value)
        assert str(path) in str(refused.value)

    def test_entry_that_does_not_decode(self, path: Path) -> None:
        """An entry whose JSON is broken (checksum fixed) is named with the failing field."""
        _recorded(path)
        _rewrite(path, 2, _body(path, 2).replace('"type":"user"', '"type":"robot"'))
        with _open(path) as store, pytest.raises(StoreCorruptError, match="journal entry 2: ev"):
            list(store.journal())

    def test_proposal_that_no_longer_applies(self, path: Path) -> None:
        """A proposal edited to target a node that does not exist fails to replay, by seq."""
        _recorded(path)
        seq = len(_session_events(0, 3)) + 1
        body = _body(path, seq)
        target = body.split('"targets":["')[1].split('"')[0]
        _rewrite(path, seq, body.replace(target, "000099-user-0000000000000000"))
        with _open(path) as store, pytest.raises(StoreCorruptError) as refused:
            store.restore()
        assert refused.value.seq == seq
        assert "no longer applies" in str(refused.value)
        assert isinstance(refused.value.__cause__, InvariantViolation)

    def test_audit_entry_that_does_not_match_its_replay(self, path: Path) -> None:
        """A recorded audit entry that its replay does not give is caught, by field."""
        _recorded(path)
        seq = len(_session_events(0, 3)) + 1
        body = _body(path, seq)
        _rewrite(path, seq, re.sub(r'"tokens_saved":(\d+)', r'"tokens_saved":1\1', body))
        with _open(path) as store, pytest.raises(StoreCorruptError) as refused:
            store.restore()
        assert refused.value.seq == seq
        assert "differs in tokens_saved" in str(refused.value)

    def test_state_that_is_not_json(self, path: Path) -> None:
        """A state value that is not JSON is named by its key."""
        _recorded(path)
        _edit(path, "UPDATE state SET value = '{not json' WHERE key = 'guards'")
        with _open(path) as store, pytest.raises(StoreCorruptError, match="state 'guards'"):
            store.restore()

    def test_failed_restore_hands_out_nothing_and_changes_nothing(self, path: Path) -> None:
        """A restore that fails leaves the file as it was; the journal is still readable."""
        _recorded(path)
        _edit(path, "UPDATE journal SET checksum = 'bad' WHERE seq = 1")
        before = path.read_bytes()
        with _open(path) as store:
            with pytest.raises(StoreCorruptError, match="journal entry 1"):
                store.restore()
            with pytest.raises(StoreCorruptError):
                store.restore()  # still nothing attached: it fails the same way again
        assert path.read_bytes() == before


# -- writing ---------------------------------------------------------------------------------


def _rows(path: Path) -> list[tuple[Any, ...]]:
    connection = sqlite3.connect(path)
    rows = connection.execute("SELECT seq, kind, body, checksum FROM journal ORDER BY seq")
    found = rows.fetchall()
    connection.close()
    return found


# Makes every state write fail inside its transaction, the way a full disk would.
_FAILING_STATE_WRITES = (
    "CREATE TRIGGER full AFTER INSERT ON state BEGIN SELECT RAISE(ABORT, 'disk full'); END"
)


class TestWrites:
    def test_each_batch_is_one_new_row_and_old_rows_stay(self, path: Path) -> None:
        """Ingesting and applying add one row each; rows written before are never rewritten."""
        with _open(path) as store:
            session = store.restore()
            seen: list[tuple[Any, ...]] = []
            for batch in _session_events(0, 4):
                session.raw.ingest(batch)
                rows = _rows(path)
                assert rows[: len(seen)] == seen
                assert len(rows) == len(seen) + 1
                seen = rows
            proposal = _drop_unit(session.working)
            assert proposal is not None
            session.working.apply(proposal)
            assert _rows(path)[: len(seen)] == seen
            assert [row[1] for row in _rows(path)[len(seen) :]] == ["proposals"]

    def test_batch_applied_whole_is_one_entry(self, path: Path) -> None:
        """`apply_batch` is journaled as one entry holding every proposal and audit entry."""
        with _open(path) as store:
            session = store.restore()
            for batch in _session_events(0, 3):
                session.raw.ingest(batch)
            first, second = _drop_unit(session.working, 0), _drop_unit(session.working, 1)
            assert first is not None and second is not None
            session.working.apply_batch((first, second))
            *_, last = store.journal()
            assert last.kind == "proposals"
            assert last.proposals == (first, second)
            assert last.audit == session.working.audit()
            assert store.audit() == session.working.audit()

    def test_rejected_proposal_and_refused_batch_are_not_journaled(self, path: Path) -> None:
        """What memory refuses, the journal never sees."""
        with _open(path) as store:
            session = store.restore()
            for batch in _session_events(0, 2):
                session.raw.ingest(batch)
            proposal = _drop_unit(session.working)
            assert proposal is not None
            before = _rows(path)
            lying = proposal.model_copy(update={"tokens_before": proposal.tokens_before + 1})
            with pytest.raises(InvariantViolation):
                session.working.apply(lying)
            with pytest.raises(IngestError):
                session.raw.ingest([ToolResult(call_id="never-called", content="x")])
            assert _rows(path) == before

    def test_events_given_as_dicts_replay_to_the_same_nodes(self, path: Path) -> None:
        """Events ingested as plain dicts are journaled as events and give the same ids."""
        with _open(path) as store:
            session = store.restore()
            ids = session.raw.ingest(
                [
                    {"type": "user", "content": "list the files"},
                    {"type": "assistant", "tool_calls": [{"id": "a", "name": "ls"}]},
                    {"type": "tool_result", "call_id": "a", "content": "setup.py"},
                ]
            )
        with _open(path) as store:
            assert store.restore().raw.transcript() == ids

    def test_bad_event_dict_is_refused_before_writing(self, path: Path) -> None:
        """`append_events` validates first: a bad event names its index and writes nothing."""
        with _open(path) as store:
            with pytest.raises(IngestError, match="message 1: invalid event"):
                store.append_events([{"type": "user", "content": "hi"}, {"type": "robot"}])
            assert list(store.journal()) == []

    def test_append_proposals_checks_its_arguments(self, path: Path) -> None:
        """Proposals and audit entries that do not pair up are a wiring mistake."""
        with _open(path) as store:
            session = store.restore()
            for batch in _session_events(0, 2):
                session.raw.ingest(batch)
            proposal = _drop_unit(session.working)
            assert proposal is not None
            entry = session.working.apply(proposal)
            with pytest.raises(ConfigurationError, match="1 proposals and 0 audit entries"):
                store.append_proposals([proposal], [])
            renamed = entry.model_copy(update={"processor": "other"})
            with pytest.raises(ConfigurationError, match="keep them in order"):
                store.append_proposals([proposal], [renamed])
            assert len(store.audit()) == 1

    def test_state_keeps_the_latest_value_per_key(self, path: Path) -> None:
        """State is the latest value per key, written alone or with an entry."""
        with _open(path) as store:
            store.put_state("factor", 1.0)
            store.put_state("factor", 1.25)
            store.append_events([UserTurn(content="hello")], state={"turns": {"seen": 1}})
            assert store.get_state("factor") == 1.25
            assert store.get_state("missing", "default") == "default"
        with _open(path, read_only=True) as store:
            assert store.state() == {"factor": 1.25, "turns": {"seen": 1}}
            assert store.restore().state == {"factor": 1.25, "turns": {"seen": 1}}

    @pytest.mark.parametrize(
        ("key", "value", "reason"),
        [
            ("", 1, "non-empty string"),
            ("x", object(), "is not JSON"),
            ("x", float("nan"), "is not JSON"),
        ],
    )
    def test_state_must_be_json(self, path: Path, key: str, value: Any, reason: str) -> None:
        """A state key or value the file cannot hold is refused; nothing is written."""
        with _open(path) as store:
            with pytest.raises(ConfigurationError, match=reason):
                store.put_state(key, value)
            with pytest.raises(ConfigurationError, match=reason):
                store.append_events([UserTurn(content="hello")], state={key: value})
            assert store.state() == {}
            assert list(store.journal()) == []

    def test_failed_write_rolls_back_and_stops_the_journal(self, path: Path) -> None:
        """A write that fails leaves the file as before, and nothing later is journaled."""
        with _open(path) as store:
            session = store.restore()
            for batch in _session_events(0, 2):
                session.raw.ingest(batch)
            # The next entry's state write fails after its journal row was inserted.
            _edit(path, _FAILING_STATE_WRITES)
            before = _rows(path)
            with pytest.raises(StoreError, match="disk full"):
                store.append_events([UserTurn(content="lost")], state={"k": 1})
            assert _rows(path) == before
            snapshot = graph_snapshot(session.raw)
            with pytest.raises(StoreError, match="ahead of the file; reopen"):
                session.raw.add_user("refused before it reaches memory")
            assert graph_snapshot(session.raw) == snapshot
            with pytest.raises(StoreError, match="ahead of the file"):
                store.put_state("k", 2)
        with _open(path) as store:
            assert store.restore().entries == len(before)

    def test_failed_state_write_alone_does_not_stop_the_journal(self, path: Path) -> None:
        """A state write that fails leaves no gap in the journal, so writing goes on."""
        with _open(path) as store:
            session = store.restore()
            _edit(path, _FAILING_STATE_WRITES)
            with pytest.raises(StoreError, match="cannot write to it: disk full"):
                store.put_state("k", 1)
            session.raw.add_user("still journaled")
            assert len(list(store.journal())) == 1

    def test_closed_or_handed_out_store_refuses(self, path: Path) -> None:
        """A closed store refuses writes before memory changes; a session is handed out once."""
        store = _open(path)
        session = store.restore()
        with pytest.raises(StoreError, match="already called"):
            store.restore()
        store.close()
        store.close()  # idempotent
        with pytest.raises(StoreError, match="closed"):
            session.raw.add_user("too late")
        assert len(session.raw) == 0
        with pytest.raises(StoreError, match="closed"):
            store.state()
        assert repr(store) == f"SQLiteStore({str(path)!r}, closed)"

    def test_pristine_record_refuses_edits_it_cannot_journal(self, path: Path) -> None:
        """Explicit edges and derived nodes on a stored session's record are refused."""
        with _open(path) as store:
            session = store.restore()
            first = session.raw.add_user("one")
            second = session.raw.add_user("two")
            with pytest.raises(StoreError, match="not journaled"):
                session.raw.add_edge(second, first, "supersedes")
            copy = session.raw[first].model_copy(update={"id": "copy", "seq": None})
            with pytest.raises(StoreError, match="not journaled"):
                session.raw.add_derived(copy)


# -- random sessions -------------------------------------------------------------------------

_WORDS = st.lists(
    st.sampled_from(["alpha", "beta", "error", "log", "ok", "path/to/file.py", "über", "🙂"]),
    min_size=1,
    max_size=40,
).map(" ".join)
_STEP = st.one_of(
    st.tuples(st.just("user"), _WORDS),
    st.tuples(st.just("turn"), st.integers(0, 3), _WORDS, st.booleans()),
    st.tuples(st.just("mask")),
    st.tuples(st.just("drop")),
    st.tuples(st.just("drop_two")),
    st.tuples(st.just("state"), st.integers(0, 5)),
    st.tuples(st.just("reopen")),
)


class _Twins:
    """The same session kept twice: in memory only, and through a store that reopens."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.raw = ContextGraph(counter=WordCounter())
        self.working = WorkingGraph(self.raw, clock=_ticking())
        self.stored_clock = _ticking()
        self.state: dict[str, Any] = {}
        self.calls = 0
        self.store = _open(path)
        self.session = self.store.restore(clock=self.stored_clock)

    def ingest(self, batch: Sequence[AgentEvent]) -> None:
        self.raw.ingest(batch)
        self.session.raw.ingest(batch)

    def turn(self, calls: int, text: str, split: bool) -> None:
        ids = [f"c{self.calls + i}" for i in range(calls)]
        self.calls += calls
        turn = AssistantTurn(
            content=text, tool_calls=tuple(ToolCall(id=i, name="bash") for i in ids)
        )
        results = [ToolResult(call_id=i, content=f"{text} {i} " * 5) for i in ids]
        if split:  # results arrive in batches of their own
            self.ingest([turn])
            for result in results:
                self.ingest([result])
        else:
            self.ingest([turn, *results])

    def apply(self, proposals: Sequence[Proposal | None]) -> None:
        batch = [p for p in proposals if p is not None and not p.empty]
        if batch:
            self.working.apply_batch(batch)
            self.session.working.apply_batch(batch)

    def mask(self) -> None:
        masker = ObservationMasker(keep_turns=1, min_tokens=1)
        view = self.working.snapshot()
        ctx = ProcessorContext(graph=view, tokens=self.working.token_cache)
        self.apply([anyio.run(run_processor, masker, output_targets(view), ctx)])

    def reopen(self) -> None:
        self.store.close()
        self.store = _open(self.path)
        self.session = self.store.restore(clock=self.stored_clock)
        self.check(self.session)

    def check(self, session: RestoredSession) -> None:
        _assert_same_session(session, RestoredSession(self.raw, self.working, {}, 0))
        assert session.state == self.state

    def run(self, step: tuple[Any, ...]) -> None:
        match step:
            case ("user", text):
                self.ingest([UserTurn(content=text)])
            case ("turn", calls, text, split):
                self.turn(calls, text, split)
            case ("mask",):
                self.mask()
            case ("drop",):
                self.apply([_drop_unit(self.working)])
            case ("drop_two",):
                self.apply([_drop_unit(self.working, 0), _drop_unit(self.working, 1)])
            case ("state", value):
                self.state["value"] = value
                self.store.put_state("value", value)
            case ("reopen",):
                self.reopen()


@settings(max_examples=50, deadline=None)
@given(steps=st.lists(_STEP, max_size=30))
def test_random_sessions_restore_to_what_memory_holds(steps: list[tuple[Any, ...]]) -> None:
    """Any mix of batches, compactions, state and reopenings restores to the in-memory twin."""
    with tempfile.TemporaryDirectory() as directory:
        twins = _Twins(Path(directory) / "session.db")
        try:
            twins.ingest([SystemPrompt(content="be brief"), UserTurn(content="start")])
            for step in steps:
                twins.run(step)
        finally:
            twins.store.close()
        with _open(twins.path, read_only=True) as store:
            twins.check(store.restore())
        applied = len(twins.working.audit())
        event(f"{applied if applied < 3 else '3 or more'} proposals applied")
        event("reopened" if ("reopen",) in steps else "never reopened")
