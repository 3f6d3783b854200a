"""`ContextManager.add_response`: a provider SDK's whole response in one call.

The responses are the SDKs' real types (`openai`, `anthropic`, `google-genai`), built
locally from the JSON their APIs send.
"""

from __future__ import annotations

from typing import Any

import pytest
from anthropic.types import Message
from google.genai import types as genai
from openai.types.chat import ChatCompletion

from context_graph.errors import IngestError
from context_graph.graph.nodes import ToolCallNode
from context_graph.testing import WordCounter, graph_snapshot
from context_graph.validate.request import validate
from orchestrator.bus import Recorder
from orchestrator.manager import ContextManager

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
CASES = [("openai", OPENAI), ("anthropic", ANTHROPIC), ("gemini", GEMINI)]


def _manager(fmt: Any) -> ContextManager:
    manager = ContextManager(format=fmt, counter=WordCounter())
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
        manager = ContextManager.open(path, format="gemini", counter=WordCounter())
        manager.add_user("What is in a.py?")
        manager.add_response(GEMINI)
        body = manager.render_sync().payload
        manager.close()
        reopened = ContextManager.open(path, format="gemini", counter=WordCounter())
        assert reopened.render_sync().payload == body
        assert body["contents"][1]["parts"][0]["thoughtSignature"] == "c2ln"
        reopened.close()
