from __future__ import annotations

import copy
import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from context_graph.errors import IngestError
from context_graph.graph.context_graph import ContextGraph
from context_graph.graph.nodes import ToolCallNode
from context_graph.importers import detect_format, load_events, load_sessions, tau2
from context_graph.importers._base import ImportedSession, RawInput
from context_graph.testing import graph_snapshot

REPO = Path(__file__).resolve().parents[3]
TRACES = REPO.parent / "shared" / "traces" / "tau2_bench_whissle_airline"
RUN_FILES = sorted(TRACES.glob("*.json")) if TRACES.is_dir() else []


def _load_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _cases() -> list[Any]:
    cases = []
    for path in RUN_FILES:
        for s, _ in enumerate(_load_json(path)["simulations"]):
            cases.append(pytest.param((path, s), id=f"{path.stem}-sim{s}"))
    return cases


CASES = _cases()


def _none(value: Any) -> Any:
    return None if value == "None" else value


def _agent_messages(sim: dict[str, Any]) -> list[dict[str, Any]]:
    """The messages the agent sees: user-requested tools and empty user turns left out."""
    kept = []
    for m in sim["messages"]:
        if m["role"] == "tool" and _none(m.get("requestor")) == "user":
            continue
        if m["role"] == "user" and not _none(m.get("content")):
            continue
        kept.append(m)
    return kept


def _calls(message: dict[str, Any]) -> list[dict[str, Any]]:
    calls = _none(message.get("tool_calls")) or []
    return [c for c in calls if _none(c.get("requestor")) != "user"]


def _expected_pairs(messages: list[dict[str, Any]]) -> list[int | None]:
    """For each tool message, the flat index of the call it answers by the tau2 protocol.

    tau2 runs a turn's calls and returns their results right after it, in call order, so
    a result answers the first unanswered call of the latest assistant turn with calls.
    """
    flat = 0
    open_calls: list[tuple[int, str]] = []
    pairs: list[int | None] = []
    for m in messages:
        if m["role"] == "assistant" and _calls(m):
            open_calls = []
            for c in _calls(m):
                open_calls.append((flat, c["id"]))
                flat += 1
        elif m["role"] == "tool":
            chosen = open_calls.pop(0) if open_calls else None
            assert chosen is None or chosen[1] == m["id"], "source breaks the tau2 protocol"
            pairs.append(chosen[0] if chosen else None)
    return pairs


def _echo(call: dict[str, Any], output: str) -> list[tuple[Any, Any]]:
    """(argument, echoed value) for the lookup keys a `get_*` result repeats from its call."""
    try:
        parsed = json.loads(output)
    except ValueError:
        return []
    args = call["arguments"]
    if not call["name"].startswith("get_") or not isinstance(parsed, dict):
        return []
    keys = ("reservation_id", "user_id")
    return [
        (args[k], parsed[k]) for k in keys if isinstance(args, dict) and k in args and k in parsed
    ]


def _policy(run: dict[str, Any], sim: dict[str, Any]) -> str:
    policy = _none(sim.get("policy"))
    return policy if isinstance(policy, str) else run["info"]["environment_info"]["policy"]


class _Imported:
    """A simulation as the source has it, and as the importer and the graph made it."""

    def __init__(self, path: Path, s: int) -> None:
        self.run = _load_json(path)
        self.sim = self.run["simulations"][s]
        self.sim_index = s
        self.session: ImportedSession = load_sessions(path, format="tau2")[s]
        self.graph = ContextGraph()
        self.graph.ingest(self.session.events)
        self.messages = _agent_messages(self.sim)


@pytest.fixture(name="imported", params=CASES, scope="module")
def imported_fixture(request: pytest.FixtureRequest) -> _Imported:
    path, s = request.param
    return _Imported(path, s)


class TestSharedTraces:
    def test_tool_calls_and_results_are_all_there(self, imported: _Imported) -> None:
        """Every agent tool call and tool result in the source becomes a node."""
        calls = [c for m in imported.messages if m["role"] == "assistant" for c in _calls(m)]
        results = [m for m in imported.messages if m["role"] == "tool"]
        graph = imported.graph
        assert len(graph.by_kind("tool_call")) == len(calls)
        assert len(graph.by_kind("tool_result")) == len(results)
        names = [n.name for n in graph if isinstance(n, ToolCallNode)]
        assert names == [c["name"] for c in calls]
        arguments = [json.loads(n.arguments) for n in graph if isinstance(n, ToolCallNode)]
        assert arguments == [c["arguments"] for c in calls]

    def test_results_pair_with_the_calls_the_source_answers(self, imported: _Imported) -> None:
        """Each result answers the call tau2 ran it for; calls the source answers are closed."""
        graph = imported.graph
        call_nodes = graph.by_kind("tool_call")
        expected = _expected_pairs(imported.messages)
        actual = []
        for result in graph.by_kind("tool_result"):
            call = graph.call_of(result)
            actual.append(call_nodes.index(call.id) if call is not None else None)
        assert actual == expected
        answered = {i for i in expected if i is not None}
        unanswered = tuple(c for i, c in enumerate(call_nodes) if i not in answered)
        assert graph.unanswered_calls() == unanswered

    def test_results_echo_their_calls_arguments(self, imported: _Imported) -> None:
        """Where a lookup result echoes its call's key, the graph paired it with that call."""
        calls = [c for m in imported.messages for c in _calls(m)]
        results = [m for m in imported.messages if m["role"] == "tool"]
        pairs = zip(_expected_pairs(imported.messages), results, strict=True)
        expected = [_echo(calls[i], r["content"]) for i, r in pairs if i is not None]
        graph = imported.graph
        actual = []
        for result in graph.by_kind("tool_result"):
            call = graph.call_of(result)
            assert call is not None
            source_call = {"name": call.name, "arguments": call.parsed_arguments}
            actual.append(_echo(source_call, graph[result].text))
        assert [e for e in actual if e] == [e for e in expected if e]
        assert all(a == b for echo in actual if echo for a, b in echo)

    def test_repeated_ids_pair_one_to_one(self, imported: _Imported) -> None:
        """Ids used by several calls give distinct call nodes, each with its own answer."""
        ids = Counter(c["id"] for m in imported.messages for c in _calls(m))
        graph = imported.graph
        for call_id in (i for i, n in ids.items() if n > 1):
            nodes = [c for c in graph.by_kind("tool_call") if graph[c].call_id == call_id]
            assert len(nodes) == ids[call_id]
            answers = [graph.answer_to(c) for c in nodes]
            assert all(a is not None for a in answers)
            assert len({a.id for a in answers if a is not None}) == len(nodes)

    def test_parallel_calls_share_one_unit(self, imported: _Imported) -> None:
        """A turn's parallel calls and their results sit in that turn's unit."""
        graph = imported.graph
        assistants = [m for m in imported.messages if m["role"] == "assistant"]
        nodes = graph.by_kind("assistant")
        assert len(nodes) == len(assistants)
        for node_id, message in zip(nodes, assistants, strict=True):
            unit = graph.unit_of(node_id)
            kinds = Counter(graph[n].kind for n in unit)
            n_calls = len(_calls(message))
            assert (kinds["tool_call"], kinds["tool_result"]) == (n_calls, n_calls)

    def test_greeting_comes_first_without_an_invented_user_turn(self, imported: _Imported) -> None:
        """A source that opens with the agent's greeting opens the graph with it, at turn 0."""
        graph = imported.graph
        first_source = imported.messages[0]
        first_node = graph[graph.transcript()[1]]
        assert first_node.kind == first_source["role"]
        if first_source["role"] == "assistant":
            assert first_node.text == (_none(first_source["content"]) or "")
            assert first_node.turn == 0
        users = [m for m in imported.messages if m["role"] == "user"]
        assert graph.turns == len(users)

    def test_system_prompt_is_the_policy(self, imported: _Imported) -> None:
        """The run's policy is the first node: a pinned system prompt."""
        graph = imported.graph
        head = graph[graph.transcript()[0]]
        assert (head.kind, head.pinned) == ("system", True)
        assert head.text == _policy(imported.run, imported.sim)

    def test_none_strings_are_read_as_null(self, imported: _Imported) -> None:
        """Optional fields that hold `'None'` give no text; a tool's own `None` output stays."""
        graph = imported.graph
        texts = [graph[n].text for n in graph.by_kind("assistant") + graph.by_kind("user")]
        assert "None" not in texts
        assert all(e.timestamp != "None" for e in imported.session.events)
        tool_nones = [
            m for m in imported.messages if m["role"] == "tool" and m["content"] == "None"
        ]
        results = [graph[n].text for n in graph.by_kind("tool_result")]
        assert results.count("None") == len(tool_nones)

    def test_facts_are_the_tasks_gold(self, imported: _Imported) -> None:
        """The task's expected actions and information to communicate are the session's facts."""
        task = next(
            t for t in imported.run["tasks"] if str(t["id"]) == str(imported.sim["task_id"])
        )
        criteria = task["evaluation_criteria"]
        expected = [
            f"action: {a['name']} {json.dumps(a['arguments'] or {}, ensure_ascii=False)}"
            for a in criteria.get("actions") or []
        ]
        for key in ("communicate_info", "outputs"):
            expected += [f"communicate: {c}" for c in criteria.get(key) or []]
        assert imported.session.facts == expected

    def test_session_is_named_by_task_and_trial(self, imported: _Imported) -> None:
        """The session's name holds the task id and the trial."""
        sim = imported.sim
        assert imported.session.name == f"task-{sim['task_id']}-trial-{sim['trial']}"
        assert imported.session.meta["task_id"] == str(sim["task_id"])

    def test_events_name_their_place(self, imported: _Imported) -> None:
        """Every message event names the file, its message index and its JSON path."""
        for event in imported.session.events[1:]:
            assert event.source is not None
            assert event.source.file is not None
            assert (
                event.source.path
                == f"simulations[{imported.sim_index}].messages[{event.source.index}]"
            )


class TestSessions:
    @pytest.mark.parametrize("path", RUN_FILES, ids=[p.stem for p in RUN_FILES])
    def test_one_session_per_simulation(self, path: Path) -> None:
        """A run gives one session per simulation, with distinct names."""
        run = _load_json(path)
        sessions = load_sessions(path, format="tau2")
        assert len(sessions) == len(run["simulations"])
        assert len({s.name for s in sessions}) == len(sessions)
        gold = [t for t in run["tasks"] if (t.get("evaluation_criteria") or {}).get("actions")]
        assert bool(gold) == any(s.facts for s in sessions)


# --- hand-made runs -------------------------------------------------------------------------


def _run(messages: list[dict[str, Any]], **sim: Any) -> dict[str, Any]:
    return {
        "info": {
            "agent_info": {"llm": "m"},
            "environment_info": {"domain_name": "airline", "policy": "POLICY"},
        },
        "tasks": [{"id": "7", "evaluation_criteria": {"actions": [], "communicate_info": ["42"]}}],
        "simulations": [{"task_id": "7", "trial": 1, "messages": messages, **sim}],
    }


GREET = {"role": "assistant", "content": "Hi!", "tool_calls": None}
ASK = {"role": "user", "content": "book it", "tool_calls": None}


def _call_msg(*calls: tuple[str, str, Any]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": i, "name": n, "arguments": a} for i, n, a in calls],
    }


def _tool_msg(call_id: str, content: str, error: Any = False, **extra: Any) -> dict[str, Any]:
    return {"role": "tool", "id": call_id, "content": content, "error": error, **extra}


def _dumps(session: ImportedSession) -> list[dict[str, Any]]:
    return [e.model_dump(mode="json") for e in session.events]


class TestHandMade:
    def test_none_strings_equal_nulls(self) -> None:
        """A run whose optional fields hold `'None'` imports exactly like one with nulls."""
        plain = _run([GREET, ASK, _call_msg(("a", "f", {"x": 1})), _tool_msg("a", "ok"), GREET])
        reprs = copy.deepcopy(plain)
        for m in reprs["simulations"][0]["messages"]:
            for key in ("content", "tool_calls", "timestamp", "requestor"):
                if m.get(key) is None:
                    m[key] = "None"
            if m["role"] == "tool":
                m["error"] = "False"
        one, two = (tau2.to_sessions(RawInput(r))[0] for r in (plain, reprs))
        assert _dumps(one) == _dumps(two)

    def test_python_repr_fields_are_parsed(self) -> None:
        """Python-repr arguments and tool-call lists are read as the literals they spell."""
        calls = "[{'id': 'a', 'name': 'f', 'arguments': \"{'x': 1, 'y': None}\"}]"
        run = _run([GREET, ASK, {**_call_msg(), "tool_calls": calls}, _tool_msg("a", "ok", "True")])
        events = tau2.to_sessions(RawInput(run))[0].events
        assert events[3].tool_calls[0].arguments == '{"x": 1, "y": null}'
        assert events[4].is_error is True

    def test_user_side_tools_are_left_out(self) -> None:
        """Calls the user simulator makes, and their results, are not in the agent's session."""
        user_call = {
            "role": "user",
            "content": None,
            "tool_calls": [{"id": "u", "name": "toggle", "arguments": {}, "requestor": "user"}],
        }
        messages = [GREET, ASK, user_call, _tool_msg("u", "done", requestor="user"), GREET]
        events = tau2.to_sessions(RawInput(_run(messages)))[0].events
        assert [e.type for e in events] == ["system", "assistant", "user", "assistant"]

    def test_policy_falls_back_to_the_environment_info(self) -> None:
        """Without a per-simulation policy the run's environment policy is the system prompt."""
        with_own = tau2.to_sessions(RawInput(_run([GREET], policy="OWN")))[0]
        without = tau2.to_sessions(RawInput(_run([GREET])))[0]
        assert (with_own.events[0].content[0].text, without.events[0].content[0].text) == (
            "OWN",
            "POLICY",
        )

    def test_parallel_calls_sharing_an_id_pair_in_order(self) -> None:
        """Parallel calls that share one id are answered in call order."""
        calls = _call_msg(("g_0", "f", {"n": 1}), ("g_0", "f", {"n": 2}))
        run = _run([GREET, ASK, calls, _tool_msg("g_0", "one"), _tool_msg("g_0", "two")])
        graph = ContextGraph()
        graph.ingest(tau2.to_sessions(RawInput(run))[0].events)
        answers = {graph[r].text: graph.call_of(r) for r in graph.by_kind("tool_result")}
        assert {t: c.arguments for t, c in answers.items() if c} == {
            "one": '{"n": 1}',
            "two": '{"n": 2}',
        }

    def test_facts_and_missing_task(self) -> None:
        """A known task gives its facts; a simulation of an unknown task gets none."""
        run = _run([GREET])
        run["simulations"].append({"task_id": 99, "trial": 0, "messages": [GREET]})
        known, unknown = tau2.to_sessions(RawInput(run))
        assert (known.facts, unknown.facts) == (["communicate: 42"], [])
        assert (known.name, unknown.name) == ("task-7-trial-1", "task-99-trial-0")


def _bad_cases() -> list[Any]:
    """(id, run, message index, JSON path, words in the reason)."""
    tool_path = "simulations[0].messages[1]"
    return [
        pytest.param(
            {"info": {}, "simulations": {}}, None, "simulations", "must be an array", id="sims"
        ),
        pytest.param(_run([GREET, 5]), 1, tool_path, "must be an object", id="msg-not-object"),
        pytest.param(
            _run([GREET, {"role": "system", "content": "x"}]),
            1,
            f"{tool_path}.role",
            "unknown role",
            id="unknown-role",
        ),
        pytest.param(
            _run([GREET, {"role": "tool", "content": "x"}]),
            1,
            f"{tool_path}.id",
            "must be a string",
            id="result-without-id",
        ),
        pytest.param(
            _run([GREET, _call_msg(("a", "", {}))]),
            1,
            f"{tool_path}.tool_calls[0].name",
            "must not be empty",
            id="call-name-empty",
        ),
        pytest.param(
            _run([GREET, _call_msg(("a", "f", [1]))]),
            1,
            f"{tool_path}.tool_calls[0].arguments",
            "must be an object",
            id="arguments-not-object",
        ),
        pytest.param(
            _run([GREET, _call_msg(("a", "f", "not {json"))]),
            1,
            f"{tool_path}.tool_calls[0].arguments",
            "neither JSON nor a Python literal",
            id="arguments-garbage",
        ),
        pytest.param(
            _run([GREET, _call_msg(("a", "f", {})), _tool_msg("a", "x", "maybe")]),
            2,
            "simulations[0].messages[2].error",
            "must be a boolean",
            id="error-flag",
        ),
        pytest.param(
            _run([GREET, {"role": "user", "content": ["x"]}]),
            1,
            f"{tool_path}.content",
            "must be a string",
            id="content-not-str",
        ),
        pytest.param(
            {"info": {}, "tasks": [{"id": None}], "simulations": []},
            None,
            "tasks[0].id",
            "must be a string",
            id="task-id",
        ),
    ]


class TestMalformedInput:
    @pytest.mark.parametrize(("run", "index", "path", "reason"), _bad_cases())
    def test_error_names_file_message_and_path(
        self,
        graph: ContextGraph,
        write_json: Callable[..., Path],
        run: Any,
        index: int | None,
        path: str,
        reason: str,
    ) -> None:
        """Bad input raises IngestError naming the file, message index and JSON path."""
        file = write_json(run, "run.json")
        graph.add_user("before")
        before = graph_snapshot(graph)
        with pytest.raises(IngestError) as caught:
            graph.ingest(load_events(file, format="tau2"))
        where = caught.value.location
        assert (where.file, where.index, where.path) == (str(file), index, path)
        assert reason in caught.value.reason
        assert graph_snapshot(graph) == before

    def test_orphan_result_is_named_by_the_graph(
        self, graph: ContextGraph, write_json: Callable[..., Path]
    ) -> None:
        """A result whose id no call has fails the ingest at its message; the graph is unchanged."""
        file = write_json(_run([GREET, ASK, _tool_msg("ghost", "x")]), "run.json")
        events = load_events(file, format="tau2")
        graph.add_user("before")
        before = graph_snapshot(graph)
        with pytest.raises(IngestError, match="no matching tool call") as caught:
            graph.ingest(events)
        where = caught.value.location
        assert (where.file, where.index, where.path) == (
            str(file),
            2,
            "simulations[0].messages[2]",
        )
        assert graph_snapshot(graph) == before


class TestSniff:
    def test_claims_tau2_runs(self) -> None:
        """A tau2 run object is recognized."""
        assert tau2.sniff(RawInput(_run([GREET])))

    @pytest.mark.parametrize(
        "data",
        [
            [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": None, "tool_calls": []},
            ],
            {
                "system": "s",
                "messages": [{"role": "user", "content": [{"type": "text", "text": "x"}]}],
            },
            [{"task_id": 0, "traj": [{"role": "user", "content": "hi"}]}],
            [{"type": "user", "uuid": "u", "message": {"role": "user", "content": "hi"}}],
            {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]},
            None,
            {"simulations": "x", "info": {}},
            {"simulations": [1], "tasks": []},
        ],
        ids=["openai", "anthropic", "tau_bench", "claude_code", "gemini", "none", "str", "int"],
    )
    def test_leaves_other_input_alone(self, data: Any) -> None:
        """Other formats and odd input are not claimed, and sniffing never raises."""
        assert tau2.sniff(RawInput(data)) is False


class TestDetectFormat:
    @pytest.mark.parametrize("path", RUN_FILES, ids=[p.stem for p in RUN_FILES])
    def test_picks_tau2_for_the_shared_runs(self, path: Path) -> None:
        """The shared tau2 run files are detected as tau2."""
        assert detect_format(path) == "tau2"

    @pytest.mark.parametrize(
        "data",
        [
            [{"role": "user", "content": "hi"}],
            {"messages": [{"role": "user", "content": [{"type": "text", "text": "x"}]}]},
        ],
        ids=["openai", "anthropic"],
    )
    def test_not_tau2_for_provider_payloads(self, data: Any) -> None:
        """OpenAI message lists and Anthropic payloads are detected as something else."""
        try:
            found = detect_format(data)
        except IngestError:
            found = None
        assert found != "tau2"
