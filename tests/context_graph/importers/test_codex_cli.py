from __future__ import annotations

import copy
import functools
import json
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from context_graph.errors import BudgetExceededError, IngestError
from context_graph.graph.content import ReasoningPart, TextPart
from context_graph.graph.context_graph import ContextGraph
from context_graph.graph.events import (
    AssistantTurn,
    Compaction,
    SystemPrompt,
    ToolResult,
    UserTurn,
)
from context_graph.graph.nodes import SummaryNode, ToolCallNode
from context_graph.importers import RawInput, codex_cli, detect_format, load_sessions, read_raw
from context_graph.render import Renderer
from context_graph.testing import graph_snapshot
from context_graph.validate import validate

TRACES = Path(__file__).resolve().parents[3].parent / "shared" / "traces"
FAMILY = TRACES / "codex_cli"
FILES = sorted(FAMILY.rglob("*.jsonl")) if FAMILY.is_dir() else []
ACIDIC = next((p for p in FILES if "AcidicSoil" in str(p)), None)
CODEMIE = next((p for p in FILES if "codemie" in str(p)), None)
needs_traces = pytest.mark.skipif(not FILES, reason="shared Codex CLI traces are absent")

Record = dict[str, Any]


@functools.cache
def _records(path: Path) -> list[tuple[int, Record]]:
    """Every record with its 1-based line number, read independently of the importer."""
    lines = path.read_text("utf-8").split("\n")
    return [(n, json.loads(line)) for n, line in enumerate(lines, start=1) if line.strip()]


def _items(path: Path, kind: str) -> list[tuple[int, Record]]:
    return [
        (n, r["payload"])
        for n, r in _records(path)
        if r["type"] == "response_item" and r["payload"].get("type") == kind
    ]


@functools.cache
def _events(path: Path) -> list[Any]:
    (session,) = load_sessions(path)
    return session.events


def _write(tmp_path: Path, records: list[Any], name: str = "rollout.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in records), "utf-8")
    return path


def _item(payload: Record, ts: str = "2026-01-01T00:00:00Z") -> Record:
    return {"timestamp": ts, "type": "response_item", "payload": payload}


def _user(text: str) -> Record:
    return _item(
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}
    )


def _say(text: str) -> Record:
    content = [{"type": "output_text", "text": text}]
    return _item({"type": "message", "role": "assistant", "content": content})


META = {
    "type": "session_meta",
    "payload": {"id": "s-1", "cwd": "/w", "base_instructions": {"text": "You are Codex."}},
}


@needs_traces
class TestSharedTraces:
    @pytest.mark.parametrize("path", FILES, ids=lambda p: p.parent.name)
    def test_detected_as_codex(self, path: Path) -> None:
        """Each rollout is detected as a Codex CLI session."""
        assert detect_format(path) == "codex_cli"

    def test_base_instructions_become_the_system_prompt(self) -> None:
        """`session_meta.base_instructions.text` is the first event, a system prompt."""
        assert CODEMIE is not None
        text = _records(CODEMIE)[0][1]["payload"]["base_instructions"]["text"]
        first = _events(CODEMIE)[0]
        assert isinstance(first, SystemPrompt) and first.content == (TextPart(text=text),)

    def test_developer_messages_are_system_prompts(self) -> None:
        """The developer message (permissions, collaboration mode) is a developer system prompt."""
        assert CODEMIE is not None
        (line, developer), *_ = [
            (n, m) for n, m in _items(CODEMIE, "message") if m["role"] == "developer"
        ]
        (event,) = [e for e in _events(CODEMIE) if e.source.line == line]
        assert isinstance(event, SystemPrompt) and event.meta == {"role": "developer"}
        assert [p.text for p in event.content] == [p["text"] for p in developer["content"]]

    def test_assistant_messages_are_text_in_order(self) -> None:
        """Each assistant `message`'s `output_text` is a text part of a turn, in file order."""
        assert CODEMIE is not None
        said = [
            part["text"]
            for _, m in _items(CODEMIE, "message")
            if m["role"] == "assistant"
            for part in m["content"]
        ]
        texts = [
            p.text
            for e in _events(CODEMIE)
            if isinstance(e, AssistantTurn)
            for p in e.content
            if isinstance(p, TextPart)
        ]
        assert texts == said and len(said) == 13
        phases = [e.meta.get("phase") for e in _events(CODEMIE) if isinstance(e, AssistantTurn)]
        assert "commentary" in phases

    @pytest.mark.parametrize("path", FILES, ids=lambda p: p.parent.name)
    def test_harness_context_messages_are_notices(self, path: Path) -> None:
        """`<environment_context>` and AGENTS.md messages are notices; user requests are not."""
        users = [e for e in _events(path) if isinstance(e, UserTurn)]
        for turn in users:
            text = "\n".join(p.text for p in turn.content if isinstance(p, TextPart))
            harness = text.startswith(("<environment_context>", "# AGENTS.md instructions"))
            assert turn.notice is harness, text[:60]
        assert any(t.notice for t in users) and any(not t.notice for t in users)

    @pytest.mark.parametrize("path", FILES, ids=lambda p: p.parent.name)
    def test_event_messages_are_not_content(self, path: Path) -> None:
        """`event_msg` records repeat items: only response items become user turns and results."""
        users = [m for _, m in _items(path, "message") if m["role"] == "user"]
        outputs = _items(path, "function_call_output") + _items(path, "custom_tool_call_output")
        events = _events(path)
        assert len([e for e in events if isinstance(e, UserTurn)]) == len(users)
        assert len([e for e in events if isinstance(e, ToolResult)]) == len(outputs)

    @pytest.mark.parametrize("path", FILES, ids=lambda p: p.parent.name)
    def test_token_count_usage_is_session_meta(self, path: Path) -> None:
        """The last `token_count` with info gives the session's usage and context window."""
        infos = [
            r["payload"]["info"]
            for _, r in _records(path)
            if r["type"] == "event_msg"
            and r["payload"]["type"] == "token_count"
            and r["payload"]["info"]
        ]
        (session,) = load_sessions(path)
        assert session.meta["usage"] == infos[-1]["total_token_usage"]
        assert session.meta["model_context_window"] == infos[-1]["model_context_window"]
        assert "event_msg.user_message" in session.meta["skipped_records"]

    @pytest.mark.parametrize("path", FILES, ids=lambda p: p.parent.name)
    def test_function_calls_keep_their_arguments_exactly(self, path: Path) -> None:
        """Every `function_call` is a call with its `call_id` and the very `arguments` text."""
        calls = {
            c.id: c for e in _events(path) if isinstance(e, AssistantTurn) for c in e.tool_calls
        }
        for _, item in _items(path, "function_call"):
            call = calls[item["call_id"]]
            assert (call.name, call.arguments, call.meta) == (item["name"], item["arguments"], {})

    @pytest.mark.parametrize("path", FILES, ids=lambda p: p.parent.name)
    def test_results_answer_their_calls(self, path: Path) -> None:
        """Each output answers its call by `call_id` in the graph, output text unchanged."""
        graph = ContextGraph()
        graph.ingest(_events(path))
        outputs = {i["call_id"]: i["output"] for _, i in _items(path, "function_call_output")}
        results = [e for e in _events(path) if isinstance(e, ToolResult)]
        for result in results:
            if result.call_id in outputs:
                assert result.content == (TextPart(text=outputs[result.call_id]),)

    @pytest.mark.parametrize("path", FILES, ids=lambda p: p.parent.name)
    def test_json_outputs_give_their_exit_code(self, path: Path) -> None:
        """An output written as `{"output", "metadata": {"exit_code"}}` gives `exit_code`."""
        recorded: dict[str, int | None] = {}
        for kind in ("function_call_output", "custom_tool_call_output"):
            for _, item in _items(path, kind):
                try:
                    decoded = json.loads(item["output"])
                except ValueError:
                    decoded = None
                metadata = decoded.get("metadata") if isinstance(decoded, dict) else None
                recorded[item["call_id"]] = (metadata or {}).get("exit_code")
        results = {e.call_id: e.exit_code for e in _events(path) if isinstance(e, ToolResult)}
        assert results == recorded

    def test_custom_tool_calls_take_raw_text(self) -> None:
        """`apply_patch` calls keep their raw input; call and output carry `responses_type`."""
        assert CODEMIE is not None
        custom = _items(CODEMIE, "custom_tool_call")
        assert len(custom) == 3
        graph = ContextGraph()
        graph.ingest(_events(CODEMIE))
        nodes = {n.tool_call_id: n for n in graph if isinstance(n, ToolCallNode)}
        for _, item in custom:
            node = nodes[item["call_id"]]
            assert (node.name, node.arguments) == ("apply_patch", item["input"])
            assert node.meta == {"responses_type": "custom_tool_call"}
        outputs = [e for e in _events(CODEMIE) if isinstance(e, ToolResult) and e.meta]
        assert [e.call_id for e in outputs] == [i["call_id"] for _, i in custom]
        assert {e.meta["responses_type"] for e in outputs} == {"custom_tool_call_output"}

    def test_web_search_calls_are_kept_in_the_turn_meta(self) -> None:
        """Each `web_search_call` is kept, as recorded, in its assistant turn's meta."""
        assert CODEMIE is not None
        searches = [i for _, i in _items(CODEMIE, "web_search_call")]
        kept = [
            item
            for e in _events(CODEMIE)
            if isinstance(e, AssistantTurn)
            for item in e.meta.get("responses_items", [])
        ]
        assert kept == searches and len(kept) == 3

    @pytest.mark.parametrize("path", FILES, ids=lambda p: p.parent.name)
    def test_reasoning_is_kept_byte_for_byte(self, path: Path) -> None:
        """Every reasoning item is a part of its turn, encrypted content and summary unchanged."""
        parts = [
            p
            for e in _events(path)
            if isinstance(e, AssistantTurn)
            for p in e.content
            if isinstance(p, ReasoningPart)
        ]
        items = _items(path, "reasoning")
        assert [p.encrypted_content for p in parts] == [i["encrypted_content"] for _, i in items]
        assert [list(p.summary) for p in parts] == [
            [s["text"] for s in i["summary"]] for _, i in items
        ]

    def test_ghost_snapshots_are_skipped(self) -> None:
        """The `ghost_snapshot` item (Codex's undo snapshot) is counted as skipped, not content."""
        assert ACIDIC is not None
        (session,) = load_sessions(ACIDIC)
        assert session.meta["skipped_records"]["response_item.ghost_snapshot"] == 1

    def test_turn_context_names_the_model(self) -> None:
        """Assistant turns carry the model `turn_context` named; the session lists the models."""
        assert ACIDIC is not None
        (session,) = load_sessions(ACIDIC)
        turns = [e for e in session.events if isinstance(e, AssistantTurn)]
        assert {t.model for t in turns} == {"gpt-5.1-codex"}
        assert session.meta["models"] == ["gpt-5.1-codex"]

    def test_a_session_that_stops_mid_task_has_no_assistant_text(self) -> None:
        """AcidicSoil has no assistant message: turns of reasoning and calls, then a result."""
        assert ACIDIC is not None
        events = _events(ACIDIC)
        turns = [e for e in events if isinstance(e, AssistantTurn)]
        assert len(turns) == 39 and all(t.tool_calls for t in turns)
        assert not any(isinstance(p, TextPart) for t in turns for p in t.content)
        assert isinstance(events[-1], ToolResult)
        assert not any(isinstance(e, SystemPrompt) for e in events)  # none recorded

    @pytest.mark.parametrize("path", FILES, ids=lambda p: p.parent.name)
    def test_every_event_names_its_line(self, path: Path) -> None:
        """Each event's source is the file and line of its record."""
        lines = {n for n, _ in _records(path)}
        for event in _events(path):
            assert event.source.file == str(path) and event.source.line in lines

    @pytest.mark.parametrize("path", FILES, ids=lambda p: p.parent.name)
    @pytest.mark.parametrize("fmt", ["openai", "anthropic", "gemini"])
    def test_renders_valid_under_a_budget(self, path: Path, fmt: str) -> None:
        """Under a tight budget the session renders a valid request in each existing format."""
        graph = ContextGraph()
        graph.ingest(_events(path))
        renderer = Renderer(format=fmt)  # type: ignore[arg-type]
        try:
            result = renderer.render(graph, budget=8_000)
        except BudgetExceededError as exc:  # the floor alone is larger: render at its size
            result = renderer.render(graph, budget=exc.required)
        assert validate(result.payload, fmt) == []
        assert len(result.dropped) > 0


class TestExitCode:
    def _result(self, tmp_path: Path, output: Any) -> ToolResult:
        call = {"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "c1"}
        answer = {"type": "function_call_output", "call_id": "c1", "output": output}
        records = [META, _user("list"), _item(call), _item(answer)]
        (session,) = load_sessions(_write(tmp_path, records))
        (result,) = [e for e in session.events if isinstance(e, ToolResult)]
        return result

    def test_the_metadata_exit_code_is_the_results(self, tmp_path: Path) -> None:
        """A shell output's `metadata.exit_code` is the result's; the text stays whole."""
        output = json.dumps({"output": "ls: x: No such file", "metadata": {"exit_code": 2}})
        result = self._result(tmp_path, output)
        assert result.exit_code == 2 and result.content == (TextPart(text=output),)

    @pytest.mark.parametrize(
        "output",
        [
            "Process exited with code 1\nOutput:\n",
            json.dumps({"output": "x", "metadata": {"exit_code": True}}),
            json.dumps({"output": "x", "metadata": {"exit_code": "1"}}),
            json.dumps({"output": "x", "metadata": {"exit_code": 2**40}}),
            json.dumps({"output": "x", "metadata": "exit_code"}),
            json.dumps(["exit_code", 1]),
            '{"exit_code": 1',
        ],
    )
    def test_anything_else_gives_none(self, tmp_path: Path, output: str) -> None:
        """Plain text, odd metadata and broken JSON give no exit code and no error."""
        assert self._result(tmp_path, output).exit_code is None


class TestCompaction:
    def _session(self, tmp_path: Path, *compacted: Record) -> list[Any]:
        records: list[Any] = [META, _user("first task"), _say("done one")]
        for index, payload in enumerate(compacted):
            records += [
                {"type": "compacted", "payload": payload},
                _user(f"task {index + 2}"),
                _say("ok"),
            ]
        (session,) = load_sessions(_write(tmp_path, records))
        return session.events

    def test_replacement_history_becomes_a_compaction(self, tmp_path: Path) -> None:
        """A `compacted` record is a Compaction of the replacement history's readable messages."""
        history = [
            {
                "type": "message",
                "role": "developer",
                "content": [{"type": "input_text", "text": "perms"}],
            },
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "first task"}],
            },
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "SUMMARY: one done"}],
            },
            {"type": "reasoning", "summary": [], "encrypted_content": "gAAA"},
        ]
        events = self._session(tmp_path, {"message": "one done", "replacement_history": history})
        (compaction,) = [e for e in events if isinstance(e, Compaction)]
        assert compaction.origin == "codex_cli"
        assert compaction.native is None
        assert compaction.content == (
            TextPart(text="first task"),
            TextPart(text="SUMMARY: one done"),
        )
        assert compaction.meta == {"unreadable_items": 1}

    @pytest.mark.parametrize("kind", ["compaction", "compaction_summary"])
    def test_a_remote_compaction_keeps_its_item(self, tmp_path: Path, kind: str) -> None:
        """A replacement history ending in a compaction item is that native compaction."""
        history = [
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "first task"}],
            },
            {"type": kind, "encrypted_content": "gAAA-opaque"},
        ]
        events = self._session(tmp_path, {"message": "", "replacement_history": history})
        (compaction,) = [e for e in events if isinstance(e, Compaction)]
        assert compaction.origin == "codex_cli"
        assert compaction.native is not None
        assert dict(compaction.native.item) == {
            "type": "compaction",
            "encrypted_content": "gAAA-opaque",
        }
        assert compaction.meta == {}

    def test_a_remote_compaction_renders_as_codex_sent_it(self, tmp_path: Path) -> None:
        """To Responses: the user's messages, the item, then what followed; nothing else."""
        history = [
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "first task"}],
            },
            {"type": "compaction", "encrypted_content": "gAAA-opaque"},
        ]
        graph = ContextGraph()
        graph.ingest(self._session(tmp_path, {"replacement_history": history}))
        payload = Renderer(format="responses").render(graph).payload
        assert validate(payload, "responses") == []
        users = [i["content"][0]["text"] for i in payload["input"] if i.get("role") == "user"]
        assert users == ["first task", "task 2"]
        assert payload["input"][1] == {"type": "compaction", "encrypted_content": "gAAA-opaque"}
        assert "done one" not in json.dumps(payload)  # what the item stands for

    def test_message_only_compaction(self, tmp_path: Path) -> None:
        """An older `compacted` record with only `message` uses it as the summary."""
        events = self._session(tmp_path, {"message": "the summary"})
        (compaction,) = [e for e in events if isinstance(e, Compaction)]
        assert compaction.content == (TextPart(text="the summary"),)

    def test_two_compactions_chain(self, tmp_path: Path) -> None:
        """The second compaction stands for everything before it, the first one included."""
        events = self._session(tmp_path, {"message": "s1"}, {"message": "s2"})
        graph = ContextGraph()
        graph.ingest(events)
        first, second = [n for n in graph if isinstance(n, SummaryNode)]
        order = [n.id for n in graph]
        assert graph.covered(second.id) == tuple(order[: order.index(second.id)])
        assert second.abstracts[0] == first.id
        body = Renderer(format="openai").render(graph).payload
        texts = [m.get("content") for m in body["messages"]]
        assert "s2" in texts and "first task" not in texts and "task 2" not in texts

    def test_context_compacted_event_is_skipped(self, tmp_path: Path) -> None:
        """The UI's `context_compacted` event repeats the record: it is counted, not content."""
        event = {"type": "event_msg", "payload": {"type": "context_compacted"}}
        (session,) = load_sessions(_write(tmp_path, [META, _user("x"), event]))
        assert session.meta["skipped_records"] == {"event_msg.context_compacted": 1}
        assert len(session.events) == 2


class TestDetection:
    def test_shared_traces_of_other_agents_are_not_claimed(self, other_trace: Path) -> None:
        """No trace outside codex_cli/ is taken for a Codex rollout."""
        from context_graph.importers import read_raw

        assert not codex_cli.sniff(read_raw(other_trace))

    @given(
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=5),
            lambda kids: (
                st.lists(kids, max_size=4)
                | st.dictionaries(
                    st.sampled_from(["type", "payload", "timestamp"]), kids, max_size=3
                )
            ),
            max_leaves=10,
        )
    )
    def test_sniff_never_raises(self, data: Any) -> None:
        """Any JSON value is answered yes or no, never with an exception."""
        assert codex_cli.sniff(RawInput(data)) in (True, False)


class TestMalformed:
    @pytest.mark.parametrize(
        ("record", "path"),
        [
            ([1, 2], None),
            ({"payload": {}}, "type"),
            ({"type": "response_item", "payload": 3}, "payload"),
            ({"type": "response_item", "timestamp": 5, "payload": {}}, "timestamp"),
            (
                _item(
                    {
                        "type": "message",
                        "role": "user",
                        "content": [{"type": "input_text", "text": 1}],
                    }
                ),
                "payload.content[0].text",
            ),
            (_item({"type": "message", "role": "robot", "content": []}), "payload.role"),
            (
                _item({"type": "function_call_output", "call_id": "never", "output": "x"}),
                "payload.call_id",
            ),
            (
                _item({"type": "reasoning", "summary": [], "encrypted_content": ["x"]}),
                "payload.encrypted_content",
            ),
            (
                _item(
                    {"type": "custom_tool_call", "call_id": "c", "name": "apply_patch", "input": {}}
                ),
                "payload.input",
            ),
            (
                {"type": "session_meta", "payload": {"base_instructions": {"text": 3}}},
                "payload.base_instructions.text",
            ),
            ({"type": "turn_context", "payload": {"model": ["gpt"]}}, "payload.model"),
            (
                {"type": "event_msg", "payload": {"type": "token_count", "info": "x"}},
                "payload.info",
            ),
            ({"type": "compacted", "payload": {"message": 4}}, "payload.message"),
            (
                {
                    "type": "compacted",
                    "payload": {"replacement_history": [{"type": "message", "role": "user"}]},
                },
                "payload.replacement_history[0]",
            ),
        ],
        ids=[
            "not an object",
            "no type",
            "payload a number",
            "timestamp a number",
            "text a number",
            "unknown role",
            "output without call",
            "encrypted content a list",
            "custom input an object",
            "instructions text a number",
            "model a list",
            "token info a string",
            "compaction message a number",
            "replacement without content",
        ],
    )
    def test_bad_record_names_file_line_and_path(
        self, tmp_path: Path, record: Any, path: str | None
    ) -> None:
        """A malformed record raises `IngestError` naming the file, its line and the field."""
        file = _write(tmp_path, [META, _user("hi"), record])
        with pytest.raises(IngestError) as caught:
            load_sessions(file, format="codex_cli")
        location = caught.value.location
        assert (location.file, location.line, location.path) == (str(file), 3, path)

    @given(
        line=st.integers(1, 4),
        junk=st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=4),
            lambda kids: (
                st.lists(kids, max_size=3)
                | st.dictionaries(
                    st.sampled_from(["type", "payload", "role", "content", "call_id", "output"]),
                    kids,
                    max_size=3,
                )
            ),
            max_leaves=8,
        ),
    )
    def test_a_hostile_line_gives_a_typed_error_and_changes_nothing(
        self, line: int, junk: Any
    ) -> None:
        """A record replaced by hostile JSON: it ingests, or an IngestError names its line."""
        records: list[Any] = [
            META,
            _user("fix it"),
            _item({"type": "function_call", "call_id": "c1", "name": "shell", "arguments": "{}"}),
            _item({"type": "function_call_output", "call_id": "c1", "output": "ok"}),
            _say("fixed"),
        ]
        records[line] = junk
        graph = ContextGraph()
        graph.add_system("kept")
        before = graph_snapshot(graph)
        lines = tuple(range(1, len(records) + 1))
        try:
            (session,) = load_sessions(
                RawInput(records, Path("r.jsonl"), lines), format="codex_cli"
            )
            graph.ingest(session.events)
        except IngestError as exc:
            assert exc.location is not None and exc.location.line in lines
            assert graph_snapshot(graph) == before


JUNK: tuple[Any, ...] = (None, [], {}, [1, "x"], {"type": ["text"]}, -1, "", "x" * 3, 10**40, True)


@pytest.mark.slow
@needs_traces
@pytest.mark.parametrize("trace", FILES, ids=lambda p: p.parent.name)
def test_mutated_rollouts_give_a_typed_error_or_a_valid_render(trace: Path, tmp_path: Path) -> None:
    """A rollout value replaced by junk: an IngestError with file and line, or a valid render."""
    records = [r for _, r in _records(trace)]
    rng = random.Random(f"{trace.name}:fuzz")
    for n in range(8):
        mutated = copy.deepcopy(records)
        index = rng.randrange(len(mutated))
        record = mutated[index]
        keys = list(record["payload"]) if isinstance(record.get("payload"), dict) else []
        if keys:
            record["payload"][rng.choice(keys)] = rng.choice(JUNK)
        else:
            mutated[index] = rng.choice(JUNK)
        path = _write(tmp_path, mutated, f"m{n}.jsonl")
        graph = ContextGraph()
        try:
            (session,) = load_sessions(path)
            graph.ingest(session.events)
        except IngestError as exc:
            assert exc.location is not None and exc.location.file == str(path), exc
            assert exc.location.line is not None, exc
            continue
        for fmt in ("openai", "anthropic", "gemini"):
            body = Renderer(format=fmt).render(graph, budget=None).payload
            assert validate(body, fmt) == [], f"mutation {n}: {fmt} body invalid"


def _bare(records: list[Record]) -> list[Record]:
    """A typed rollout as Codex CLI wrote it in mid 2025: the session's facts as a header
    line, a `record_type` marker after it and after each turn, bare items that keep their
    own timestamps."""
    header, *rest = records
    lines: list[Record] = [{**header["payload"], "timestamp": "2025-07-30T17:21:41.556Z"}]
    lines.append({"record_type": "state"})
    for record in rest:
        lines.append({**record["payload"], "timestamp": record["timestamp"]})
        if record["payload"].get("role") == "assistant":
            lines.append({"record_type": "state"})
    return lines


def _call(call_id: str, command: str) -> list[Record]:
    arguments = json.dumps({"command": ["bash", "-lc", command]})
    output = json.dumps({"output": f"ran {command}\n", "metadata": {"exit_code": 0}})
    return [
        _item(
            {"type": "function_call", "name": "shell", "arguments": arguments, "call_id": call_id}
        ),
        _item({"type": "function_call_output", "call_id": call_id, "output": output}),
    ]


LEGACY_META = {"type": "session_meta", "payload": {"id": "s-2025", "instructions": None}}


def _without_source(events: list[Any]) -> list[Any]:
    return [e.model_dump(mode="json", exclude={"source"}) for e in events]


class TestMid2025Rollouts:
    def test_a_mid_2025_rollout_reads_as_its_typed_form(self, tmp_path: Path) -> None:
        """A rollout from before typed records (header, `record_type` markers, bare items)
        was refused as unrecognized; it imports to the events of the same rollout written
        today, its markers counted."""
        typed = [
            LEGACY_META,
            _user("<environment_context>\n  <cwd>/repo</cwd>\n</environment_context>"),
            _user("list the files"),
            *_call("call_1", "ls"),
            _say("One file: a.py"),
        ]
        old = _write(tmp_path, _bare(typed), "rollout-2025-07-30T17-21-41-5973b6c0.jsonl")
        assert detect_format(read_raw(old)) == "codex_cli"
        (session,) = load_sessions(old)
        (today,) = load_sessions(_write(tmp_path, typed))
        assert _without_source(session.events) == _without_source(today.events)
        types = [e.type for e in session.events]
        assert types == ["user", "user", "assistant", "tool_result", "assistant"]
        assert session.meta["session_id"] == "s-2025"
        assert session.meta["skipped_records"] == {"state": 2}
        result = session.events[3]
        assert isinstance(result, ToolResult) and result.exit_code == 0
        # Each event names the line it came from in the old file.
        assert [e.source.line for e in session.events] == [3, 4, 5, 6, 7]

    @given(st.lists(st.sampled_from(["ask", "call", "say"]), min_size=1, max_size=8))
    def test_any_mid_2025_rollout_reads_as_today(self, steps: list[str]) -> None:
        typed: list[Record] = [LEGACY_META]
        for number, step in enumerate(steps):
            if step == "ask":
                typed.append(_user(f"question {number}"))
            elif step == "call":
                typed.extend(_call(f"call_{number}", f"echo {number}"))
            else:
                typed.append(_say(f"answer {number}"))
        old = load_sessions(RawInput(_bare(typed)))[0]
        today = load_sessions(RawInput(typed))[0]
        assert _without_source(old.events) == _without_source(today.events)

    def test_a_header_without_markers_is_not_claimed(self) -> None:
        """A JSONL whose first line has an id and a time, with no marker after it, is not
        taken for a rollout."""
        records = [{"id": "x", "timestamp": "2025-01-01T00:00:00Z"}, {"note": "hello"}]
        assert not codex_cli.sniff(RawInput(records))

    def test_a_malformed_item_names_its_line_and_field(self, tmp_path: Path) -> None:
        """A bare item is its line: its fields are named from the line, not a `payload`."""
        typed = [LEGACY_META, _user("go"), *_call("call_1", "ls")]
        lines = _bare(typed)
        del lines[4]["call_id"]  # the function call
        with pytest.raises(IngestError) as info:
            load_sessions(_write(tmp_path, lines))
        assert (info.value.location.line, info.value.location.path) == (5, "call_id")
