from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from context_graph.errors import IngestError
from context_graph.graph.context_graph import ContextGraph
from context_graph.graph.nodes import ToolCallNode
from context_graph.importers import (
    RawInput,
    detect_format,
    load_sessions,
    read_raw,
    tau_bench,
)
from context_graph.testing import WordCounter, graph_snapshot

TRACES = Path(__file__).resolve().parents[3].parent / "shared" / "traces"
FAMILY = TRACES / "tau_bench_gpt4o_airline"
FILES = sorted(FAMILY.glob("*.json")) if FAMILY.is_dir() else []


def _open_after(traj: list[dict[str, Any]]) -> list[str]:
    """The call ids left unanswered, pairing each result with the latest open call of its id."""
    open_ids: list[str] = []
    for message in traj:
        for call in message.get("tool_calls") or []:
            open_ids.append(call["id"])
        if message["role"] == "tool":
            last = len(open_ids) - 1 - open_ids[::-1].index(message["tool_call_id"])
            del open_ids[last]
    return open_ids


def _call(call_id: str, name: str = "lookup") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}


def _run(task_id: Any = 7, traj: Any = None, **extra: Any) -> dict[str, Any]:
    messages = [
        {"role": "system", "content": "policy"},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [_call("call_a")]},
        {"role": "tool", "tool_call_id": "call_a", "name": "lookup", "content": "one"},
        {"role": "assistant", "content": None, "tool_calls": [_call("call_a")]},
        {"role": "tool", "tool_call_id": "call_a", "name": "lookup", "content": "two"},
        {"role": "assistant", "content": "done"},
    ]
    run = {
        "task_id": task_id,
        "trial": 0,
        "reward": 1.0,
        "traj": messages if traj is None else traj,
    }
    run["info"] = {
        "task": {
            "actions": [{"name": "cancel", "kwargs": {"reservation_id": "3RK2T9", "n": 2}}],
            "outputs": ["327"],
        }
    }
    run.update(extra)
    return run


@pytest.mark.slow
class TestTauBenchTraces:
    @pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
    def test_every_run_ingests_with_its_calls_and_results(self, path: Path) -> None:
        """Every run ingests, with one call node per source call and open calls as in the source."""
        runs = json.loads(path.read_text(encoding="utf-8"))
        sessions = load_sessions(path, format="tau_bench")
        assert len(sessions) == len(runs)
        for run, session in zip(runs, sessions, strict=True):
            graph = ContextGraph(counter=WordCounter())
            graph.ingest(session.events)
            calls = sum(len(m.get("tool_calls") or []) for m in run["traj"])
            results = sum(1 for m in run["traj"] if m["role"] == "tool")
            assert len(graph.by_kind("tool_call")) == calls
            assert len(graph.by_kind("tool_result")) == results
            assert len(graph.unanswered_calls()) == len(_open_after(run["traj"]))
            assert len(session.events) == len(run["traj"])

    @pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
    def test_reused_call_ids_pair_with_the_latest_call(self, path: Path) -> None:
        """A reused call id is answered by the result after each call, not by the first call."""
        runs = json.loads(path.read_text(encoding="utf-8"))
        expected_reuse = 0
        for run in runs:
            ids = [c["id"] for m in run["traj"] for c in m.get("tool_calls") or []]
            expected_reuse += len(ids) - len(set(ids))
        reused = 0
        for session in load_sessions(path, format="tau_bench"):
            graph = ContextGraph(counter=WordCounter())
            graph.ingest(session.events)
            calls_so_far: dict[str, list[str]] = {}
            for node in graph:
                if isinstance(node, ToolCallNode):
                    reused += node.tool_call_id in calls_so_far
                    calls_so_far.setdefault(node.tool_call_id, []).append(node.id)
                elif node.kind == "tool_result":
                    call = graph.call_of(node.id)
                    assert call is not None
                    assert call.id == calls_so_far[call.tool_call_id][-1]
        assert reused == expected_reuse

    @pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
    def test_facts_are_the_gold_actions_and_outputs(self, path: Path) -> None:
        """Each gold action (name and argument values) and each output is one fact."""
        runs = json.loads(path.read_text(encoding="utf-8"))
        for run, session in zip(runs, load_sessions(path, format="tau_bench"), strict=True):
            task = run["info"]["task"]
            assert len(session.facts) == len(task["actions"]) + len(task["outputs"])
            for action, fact in zip(task["actions"], session.facts, strict=False):
                assert fact.startswith(action["name"] + "(")
                for value in action["kwargs"].values():
                    if isinstance(value, str):
                        assert json.dumps(value) in fact
            for output in task["outputs"]:
                assert output in session.facts

    @pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
    def test_sessions_are_named_by_task_and_trial(self, path: Path) -> None:
        """Each session is named `task-<id>-trial-<n>`."""
        runs = json.loads(path.read_text(encoding="utf-8"))
        names = [s.name for s in load_sessions(path, format="tau_bench")]
        assert names == [f"task-{r['task_id']}-trial-{r['trial']}" for r in runs]

    @pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
    def test_detect_format_picks_tau_bench(self, path: Path) -> None:
        """Auto-detection picks `tau_bench` for the shared tau-bench file."""
        assert detect_format(path) == "tau_bench"

    def test_claims_no_other_trace(self, other_trace: Path) -> None:
        """No other shared trace is taken for tau-bench."""
        assert not tau_bench.sniff(read_raw(other_trace))


class TestTauBenchImporter:
    def test_reused_id_in_hand_made_run(self, graph: ContextGraph) -> None:
        """Two calls sharing an id, each answered before the next, pair with their own results."""
        (session,) = load_sessions(RawInput([_run()]), format="tau_bench")
        graph.ingest(session.events)
        first, second = graph.by_kind("tool_call")
        answers = [graph.answer_to(first), graph.answer_to(second)]
        assert [a.text if a else None for a in answers] == ["one", "two"]
        assert graph.unanswered_calls() == ()

    def test_facts_format(self) -> None:
        """An action becomes `name(key=value, ...)` with JSON values; an output stays as is."""
        (session,) = load_sessions(RawInput([_run()]), format="tau_bench")
        assert session.facts == ['cancel(reservation_id="3RK2T9", n=2)', "327"]

    def test_run_without_info_has_no_facts(self) -> None:
        """A run without `info` has no facts."""
        run = _run()
        del run["info"]
        (session,) = load_sessions(RawInput([run]), format="tau_bench")
        assert session.facts == []

    def test_duplicate_names_get_the_run_index(self) -> None:
        """Two runs of the same task and trial get distinct names."""
        sessions = load_sessions(RawInput([_run(), _run()]), format="tau_bench")
        assert [s.name for s in sessions] == ["task-7-trial-0", "task-7-trial-0-run-1"]

    def test_meta_records_task_trial_and_reward(self) -> None:
        """Session metadata records the task id, trial and reward."""
        (session,) = load_sessions(RawInput([_run()]), format="tau_bench")
        assert session.meta == {"format": "tau_bench", "task_id": 7, "trial": 0, "reward": 1.0}

    def test_message_error_names_run_and_message(self, write_json: Callable[..., Path]) -> None:
        """A bad message in the second run names the file, the message index and the run's path."""
        bad = _run()
        bad["traj"][2]["tool_calls"][0]["function"]["arguments"] = 12
        path = write_json([_run(), bad], "runs.json")
        with pytest.raises(IngestError) as info:
            load_sessions(path, format="tau_bench")
        location = info.value.location
        assert (location.file, location.index) == (str(path), 2)
        assert location.path == "[1].traj[2].tool_calls[0].function.arguments"

    def test_orphan_result_fails_at_ingest_and_changes_nothing(
        self, graph: ContextGraph, write_json: Callable[..., Path]
    ) -> None:
        """A result with no earlier call is refused by the graph, naming its run and message."""
        run = _run()
        run["traj"].insert(2, {"role": "tool", "tool_call_id": "ghost", "content": "?"})
        path = write_json([run], "runs.json")
        (session,) = load_sessions(path, format="tau_bench")
        graph.ingest(session.events[:2])
        before = graph_snapshot(graph)
        with pytest.raises(IngestError) as info:
            graph.ingest(session.events[2:])
        location = info.value.location
        assert (location.file, location.index, location.path) == (str(path), 2, "[0].traj[2]")
        assert graph_snapshot(graph) == before

    @pytest.mark.parametrize(
        ("payload", "where"),
        [
            ({"runs": []}, None),
            ([5], "[0]"),
            ([_run(traj="x")], "[0].traj"),
            ([{"task_id": 1}], "[0].traj"),
            ([_run(task_id=None)], "[0].task_id"),
            ([_run(task_id=True)], "[0].task_id"),
            ([_run(trial="first")], "[0].trial"),
            ([_run(info=[])], "[0].info"),
            ([_run(info={"task": {"actions": {}}})], "[0].info.task.actions"),
            ([_run(info={"task": {"actions": [{"kwargs": {}}]}})], "[0].info.task.actions[0].name"),
            (
                [_run(info={"task": {"actions": [{"name": "a", "kwargs": 1}]}})],
                "[0].info.task.actions[0].kwargs",
            ),
            ([_run(traj=[{"role": "robot", "content": "x"}])], "[0].traj[0].role"),
        ],
        ids=[
            "not a list",
            "run not an object",
            "traj not a list",
            "traj missing",
            "task_id null",
            "task_id boolean",
            "trial not an integer",
            "info not an object",
            "actions not a list",
            "action without name",
            "kwargs not an object",
            "unknown role",
        ],
    )
    def test_malformed_runs_name_the_place(self, payload: Any, where: str | None) -> None:
        """Malformed runs raise `IngestError` at the run's JSON path."""
        with pytest.raises(IngestError) as info:
            load_sessions(RawInput(payload), format="tau_bench")
        assert info.value.location.path == where

    def test_deeply_nested_kwargs_are_refused(self) -> None:
        """Gold arguments too deep to encode are refused, naming the action."""
        junk: Any = []
        for _ in range(100_000):
            junk = [junk]
        run = _run(info={"task": {"actions": [{"name": "a", "kwargs": {"x": junk}}]}})
        with pytest.raises(IngestError) as info:
            load_sessions(RawInput([run]), format="tau_bench")
        assert info.value.location.path == "[0].info.task.actions[0]"


class TestTauBenchSniff:
    def test_claims_runs(self) -> None:
        """A list of runs with `traj` and `task_id` is recognized."""
        assert tau_bench.sniff(RawInput([_run(), _run(task_id=8)]))

    @pytest.mark.parametrize(
        "payload",
        [
            [{"role": "user", "content": "hi"}],
            {"messages": [{"role": "user", "content": "hi"}]},
            {"simulations": [{"messages": []}], "tasks": []},
            [{"traj": []}],
            [_run(), {"role": "user"}],
            [],
            None,
            "x",
            [[[]]],
        ],
        ids=[
            "openai",
            "openai-body",
            "tau2",
            "no task_id",
            "mixed",
            "empty",
            "null",
            "str",
            "junk",
        ],
    )
    def test_does_not_claim_others(self, payload: Any) -> None:
        """Other payloads and junk are not claimed, and sniffing never raises."""
        assert not tau_bench.sniff(RawInput(payload))
