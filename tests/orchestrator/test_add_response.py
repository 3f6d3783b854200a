"""`ContextManager.add_response`: a provider SDK's whole response in one call.

The responses are the SDKs' real types (`openai`, `anthropic`, `google-genai`), built
locally from the JSON their APIs send.
"""

from __future__ import annotations

from typing import Any

import pytest
from anthropic.types import Message
from google.genai import types as genai
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai.types.chat import ChatCompletion
from openai.types.responses import CompactedResponse, Response

from context_graph.errors import IngestError
from context_graph.graph.nodes import ToolCallNode
from context_graph.importers import load_events
from context_graph.testing import WordCounter, graph_snapshot
from context_graph.validate.request import validate
from orchestrator.bus import Recorder
from orchestrator.manager import ContextManager
from orchestrator.policy import Policy

CALL_ARGS = {"path": "a.py"}
OPENAI = ChatCompletion.model_validate(
    {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-4o",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "read", "arguments": '{"path": "a.py"}'},
                        }
                    ],
                },
            }
        ],
        "usage": {"prompt_tokens": 90, "completion_tokens": 5, "total_tokens": 95},
    }
)
ANTHROPIC = Message.model_validate(
    {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-6",
        "content": [
            {"type": "thinking", "thinking": "read it", "signature": "c2ln"},
            {"type": "tool_use", "id": "toolu_1", "name": "read", "input": CALL_ARGS},
        ],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {
            "input_tokens": 10,
            "output_tokens": 5,
            "cache_read_input_tokens": 60,
            "cache_creation_input_tokens": 20,
        },
    }
)
GEMINI = genai.GenerateContentResponse.model_validate(
    {
        "candidates": [
            {
                "content": {
                    "role": "model",
                    "parts": [
                        {
                            "functionCall": {"name": "read", "args": CALL_ARGS},
                            "thoughtSignature": "c2ln",
                        }
                    ],
                },
                "finishReason": "STOP",
            }
        ],
        "usageMetadata": {"promptTokenCount": 90},
        "modelVersion": "gemini-3-pro-preview",
    }
)
RESPONSES_USAGE = {
    "input_tokens": 90,
    "input_tokens_details": {"cached_tokens": 64, "cache_write_tokens": 0},
    "output_tokens": 5,
    "output_tokens_details": {"reasoning_tokens": 2},
    "total_tokens": 95,
}
RESPONSES = Response.model_validate(
    {
        "id": "resp_1",
        "object": "response",
        "created_at": 1,
        "model": "gpt-5",
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "output": [
            {
                "type": "reasoning",
                "id": "rs_1",
                "summary": [{"type": "summary_text", "text": "Read the file first."}],
                "encrypted_content": "gAAAreasoning",
            },
            {
                "type": "function_call",
                "id": "fc_1",
                "call_id": "call_1",
                "name": "read",
                "arguments": '{"path": "a.py"}',
                "status": "completed",
            },
        ],
        "usage": RESPONSES_USAGE,
    }
)
CASES = [
    ("openai", OPENAI),
    ("anthropic", ANTHROPIC),
    ("gemini", GEMINI),
    ("responses", RESPONSES),
]


def _manager(fmt: Any) -> ContextManager:
    manager = ContextManager(format=fmt, counter=WordCounter(), policy=Policy())
    manager.add_system("You read files.")
    manager.add_user("What is in a.py?")
    return manager


class TestAddResponse:
    """A whole response goes in, its usage is reported, and the loop goes on."""

    @pytest.mark.parametrize(("fmt", "response"), CASES, ids=[c[0] for c in CASES])
    def test_ingests_reports_and_renders(self, fmt: Any, response: Any) -> None:
        """The turn and its call are added, the prompt tokens reported, the next body valid."""
        manager = _manager(fmt)
        rendered = manager.render_sync()
        with Recorder(manager.bus) as recorder:
            ids = manager.add_response(response)
        usage = recorder.of("usage_reported")
        assert usage == [
            {
                "usage": {"prompt_tokens": 90, "estimated": rendered.tokens},
                "factor": usage[0]["factor"],
            }
        ]
        (call,) = [manager.raw[i] for i in ids if isinstance(manager.raw[i], ToolCallNode)]
        assert (call.name, call.parsed_arguments) == ("read", CALL_ARGS)
        manager.add_tool_result(call.tool_call_id, "x = 1")
        assert validate(manager.render_sync().payload, fmt) == []

    def test_plain_dict_is_the_same(self) -> None:
        """The JSON of a response gives the same nodes as the SDK's object."""
        by_object, by_dict = _manager("anthropic"), _manager("anthropic")
        assert by_object.add_response(ANTHROPIC) == by_dict.add_response(
            ANTHROPIC.model_dump(mode="json")
        )

    def test_a_misspelled_field_is_a_type_error(self) -> None:
        """`modle=` is a `TypeError` naming it and the `AssistantTurn` fields; nothing happens."""
        manager = _manager("openai")
        before = graph_snapshot(manager.raw)
        with Recorder(manager.bus) as recorder, pytest.raises(TypeError) as caught:
            manager.add_response(OPENAI, modle="gpt-4o")  # type: ignore[call-arg]
        message = str(caught.value)
        assert "add_response() got an unexpected keyword argument 'modle'" in message
        assert "message_id, meta, model, pinned, priority, response" in message
        assert graph_snapshot(manager.raw) == before
        assert recorder.names() == []

    def test_a_listed_field_reaches_the_turn(self) -> None:
        """`model=` and `meta=` land on the assistant turn, as before."""
        manager = _manager("openai")
        ids = manager.add_response(OPENAI, model="gpt-4o-mini", meta={"run": 1})
        turn = manager.raw[ids[0]]
        assert turn.meta["run"] == 1

    def test_no_render_before_no_report(self) -> None:
        """Without a render there is no request to calibrate against: only the ingest."""
        manager = _manager("openai")
        with Recorder(manager.bus) as recorder:
            manager.add_response(OPENAI)
        assert "usage_reported" not in recorder.names()
        assert "node_added" in recorder.names()

    @pytest.mark.parametrize(
        ("response", "match"),
        [
            ({"object": "list", "data": []}, "unrecognized response .*expected an OpenAI"),
            (OPENAI.choices[0].message, "unrecognized response"),
            ({"choices": [{"message": {"role": "user", "content": "hi"}}]}, "assistant's message"),
            (42, "a reply must be an SDK object or a dict, got int"),
            (
                {
                    "object": "response",
                    "status": "failed",
                    "output": [],
                    "error": {"code": "server_error", "message": "the model broke"},
                },
                "the response failed and holds no reply: server_error: the model broke",
            ),
            ({"object": "response", "output": {"type": "message"}}, "`output` must be a list"),
            ({"object": "response", "output": []}, "holds no output to add"),
            (
                {"object": "response", "output": [{"role": "user", "content": "hi"}]},
                "only the model's items, not a user message",
            ),
            (
                {"object": "response", "output": [{"type": "web_search_kall"}]},
                "unknown item type 'web_search_kall'",
            ),
            (
                {"object": "response.compaction", "output": [{"role": "user", "content": "a"}]},
                "must hold a `compaction` item",
            ),
            (
                {
                    "object": "response",
                    "output": [
                        {
                            "type": "message",
                            "role": "assistant",
                            "content": [{"type": "output_text", "text": "done"}],
                        },
                        {"type": "compaction", "id": "c", "encrypted_content": "gAAA"},
                    ],
                },
                "must come before the model's output items",
            ),
        ],
    )
    def test_refused_changes_nothing(self, response: Any, match: str) -> None:
        """What is not a response raises `IngestError`; nothing is added or reported."""
        manager = _manager("openai")
        manager.render_sync()
        before = graph_snapshot(manager.raw)
        with Recorder(manager.bus) as recorder, pytest.raises(IngestError, match=match):
            manager.add_response(response)
        assert graph_snapshot(manager.raw) == before
        assert recorder.names() == []


class TestResponsesApi:
    """A Responses `Response` and the compact endpoint's `CompactedResponse` go in whole."""

    def test_the_turn_keeps_reasoning_and_is_sent_back_as_received(self) -> None:
        """The reasoning item, with its encrypted content, leads the call in the next body."""
        manager = _manager("responses")
        manager.add_response(RESPONSES)
        manager.add_tool_result("call_1", "x = 1")
        body = manager.render_sync().payload
        assert validate(body, "responses") == []
        reasoning, call, output = body["input"][-3:]
        assert reasoning["encrypted_content"] == "gAAAreasoning"
        assert (call["call_id"], call["arguments"]) == ("call_1", '{"path": "a.py"}')
        assert output == {"type": "function_call_output", "call_id": "call_1", "output": "x = 1"}

    def test_the_turn_is_the_one_the_importer_reads(self) -> None:
        """A live loop and a replayed log of the same items send the same body."""
        live = _manager("responses")
        live.add_response(RESPONSES)
        replayed = _manager("responses")
        items = [item.model_dump(mode="json", exclude_none=True) for item in RESPONSES.output]
        replayed.ingest(load_events(items, format="openai_responses"))
        assert live.render_sync().payload == replayed.render_sync().payload

    def test_a_compacted_response_adds_only_its_item(self) -> None:
        """The user's messages the endpoint kept are in the history already; the item
        goes in after them and stands for the rest, so the next body is the compacted
        window: the user's messages, then the item."""
        manager = _manager("responses")
        manager.add_response(RESPONSES)
        manager.add_tool_result("call_1", "x = 1")
        manager.render_sync()
        compacted = {
            "id": "cmp_1",
            "object": "response.compaction",
            "created_at": 2,
            "output": [
                {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": "What is in a.py?"}],
                },
                {"type": "compaction", "id": "cmp_item", "encrypted_content": "gAAAwindow"},
            ],
            "usage": RESPONSES_USAGE,
        }
        before = len(manager.raw)
        manager.add_response(compacted)
        assert len(manager.raw) == before + 1
        body = manager.render_sync().payload
        assert validate(body, "responses") == []
        assert [item.get("type") for item in body["input"]] == ["message", "compaction"]
        assert body["input"][-1]["encrypted_content"] == "gAAAwindow"

    def test_the_sdk_object_and_its_dict_agree(self) -> None:
        """`CompactedResponse` read as the SDK's object and as its JSON add the same node."""
        item = {"type": "compaction", "id": "cmp_item", "encrypted_content": "gAAAwindow"}
        data = {
            "id": "cmp_1",
            "object": "response.compaction",
            "created_at": 2,
            "output": [item],
            "usage": RESPONSES_USAGE,
        }
        response = CompactedResponse.model_validate(data)
        by_object, by_dict = _manager("responses"), _manager("responses")
        assert by_object.add_response(response) == by_dict.add_response(
            response.model_dump(mode="json", exclude_none=True)
        )


class TestManagerAdders:
    """The manager's shorthands raise the same typed errors as the graph's."""

    @pytest.mark.parametrize(
        "call",
        [
            lambda m: m.add_user(123),
            lambda m: m.add_assistant(None, tool_calls=[{"type": "function", "function": 1}]),
            lambda m: m.ingest([{"type": "user", "content": [1]}]),
        ],
    )
    def test_typed_errors(self, call: Any) -> None:
        """`IngestError`, never a raw pydantic error, and nothing reaches the bus."""
        manager = _manager("openai")
        with Recorder(manager.bus) as recorder, pytest.raises(IngestError):
            call(manager)
        assert recorder.names() == []

    def test_openai_none_content(self) -> None:
        """`add_assistant(None, tool_calls=...)` works on the manager too."""
        manager = _manager("openai")
        message = OPENAI.choices[0].message
        ids = manager.add_assistant(message.content, tool_calls=message.tool_calls or [])
        assert len(ids) == 2


class TestSessionFile:
    """A call's signature is journaled with its turn and restored with it."""

    def test_signature_survives_reopening(self, tmp_path: Any) -> None:
        """Reopened, the session renders the same Gemini body, signature included."""
        path = tmp_path / "session.db"
        manager = ContextManager.open(path, format="gemini", counter=WordCounter(), policy=Policy())
        manager.add_user("What is in a.py?")
        manager.add_response(GEMINI)
        body = manager.render_sync().payload
        manager.close()
        reopened = ContextManager.open(
            path, format="gemini", counter=WordCounter(), policy=Policy()
        )
        assert reopened.render_sync().payload == body
        assert body["contents"][1]["parts"][0]["thoughtSignature"] == "c2ln"
        reopened.close()


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=12,
)
_ITEM = st.fixed_dictionaries(
    {"type": st.sampled_from(["message", "reasoning", "function_call", "compaction", "x"])},
    optional={
        "role": st.sampled_from(["assistant", "user", "developer", "tool"]),
        "content": _JSON,
        "call_id": _JSON,
        "name": _JSON,
        "arguments": _JSON,
        "encrypted_content": _JSON,
        "summary": _JSON,
        "id": _JSON,
    },
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kind=st.sampled_from(["response", "response.compaction"]),
    output=st.lists(_ITEM, max_size=4) | _JSON,
    status=st.sampled_from([None, "completed", "incomplete", "failed"]),
    usage=st.none() | st.fixed_dictionaries({"input_tokens": _JSON}),
)
def test_hostile_responses_are_read_or_refused_whole(
    kind: str, output: Any, status: Any, usage: Any
) -> None:
    """Any `Response`-shaped dict is either added or refused with `IngestError`, and a
    refusal changes nothing; what is added renders a valid body."""
    manager = _manager("responses")
    manager.render_sync()
    before = graph_snapshot(manager.raw)
    response = {"object": kind, "output": output, "status": status, "usage": usage}
    with Recorder(manager.bus) as recorder:
        try:
            manager.add_response(response)
        except IngestError:
            assert graph_snapshot(manager.raw) == before
            assert recorder.names() == []
            return
    assert validate(manager.render_sync().payload, "responses") == []
