"""`ContextManager.fork`: a new session holding the record up to a node, on every backend."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from context_graph.errors import ConfigurationError, StoreError, UnknownNodeError
from context_graph.graph.events import AgentEvent, AssistantTurn, ToolResult, UserTurn
from context_graph.graph.nodes import SummaryNode
from context_graph.testing import ScriptedSummarizer, WordCounter, graph_snapshot
from orchestrator import ContextManager
from processors import HistorySummarizer
from tests.orchestrator.policy_keywords import make_manager, open_manager


def _options(**more: Any) -> dict[str, Any]:
    return {"format": "openai", "counter": WordCounter(), "clock": lambda: 1e9} | more


class Backend:
    """Makes source managers on one backend, and closes every manager it was handed."""

    def __init__(self, name: str, tmp_path: Path, postgres: Any) -> None:
        self.name = name
        self._tmp = tmp_path
        self._postgres = postgres
        self._opened: list[ContextManager] = []

    def source(self, **more: Any) -> ContextManager:
        """A new, empty session."""
        if self.name == "memory":
            return self.keep(make_manager(**_options(**more)))
        location = (
            self._tmp / "session.db" if self._postgres is None else self._postgres.location("f")
        )
        return self.keep(open_manager(location, **_options(**more)))

    def reopen(self, manager: ContextManager, **more: Any) -> ContextManager:
        """The stored session of `manager`, closed and opened again."""
        assert manager.store is not None
        location = manager.store.location
        manager.close()
        return self.keep(open_manager(location, **_options(**more)))

    def keep(self, manager: ContextManager) -> ContextManager:
        self._opened.append(manager)
        return manager

    def sessions(self) -> list[Any]:
        """What exists in the backend's storage (files, or session rows)."""
        if self._postgres is not None:
            return self._postgres.execute("SELECT name FROM cg_sessions ORDER BY name")
        return sorted(self._tmp.iterdir())

    def close(self) -> None:
        for manager in self._opened:
            manager.close()


def _backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    name = request.param
    postgres = request.getfixturevalue("postgres") if name == "postgres" else None
    backend = Backend(name, tmp_path, postgres)
    yield backend
    backend.close()


@pytest.fixture(name="backend", params=["memory", "sqlite", "postgres"])
def fixture_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    """Every backend a session is kept in."""
    yield from _backend(request, tmp_path)


@pytest.fixture(name="stored", params=["sqlite", "postgres"])
def fixture_stored(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    """The backends that keep a session across processes."""
    yield from _backend(request, tmp_path)


def _chat(manager: ContextManager, turns: int, *, start: int = 0) -> list[str]:
    """`turns` user turns, each answered with a tool call and its result; the user ids."""
    users = []
    for turn in range(start, start + turns):
        users.append(manager.add_user(f"Question {turn}: what does file {turn} hold?"))
        call = {"id": f"call_{turn}", "name": "read", "arguments": {"file": turn}}
        manager.add_assistant(f"Reading file {turn}.", [call])
        manager.add_tool_result(f"call_{turn}", " ".join(f"line{turn}-{i}" for i in range(40)))
        manager.add_assistant(f"File {turn} holds forty lines.")
    return users


def _payload(manager: ContextManager) -> Any:
    return manager.render_sync(budget=100_000).payload


def _summarizing(backend: Backend) -> ContextManager:
    summarizer = ScriptedSummarizer(["Files were read; each holds forty lines."] * 3)
    return backend.source(pipeline=[HistorySummarizer()], summarizer=summarizer)


def _compact(manager: ContextManager) -> SummaryNode:
    """Compact now; the summary it made."""
    run = anyio.run(manager.compact)
    assert run.applied == 1, "the history summarizer summarizes the older turns"
    added = manager.working.audit()[-1].added
    summary = manager.working[added[0]]
    assert isinstance(summary, SummaryNode)
    return summary


def _prefix(manager: ContextManager, at: str) -> tuple[str, ...]:
    transcript = manager.raw.transcript()
    return transcript[: transcript.index(at) + 1]


class TestForkPoint:
    def test_the_fork_holds_the_record_up_to_the_node(self, backend: Backend) -> None:
        """Forked at a user turn, the fork holds the transcript up to it, same ids and nodes."""
        source = backend.source()
        source.add_system("You read files.")
        users = _chat(source, 4)
        fork = backend.keep(source.fork(at=users[2]))
        assert fork.raw.transcript() == _prefix(source, users[2])
        assert [fork.raw[i] for i in fork.raw.transcript()] == [
            source.raw[i] for i in _prefix(source, users[2])
        ]
        assert fork.working.audit() == ()

    def test_an_assistant_turns_calls_come_with_it(self, backend: Backend) -> None:
        """Forked at an assistant turn, its tool calls are in the fork, their results not."""
        source = backend.source()
        _chat(source, 2)
        head, call = source.add_assistant("Two reads.", [{"id": "c", "name": "read"}])
        source.add_tool_result("c", "done")
        fork = backend.keep(source.fork(at=head))
        assert fork.raw.transcript()[-2:] == (head, call)
        assert fork.raw.unanswered_calls() == (call,)

    def test_without_at_the_fork_is_the_whole_session(self, backend: Backend) -> None:
        """`fork()` copies every entry: same record, same audit log, same request."""
        source = _summarizing(backend)
        _chat(source, 6)
        _compact(source)
        fork = backend.keep(source.fork())
        assert graph_snapshot(fork.raw) == graph_snapshot(source.raw)
        assert fork.working.audit() == source.working.audit()
        assert _payload(fork) == _payload(source)

    def test_a_fork_of_a_fork_holds_the_shorter_record(self, backend: Backend) -> None:
        """A fork forks again, at a node of its own record."""
        source = backend.source()
        users = _chat(source, 4)
        first = backend.keep(source.fork(at=users[3]))
        second = backend.keep(first.fork(at=users[1]))
        assert second.raw.transcript() == _prefix(source, users[1])

    @pytest.mark.parametrize("at", ["no-such-node", ""])
    def test_an_unknown_node_is_refused_and_creates_nothing(
        self, backend: Backend, at: str
    ) -> None:
        """An `at` the record lacks raises `UnknownNodeError` before anything is opened."""
        source = backend.source()
        _chat(source, 2)
        before, transcript = backend.sessions(), source.raw.transcript()
        with pytest.raises(UnknownNodeError, match="no node of the record"):
            source.fork(at=at)
        assert backend.sessions() == before
        assert source.raw.transcript() == transcript

    def test_a_node_a_processor_made_is_refused(self, backend: Backend) -> None:
        """A summary's id is no point of the transcript: refused, saying so."""
        source = _summarizing(backend)
        _chat(source, 6)
        summary = _compact(source)
        before = backend.sessions()
        with pytest.raises(UnknownNodeError, match="a processor made"):
            source.fork(at=summary.id)
        assert backend.sessions() == before

    def test_a_bad_option_is_refused_and_creates_nothing(self, backend: Backend) -> None:
        """A fork's option that does not check raises `ConfigurationError`; nothing is made."""
        source = backend.source()
        users = _chat(source, 2)
        before = backend.sessions()
        with pytest.raises(ConfigurationError, match="budget"):
            source.fork(at=users[1], budget=-1)
        assert backend.sessions() == before


class TestIsolation:
    def test_later_writes_to_either_never_show_in_the_other(self, backend: Backend) -> None:
        """What the source and the fork ingest or compact afterwards stays their own."""
        source = _summarizing(backend)
        users = _chat(source, 6)
        before = source.raw.transcript()
        fork = backend.keep(source.fork(at=users[5]))
        only_source = source.add_user("Only the source hears this.")
        only_fork = fork.add_user("Only the fork hears this.")
        summary = _compact(fork)
        assert only_source not in fork.raw
        assert only_fork not in source.raw
        assert summary.id not in source.working
        assert source.working.audit() == ()
        assert source.raw.transcript() == (*before, only_source)
        assert fork.raw.transcript() == (*_prefix(source, users[5]), only_fork)
        _compact(source)
        assert len(fork.working.audit()) == 1

    def test_each_stays_apart_when_reopened(self, stored: Backend) -> None:
        """Reopened, the source and its fork each hold their own record and audit log."""
        source = _summarizing(stored)
        users = _chat(source, 6)
        fork = source.fork(at=users[5])
        assert fork.store is not None and source.store is not None
        assert fork.store.location != source.store.location
        only_fork = fork.add_user("Only the fork hears this.")
        _compact(fork)
        snapshot, audit = graph_snapshot(fork.raw), fork.working.audit()
        payload = _payload(fork)
        reopened = stored.reopen(fork)
        assert graph_snapshot(reopened.raw) == snapshot
        assert reopened.working.audit() == audit
        assert _payload(reopened) == payload
        source = stored.reopen(source)
        assert only_fork not in source.raw
        assert source.working.audit() == ()

    def test_a_stored_fork_goes_beside_its_source(self, stored: Backend) -> None:
        """`to=None` keeps a stored session's forks beside it, each under a new name."""
        source = stored.source()
        users = _chat(source, 2)
        first = stored.keep(source.fork(at=users[0]))
        second = stored.keep(source.fork(at=users[1]))
        assert source.store is not None and first.store is not None and second.store is not None
        where = source.store.location
        stem = where.removesuffix(".db")
        assert [first.store.location, second.store.location] == [
            f"{stem}-fork-1" + (".db" if where.endswith(".db") else ""),
            f"{stem}-fork-2" + (".db" if where.endswith(".db") else ""),
        ]


class TestDestination:
    def test_an_in_memory_session_forks_into_a_file(self, tmp_path: Path) -> None:
        """`to=` a path keeps the fork of an in-memory session in a new session file."""
        source = make_manager(**_options())
        users = _chat(source, 3)
        fork = source.fork(at=users[1], to=tmp_path / "fork.db")
        fork.close()
        reopened = open_manager(tmp_path / "fork.db", **_options())
        assert reopened.raw.transcript() == _prefix(source, users[1])
        reopened.close()

    def test_a_destination_holding_a_session_is_refused(self, tmp_path: Path) -> None:
        """A fork never writes into a session that exists; that session is left as it was."""
        other = open_manager(tmp_path / "other.db", **_options())
        _chat(other, 1)
        other.close()
        source = make_manager(**_options())
        users = _chat(source, 2)
        with pytest.raises(StoreError, match="already holds a session"):
            source.fork(at=users[1], to=tmp_path / "other.db")
        reopened = open_manager(tmp_path / "other.db", **_options())
        assert len(reopened.raw.transcript()) == 5  # one turn: user, reply, call, result, reply
        reopened.close()

    def test_a_session_name_outside_a_database_is_refused(self, tmp_path: Path) -> None:
        """`session=` names a session in a database; a file-kept fork refuses it."""
        source = open_manager(tmp_path / "s.db", **_options())
        users = _chat(source, 1)
        with pytest.raises(ConfigurationError, match="not in a database"):
            source.fork(at=users[0], session="named")
        source.close()
        assert sorted(p.name for p in tmp_path.iterdir()) == ["s.db"]

    def test_a_named_fork_in_the_same_database(self, postgres: Any) -> None:
        """`session=` names the fork's session in the source's database."""
        source = open_manager(postgres.location("named"), **_options())
        users = _chat(source, 2)
        name = f"{source.store.session}-mine"  # type: ignore[union-attr]
        fork = source.fork(at=users[0], session=name)
        assert fork.store is not None and fork.store.location.endswith(f"#{name}")
        assert fork.raw.transcript() == _prefix(source, users[0])
        fork.close()
        source.close()

    def test_the_pristine_record_of_a_manager_in_memory_takes_no_derived_node(self) -> None:
        """An edit of the record that no entry keeps is refused: a fork would lose it."""
        source = make_manager(**_options())
        _chat(source, 1)
        summary = SummaryNode(id="s", content=[], abstracts=(source.raw.transcript()[0],))
        with pytest.raises(ConfigurationError, match="fork"):
            source.raw.add_derived(summary)


class TestCompactedPoint:
    def test_a_summary_made_before_the_point_comes_with_it(self, backend: Backend) -> None:
        """Forked where a summary was already made: the fork has it, and expands it."""
        source = _summarizing(backend)
        _chat(source, 6)
        summary = _compact(source)
        point = source.raw.transcript()[-1]
        audit, payload = source.working.audit(), _payload(source)
        _chat(source, 2, start=6)
        fork = backend.keep(source.fork(at=point))
        assert fork.working.audit() == audit
        assert fork.working.is_current(summary.id)
        assert fork.expand(summary.id) == source.expand(summary.id)
        assert _payload(fork) == payload

    def test_a_summary_made_after_the_point_is_not_copied(self, backend: Backend) -> None:
        """A summary made once the session moved on stays out, even of nodes before `at`."""
        source = _summarizing(backend)
        users = _chat(source, 6)
        point = source.raw.transcript()[-1]
        source.add_user("One more question.")
        summary = _compact(source)
        for at in (point, users[3]):
            fork = backend.keep(source.fork(at=at))
            assert summary.id not in fork.working
            assert fork.working.audit() == ()
            assert fork.working.view.transcript() == _prefix(source, at)
            assert fork.expand(at) == (source.raw[at],)

    def test_a_fork_inside_the_summarized_part_renders_it_whole(self, backend: Backend) -> None:
        """Forked at a node a summary stands for, the fork shows the originals, not it."""
        source = _summarizing(backend)
        users = _chat(source, 6)
        summary = _compact(source)
        assert users[2] in source.working.roots(summary.id)
        fork = backend.keep(source.fork(at=users[2]))
        fresh = make_manager(**_options())
        _chat(fresh, 2)
        fresh.add_user("Question 2: what does file 2 hold?")
        assert _payload(fork) == _payload(fresh)
        assert summary.id not in fork.working


_STEPS = st.lists(
    st.tuples(st.sampled_from(["user", "assistant", "call"]), st.integers(0, 3)),
    min_size=1,
    max_size=14,
)


def _events(steps: list[tuple[str, int]]) -> list[AgentEvent]:
    """A valid conversation from drawn steps (a call is answered at once)."""
    events: list[AgentEvent] = []
    for index, (kind, size) in enumerate(steps):
        text = " ".join(f"{kind}{index}w{i}" for i in range(size + 1))
        if kind == "user":
            events.append(UserTurn(content=text))
        elif kind == "assistant":
            events.append(AssistantTurn(content=text))
        else:
            call = {"id": f"c{index}", "name": "run", "arguments": {"n": size}}
            events.append(AssistantTurn.model_validate({"content": text, "tool_calls": [call]}))
            events.append(ToolResult(call_id=f"c{index}", content=text))
    return events


def _fed(events: list[AgentEvent], cuts: list[int], manager: ContextManager) -> None:
    """Ingest `events` in batches that end at `cuts`."""
    start = 0
    for end in [*sorted(set(cuts)), len(events)]:
        if end > start:
            manager.ingest(events[start:end])
            start = end


def _fresh_payload(events: list[AgentEvent], at: str) -> tuple[tuple[str, ...], Any]:
    """A manager fed `events` one by one until it holds `at`: its transcript and request."""
    fresh = make_manager(**_options())
    for event in events:
        if at in fresh.raw:
            break
        fresh.ingest([event])
    return fresh.raw.transcript(), _payload(fresh)


class TestForkProperty:
    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(steps=_STEPS, cuts=st.lists(st.integers(0, 20), max_size=4), pick=st.integers(0))
    def test_a_fork_renders_what_a_manager_fed_its_prefix_renders(
        self, steps: list[tuple[str, int]], cuts: list[int], pick: int
    ) -> None:
        """For any events, batching and point, the fork's request is a fresh manager's."""
        events = _events(steps)
        source = make_manager(**_options())
        _fed(events, cuts, source)
        transcript = source.raw.transcript()
        at = transcript[pick % len(transcript)]
        fork = source.fork(at=at)
        expected_transcript, expected = _fresh_payload(events, at)
        assert fork.raw.transcript() == expected_transcript
        assert _payload(fork) == expected

    @settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(steps=_STEPS, cuts=st.lists(st.integers(0, 20), max_size=4), pick=st.integers(0))
    def test_a_file_kept_fork_renders_the_same(
        self, steps: list[tuple[str, int]], cuts: list[int], pick: int
    ) -> None:
        """The same holds for a session file forked into another file."""
        events = _events(steps)
        with tempfile.TemporaryDirectory() as folder:
            source = open_manager(Path(folder) / "s.db", durable=False, **_options())
            _fed(events, cuts, source)
            transcript = source.raw.transcript()
            at = transcript[pick % len(transcript)]
            fork = source.fork(at=at, durable=False)
            try:
                expected_transcript, expected = _fresh_payload(events, at)
                assert fork.raw.transcript() == expected_transcript
                assert _payload(fork) == expected
            finally:
                fork.close()
                source.close()


class TestForkOptions:
    """An option left out is kept; `None` says none where the constructor takes `None`."""

    def _source(self, **more: Any) -> ContextManager:
        manager = ContextManager("openai", counter=WordCounter(), **more)
        manager.add_user("Hello.")
        return manager

    def test_a_left_out_option_is_kept(self) -> None:
        """`fork()` keeps the model, so the model's window is the fork's budget too."""
        source = self._source(model="claude-sonnet-5")
        assert source.budget is not None
        assert source.fork().budget == source.budget

    def test_model_none_drops_the_model(self) -> None:
        """`fork(model=None)`: no model, so no budget it set (there was no other)."""
        source = self._source(model="claude-sonnet-5")
        assert source.fork(model=None).budget is None

    def test_budget_none_drops_the_budget(self) -> None:
        """`fork(budget=None)` on a manager with a budget of its own: the fork has none."""
        source = self._source(budget=5_000)
        assert source.fork(budget=None).budget is None
        assert source.fork().budget == 5_000

    def test_budget_none_falls_back_to_the_model(self) -> None:
        """`fork(budget=None)` with a model kept: the model's window, as the constructor does."""
        source = self._source(budget=5_000, model="claude-sonnet-5")
        windowed = ContextManager("openai", model="claude-sonnet-5").budget
        assert source.fork(budget=None).budget == windowed

    def test_tools_none_drops_the_tools(self) -> None:
        """`fork(tools=None)`: the fork's requests carry no tools; `fork()` keeps them."""
        tool = {"type": "function", "function": {"name": "ls", "parameters": {"type": "object"}}}
        source = self._source(budget=5_000, tools=[tool])
        assert "tools" in source.fork().render_sync().payload
        assert "tools" not in source.fork(tools=None).render_sync().payload

    @pytest.mark.parametrize("option", ["format", "policy", "clock"])
    def test_none_where_the_constructor_takes_none_is_refused(self, option: str) -> None:
        """`None` is no value of these options: a `ConfigurationError` naming it."""
        source = self._source(budget=5_000)
        with pytest.raises(ConfigurationError):
            source.fork(**{option: None})
