from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from context_graph.errors import IngestError
from context_graph.formats.gemini import read as gemini
from context_graph.graph.content import (
    DocumentPart,
    ImagePart,
    ProviderSignature,
    TextPart,
    ThinkingPart,
)
from context_graph.graph.context_graph import ContextGraph
from context_graph.graph.events import AssistantTurn, SystemPrompt, ToolCall, ToolResult, UserTurn
from context_graph.graph.nodes import ToolCallNode
from context_graph.importers import detect_format, load_events, load_sessions
from context_graph.importers._base import RawInput
from context_graph.testing import graph_snapshot

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJ"
PDF = "JVBERi0xLjQKJcfsj6IKNSAwIG9iago8PC9MZW5ndGggNiAwIFI+PgpzdHJlYW0K"


def _events(payload: Any) -> list[Any]:
    return gemini.to_sessions(RawInput(payload))[0].events


def _dumps(events: list[Any]) -> list[dict[str, Any]]:
    return [e.model_dump(mode="json") for e in events]


def _user(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "parts": list(parts)}


def _model(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"role": "model", "parts": list(parts)}


def _fcall(name: str, call_id: str | None = None, **args: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"name": name, "args": args}
    if call_id is not None:
        body["id"] = call_id
    return {"functionCall": body}


def _fresp(name: str, response: dict[str, Any], call_id: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"name": name, "response": response}
    if call_id is not None:
        body["id"] = call_id
    return {"functionResponse": body}


def _answers(events: list[Any]) -> dict[str, str]:
    """Ingest `events` and map each result's text to the arguments of the call it answers."""
    graph = ContextGraph()
    graph.ingest(events)
    pairs: dict[str, str] = {}
    for node in graph:
        if node.kind == "tool_result":
            call = graph.call_of(node.id)
            assert call is not None
            pairs[node.text] = call.arguments
    return pairs


@pytest.fixture(name="graph")
def graph_fixture(graph: ContextGraph) -> ContextGraph:
    """The shared empty graph, with one earlier exchange already in it."""
    graph.ingest(_events({"contents": [_user({"text": "earlier"}), _model({"text": "ok"})]}))
    return graph


# --- sample inputs of other formats, which gemini must not claim ---------------------------

OPENAI_MESSAGES = [
    {"role": "system", "content": "be brief"},
    {"role": "user", "content": "hi"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "ok"},
]
ANTHROPIC_PAYLOAD = {
    "system": "be brief",
    "messages": [
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}],
        },
    ],
}
TAU_BENCH_RUNS = [{"task_id": 0, "reward": 1.0, "info": {}, "traj": OPENAI_MESSAGES}]
CLAUDE_CODE_RECORDS = [
    {
        "type": "user",
        "uuid": "u1",
        "parentUuid": None,
        "message": {"role": "user", "content": "hi"},
    },
    {
        "type": "assistant",
        "uuid": "a1",
        "parentUuid": "u1",
        "message": {"id": "m1", "role": "assistant", "content": [{"type": "text", "text": "yo"}]},
    },
]
TAU2_RUN = {"info": {}, "tasks": [], "simulations": [{"task_id": "1", "messages": []}]}
GEMINI_PAYLOAD = {
    "systemInstruction": {"parts": [{"text": "be brief"}]},
    "contents": [_user({"text": "hi"}), _model({"text": "hello"})],
}


class TestSniff:
    @pytest.mark.parametrize(
        "data",
        [
            GEMINI_PAYLOAD,
            {"system_instruction": {"parts": [{"text": "s"}]}, "contents": [_user({"text": "a"})]},
            [_user({"text": "hi"}), _model({"text": "hello"})],
            [{"parts": [{"text": "no role"}]}],
            {"systemInstruction": {"parts": [{"text": "only a system prompt"}]}, "contents": []},
        ],
        ids=["camel", "snake", "bare-list", "no-role", "system-only"],
    )
    def test_claims_gemini_shapes(self, data: Any) -> None:
        """Request bodies in either key style and bare `contents` lists are recognized."""
        assert gemini.sniff(RawInput(data))

    @pytest.mark.parametrize(
        "data",
        [OPENAI_MESSAGES, ANTHROPIC_PAYLOAD, TAU_BENCH_RUNS, CLAUDE_CODE_RECORDS, TAU2_RUN],
        ids=["openai", "anthropic", "tau_bench", "claude_code", "tau2"],
    )
    def test_leaves_other_formats_alone(self, data: Any) -> None:
        """OpenAI lists, Anthropic payloads, tau-bench, Claude Code and tau2 are not claimed."""
        assert not gemini.sniff(RawInput(data))

    @pytest.mark.parametrize(
        "data",
        [
            None,
            3,
            "contents",
            [],
            [1, 2],
            {"contents": "x"},
            {"contents": [None]},
            {},
            [{"role": ["user"], "parts": []}],
        ],
    )
    def test_never_raises(self, data: Any) -> None:
        """Odd input is answered with False, not an exception."""
        assert gemini.sniff(RawInput(data)) is False


class TestDetectFormat:
    def test_picks_gemini(self, write_json: Callable[..., Path]) -> None:
        """A Gemini request body on disk is detected as gemini."""
        assert detect_format(write_json(GEMINI_PAYLOAD)) == "gemini"

    def test_picks_gemini_for_bare_contents(self) -> None:
        """A bare `contents` list is detected as gemini."""
        assert detect_format([_user({"text": "hi"}), _model({"text": "yo"})]) == "gemini"

    @pytest.mark.parametrize(
        "data", [OPENAI_MESSAGES, ANTHROPIC_PAYLOAD], ids=["openai", "anthropic"]
    )
    def test_not_gemini_for_other_providers(self, data: Any) -> None:
        """OpenAI message lists and Anthropic payloads are detected as something else."""
        try:
            found = detect_format(data)
        except IngestError:
            found = None
        assert found != "gemini"


class TestParts:
    def test_every_content_part_type(self) -> None:
        """Text, thoughts, inline and file data, and code parts become the matching parts."""
        payload = {
            "systemInstruction": {"parts": [{"text": "be brief"}]},
            "contents": [
                _user(
                    {"text": "look"},
                    {"inlineData": {"mimeType": "image/png", "data": PNG}},
                    {"inlineData": {"mimeType": "application/pdf", "data": PDF}},
                    {"fileData": {"mimeType": "image/jpeg", "fileUri": "gs://b/cat.jpg"}},
                    {"fileData": {"fileUri": "https://x/doc.txt"}},
                ),
                _model(
                    {"text": "hmm", "thought": True, "thoughtSignature": "c2ln"},
                    {"thoughtSignature": "b25seQ=="},
                    {"executableCode": {"language": "PYTHON", "code": "print(1)"}},
                    {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "1\n"}},
                    {"text": "done"},
                ),
            ],
        }
        expected = [
            SystemPrompt(content="be brief"),
            UserTurn(
                content=(
                    TextPart(text="look"),
                    ImagePart(media_type="image/png", data=PNG),
                    DocumentPart(media_type="application/pdf", data=PDF),
                    ImagePart(media_type="image/jpeg", url="gs://b/cat.jpg"),
                    DocumentPart(url="https://x/doc.txt"),
                )
            ),
            AssistantTurn(
                content=(
                    ThinkingPart(thinking="hmm", signature="c2ln", provider="gemini"),
                    ThinkingPart(thinking="", signature="b25seQ==", provider="gemini"),
                    TextPart(text="```python\nprint(1)\n```"),
                    TextPart(text="1\n"),
                    TextPart(text="done"),
                )
            ),
        ]
        assert _dumps(_events(payload)) == _dumps(expected)

    def test_calls_and_responses(self) -> None:
        """Function calls join the model turn; responses become results before the user's text."""
        payload = {
            "model": "gemini-2.5-pro",
            "contents": [
                _user({"text": "weather?"}),
                _model({"text": "checking"}, _fcall("weather", "w1", city="Oslo")),
                _user({"text": "also"}, _fresp("weather", {"output": "rain"}, "w1")),
            ],
        }
        expected = [
            UserTurn(content="weather?"),
            AssistantTurn(
                content="checking",
                tool_calls=(ToolCall(id="w1", name="weather", arguments={"city": "Oslo"}),),
                model="gemini-2.5-pro",
            ),
            ToolResult(call_id="w1", name="weather", content="rain"),
            UserTurn(content="also"),
        ]
        assert _dumps(_events(payload)) == _dumps(expected)

    def test_snake_case_matches_camel_case(self) -> None:
        """The snake_case spelling of every field gives the same events as camelCase."""
        camel = {
            "systemInstruction": {"parts": [{"text": "s"}]},
            "contents": [
                _user({"inlineData": {"mimeType": "image/png", "data": PNG}}),
                _model({"functionCall": {"name": "f", "args": {}}, "thoughtSignature": "c2ln"}),
                _user({"functionResponse": {"name": "f", "response": {"x": 1}}}),
                _user({"fileData": {"mimeType": "text/plain", "fileUri": "gs://b/a.txt"}}),
            ],
        }
        snake = {
            "system_instruction": {"parts": [{"text": "s"}]},
            "contents": [
                _user({"inline_data": {"mime_type": "image/png", "data": PNG}}),
                _model({"function_call": {"name": "f", "args": {}}, "thought_signature": "c2ln"}),
                _user({"function_response": {"name": "f", "response": {"x": 1}}}),
                _user({"file_data": {"mime_type": "text/plain", "file_uri": "gs://b/a.txt"}}),
            ],
        }
        assert _dumps(_events(snake)) == _dumps(_events(camel))

    def test_signatures_outside_thoughts_go_to_meta(self) -> None:
        """A call's signature goes on the call; one on plain text is kept in the metadata."""
        payload = [
            _user({"text": "go"}),
            _model(
                {"text": "sure", "thoughtSignature": "dA=="},
                {**_fcall("f"), "thoughtSignature": "Yw=="},
            ),
        ]
        turn = _events(payload)[1]
        assert isinstance(turn, AssistantTurn)
        assert dict(turn.meta) == {"thought_signatures": {"content:0": "dA=="}}
        assert turn.tool_calls[0].signature == ProviderSignature(provider="gemini", value="Yw==")

    @pytest.mark.parametrize(
        ("response", "text", "is_error"),
        [
            ({"output": "plain"}, "plain", False),
            ({"content": "plain"}, "plain", False),
            ({"output": "o", "extra": 1}, '{"output": "o", "extra": 1}', False),
            ({"output": 7}, '{"output": 7}', False),
            ({"error": "boom"}, "boom", True),
            ({"error": {"code": 5}}, '{"error": {"code": 5}}', True),
            ({}, "{}", False),
        ],
    )
    def test_response_content(self, response: dict[str, Any], text: str, is_error: bool) -> None:
        """A lone output/content string is the text; otherwise the JSON; `error` marks an error."""
        events = _events([_model(_fcall("f")), _user(_fresp("f", response))])
        result = events[1]
        assert (result.content, result.is_error) == ((TextPart(text=text),), is_error)

    def test_function_role_and_missing_role(self) -> None:
        """The `function` role carries responses and a content without a role is a user turn."""
        events = _events(
            [
                {"parts": [{"text": "hi"}]},
                _model(_fcall("f")),
                {"role": "function", "parts": [_fresp("f", {})]},
            ]
        )
        assert [e.type for e in events] == ["user", "assistant", "tool_result"]

    def test_session_is_named_by_file(self, write_json: Callable[..., Path]) -> None:
        """One session per payload, named after the file, with the model in its metadata."""
        path = write_json({**GEMINI_PAYLOAD, "model": "gemini-2.0-flash"}, "chat.json")
        (session,) = load_sessions(path, format="gemini")
        assert (session.name, session.meta) == (
            "chat",
            {"format": "gemini", "model": "gemini-2.0-flash"},
        )

    def test_every_event_names_its_place(self, write_json: Callable[..., Path]) -> None:
        """Each event carries the file, the content index and the JSON path it came from."""
        payload = {
            "systemInstruction": {"parts": [{"text": "s"}]},
            "contents": [_user({"text": "a"}), _model(_fcall("f")), _user(_fresp("f", {}))],
        }
        path = write_json(payload)
        events = load_events(path, format="gemini")
        places = [(e.source.file, e.source.index, e.source.path) for e in events]
        assert places == [
            (str(path), None, "systemInstruction"),
            (str(path), 0, "contents[0]"),
            (str(path), 1, "contents[1]"),
            (str(path), 2, "contents[2].parts[0].functionResponse"),
        ]


class TestPairing:
    def test_parallel_calls_without_ids_pair_by_name_and_order(self) -> None:
        """The k-th id-less response named N answers the k-th call named N of the turn."""
        payload = [
            _user({"text": "go"}),
            _model(_fcall("read", path="a"), _fcall("ls", dir="x"), _fcall("read", path="b")),
            _user(
                _fresp("ls", {"output": "ls x"}),
                _fresp("read", {"output": "read a"}),
                _fresp("read", {"output": "read b"}),
            ),
        ]
        assert _answers(_events(payload)) == {
            "ls x": '{"dir": "x"}',
            "read a": '{"path": "a"}',
            "read b": '{"path": "b"}',
        }

    def test_parallel_calls_with_ids_pair_by_id(self) -> None:
        """Responses with ids answer the call with that id, in whatever order they come."""
        payload = [
            _user({"text": "go"}),
            _model(_fcall("read", "r1", path="a"), _fcall("read", "r2", path="b")),
            _user(_fresp("read", {"output": "B"}, "r2"), _fresp("read", {"output": "A"}, "r1")),
        ]
        assert _answers(_events(payload)) == {"A": '{"path": "a"}', "B": '{"path": "b"}'}

    def test_idless_response_takes_the_id_of_a_call_that_has_one(self) -> None:
        """A response without an id answers a same-named call that has one, and uses its id."""
        events = _events([_model(_fcall("f", "abc", n=1)), _user(_fresp("f", {"output": "x"}))])
        assert events[1].call_id == "abc"
        assert _answers(events) == {"x": '{"n": 1}'}

    def test_synthesized_ids_follow_the_documented_rule(self) -> None:
        """Id-less calls get `gemini_<name>_<content index>_<k>`, the same on every import."""
        payload = [
            _user({"text": "go"}),
            _model(_fcall("f"), _fcall("g"), _fcall("f")),
            _user(_fresp("f", {}), _fresp("g", {}), _fresp("f", {})),
            _model(_fcall("f")),
            _user(_fresp("f", {})),
        ]
        first, second = _events(payload), _events(payload)
        ids = [c.id for e in first if isinstance(e, AssistantTurn) for c in e.tool_calls]
        assert ids == ["gemini_f_1_0", "gemini_g_1_0", "gemini_f_1_1", "gemini_f_3_0"]
        assert _dumps(first) == _dumps(second)

    def test_every_call_is_answered(self) -> None:
        """A session whose responses all come back leaves no call open in the graph."""
        payload = [
            _user({"text": "go"}),
            _model(_fcall("f"), _fcall("f")),
            _user(_fresp("f", {}), _fresp("f", {})),
            _model(_fcall("f")),
            _user(_fresp("f", {})),
        ]
        graph = ContextGraph()
        graph.ingest(_events(payload))
        calls = graph.by_kind("tool_call")
        assert len(calls) == 3
        assert graph.unanswered_calls() == ()
        assert all(isinstance(graph[c], ToolCallNode) for c in calls)


def _hostile_cases() -> list[tuple[str, Any, int | None, str | None, str]]:
    """(id, payload, message index, JSON path, words in the reason)."""
    ok = _model(_fcall("f"))
    return [
        ("contents-not-list", {"contents": {"a": 1}}, None, "contents", "must be an array"),
        ("content-not-object", {"contents": ["hi"]}, 0, "contents[0]", "must be an object"),
        (
            "unknown-role",
            {"contents": [{"role": "assistant", "parts": []}]},
            0,
            "contents[0].role",
            "unknown role",
        ),
        (
            "parts-missing",
            {"contents": [{"role": "user"}]},
            0,
            "contents[0].parts",
            "must be an array",
        ),
        (
            "part-not-object",
            {"contents": [{"role": "user", "parts": ["x"]}]},
            0,
            "contents[0].parts[0]",
            "must be an object",
        ),
        (
            "unknown-part",
            {"contents": [_user({"video": 1})]},
            0,
            "contents[0].parts[0]",
            "unknown part",
        ),
        (
            "two-fields",
            {"contents": [_user({"text": "a", "inlineData": {}})]},
            0,
            "contents[0].parts[0]",
            "exactly one",
        ),
        (
            "call-and-text",
            {"contents": [_model({**_fcall("f"), "text": "a"})]},
            0,
            "contents[0].parts[0]",
            "exactly one",
        ),
        (
            "response-and-text",
            {"contents": [ok, _user({**_fresp("f", {}), "text": "a"})]},
            1,
            "contents[1].parts[0]",
            "exactly one",
        ),
        (
            "role-not-str",
            {"contents": [{"role": ["user"], "parts": []}]},
            0,
            "contents[0].role",
            "unknown role",
        ),
        (
            "text-not-str",
            {"contents": [_user({"text": 5})]},
            0,
            "contents[0].parts[0].text",
            "must be a string",
        ),
        (
            "call-in-user",
            {"contents": [_user(_fcall("f"))]},
            0,
            "contents[0].parts[0]",
            "cannot be in a user turn",
        ),
        (
            "response-in-model",
            {"contents": [_model(_fresp("f", {}))]},
            0,
            "contents[0].parts[0]",
            "cannot be in a model turn",
        ),
        (
            "orphan-response",
            {"contents": [_user({"text": "a"}), _user(_fresp("f", {}))]},
            1,
            "contents[1].parts[0].functionResponse",
            "no unanswered functionCall",
        ),
        (
            "wrong-name-response",
            {"contents": [ok, _user(_fresp("g", {}))]},
            1,
            "contents[1].parts[0].functionResponse",
            "no unanswered functionCall",
        ),
        (
            "call-name-missing",
            {"contents": [_model({"functionCall": {"args": {}}})]},
            0,
            "contents[0].parts[0].functionCall.name",
            "must be a string",
        ),
        (
            "call-name-empty",
            {"contents": [_model({"functionCall": {"name": ""}})]},
            0,
            "contents[0].parts[0].functionCall.name",
            "must not be empty",
        ),
        (
            "args-not-object",
            {"contents": [_model({"functionCall": {"name": "f", "args": [1]}})]},
            0,
            "contents[0].parts[0].functionCall.args",
            "must be an object",
        ),
        (
            "id-not-str",
            {"contents": [_model({"functionCall": {"name": "f", "id": 3}})]},
            0,
            "contents[0].parts[0].functionCall.id",
            "must be a string",
        ),
        (
            "response-not-object",
            {"contents": [ok, _user({"functionResponse": {"name": "f", "response": "x"}})]},
            1,
            "contents[1].parts[0].functionResponse.response",
            "must be an object",
        ),
        (
            "bad-base64",
            {"contents": [_user({"inlineData": {"mimeType": "image/png", "data": "!!!!"}})]},
            0,
            "contents[0].parts[0].inlineData.data",
            "not base64",
        ),
        (
            "mime-missing",
            {"contents": [_user({"inlineData": {"data": PNG}})]},
            0,
            "contents[0].parts[0].inlineData.mimeType",
            "must be a string",
        ),
        (
            "uri-missing",
            {"contents": [_user({"fileData": {"mimeType": "image/png"}})]},
            0,
            "contents[0].parts[0].fileData.fileUri",
            "must be a string",
        ),
        (
            "thought-not-bool",
            {"contents": [_model({"text": "a", "thought": "yes"})]},
            0,
            "contents[0].parts[0].thought",
            "must be a boolean",
        ),
        (
            "thought-in-user",
            {"contents": [_user({"text": "a", "thought": True})]},
            0,
            "contents[0].parts[0]",
            "only be in a model turn",
        ),
        (
            "signature-not-str",
            {"contents": [_model({"text": "a", "thoughtSignature": 1})]},
            0,
            "contents[0].parts[0].thoughtSignature",
            "must be a string",
        ),
        (
            "system-not-object",
            {"systemInstruction": 3, "contents": []},
            None,
            "systemInstruction",
            "must be an object",
        ),
        (
            "system-call",
            {"systemInstruction": {"parts": [_fcall("f")]}, "contents": []},
            None,
            "systemInstruction.parts[0]",
            "cannot be in a system turn",
        ),
        ("bare-list-item", [_user({"text": "a"}), 4], 1, "[1]", "must be an object"),
    ]


HOSTILE = _hostile_cases()


class TestMalformedInput:
    @pytest.mark.parametrize(
        ("payload", "index", "path", "reason"),
        [case[1:] for case in HOSTILE],
        ids=[case[0] for case in HOSTILE],
    )
    def test_error_names_file_message_and_path(
        self,
        write_json: Callable[..., Path],
        graph: ContextGraph,
        payload: Any,
        index: int | None,
        path: str | None,
        reason: str,
    ) -> None:
        """Bad input raises IngestError at the exact place, and a graph is left as it was."""
        file = write_json(payload)
        before = graph_snapshot(graph)
        with pytest.raises(IngestError) as caught:
            graph.ingest(load_events(file, format="gemini"))
        where = caught.value.location
        assert (where.file, where.index, where.path) == (str(file), index, path)
        assert reason in caught.value.reason
        assert graph_snapshot(graph) == before

    def test_top_level_scalar(self) -> None:
        """A payload that is neither an object nor an array is refused."""
        with pytest.raises(IngestError, match="object or `contents` array"):
            gemini.to_sessions(RawInput(42))

    def test_unserializable_args(self) -> None:
        """Arguments that cannot be written as JSON (given programmatically) are refused."""
        payload = [_model({"functionCall": {"name": "f", "args": {"b": b"\x00"}}})]
        with pytest.raises(IngestError) as caught:
            gemini.to_sessions(RawInput(payload))
        assert caught.value.location.path == "[0].parts[0].functionCall.args"

    def test_orphan_response_with_id_is_named_by_the_graph(
        self, write_json: Callable[..., Path], graph: ContextGraph
    ) -> None:
        """A response whose id no call has fails the ingest at its place; the graph is unchanged."""
        payload = {"contents": [_user({"text": "a"}), _user(_fresp("f", {}, "nope"))]}
        file = write_json(payload)
        events = load_events(file, format="gemini")
        before = graph_snapshot(graph)
        with pytest.raises(IngestError, match="no matching tool call") as caught:
            graph.ingest(events)
        where = caught.value.location
        assert (where.file, where.index, where.path) == (
            str(file),
            1,
            "contents[1].parts[0].functionResponse",
        )
        assert graph_snapshot(graph) == before

    def test_duplicate_call_ids_in_one_turn(
        self, write_json: Callable[..., Path], graph: ContextGraph
    ) -> None:
        """Two calls of one turn sharing an explicit id both ingest, as two open calls."""
        payload = {"contents": [_user({"text": "a"}), _model(_fcall("f", "x"), _fcall("g", "x"))]}
        file = write_json(payload)
        graph.ingest(load_events(file, format="gemini"))
        names = [getattr(graph[c], "name", None) for c in graph.unanswered_calls()]
        assert names == ["f", "g"]
