"""What the provider SDKs give goes straight in: tool calls in every shape, whole messages.

The SDK objects are the real `openai`, `anthropic` and `google-genai` types, built
locally from the JSON their APIs send (no network).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from anthropic.types import Message, ToolUseBlock
from google.genai import types as genai
from openai.types.chat import ChatCompletion, ChatCompletionMessage
from openai.types.chat import ChatCompletionMessageFunctionToolCall as OpenAIToolCall

from context_graph import ContextGraph, IngestError
from context_graph.formats.anthropic import read as anthropic_format
from context_graph.formats.gemini import read as gemini_format
from context_graph.formats.openai_chat import read as openai_format
from context_graph.graph.content import (
    ProviderSignature,
    RedactedThinkingPart,
    TextPart,
    ThinkingPart,
)
from context_graph.graph.events import AssistantTurn, ToolCall
from context_graph.graph.nodes import ToolCallNode
from context_graph.graph.sdk_replies import is_reply, read_message, read_response
from context_graph.importers import RawInput
from context_graph.testing import WordCounter, graph_snapshot

FLAT = ToolCall(id="c1", name="read", arguments='{"path": "a.py"}')

OPENAI_CALL = {
    "id": "c1",
    "type": "function",
    "function": {"name": "read", "arguments": '{"path": "a.py"}'},
}
ANTHROPIC_CALL = {"type": "tool_use", "id": "c1", "name": "read", "input": {"path": "a.py"}}
GEMINI_CALL = {"functionCall": {"id": "c1", "name": "read", "args": {"path": "a.py"}}}

OPENAI_MESSAGE = {
    "role": "assistant",
    "content": None,
    "tool_calls": [OPENAI_CALL],
}
ANTHROPIC_MESSAGE = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-6",
    "content": [
        {"type": "thinking", "thinking": "look first", "signature": "c2lnbg=="},
        {"type": "redacted_thinking", "data": "opaque"},
        {"type": "text", "text": "Reading it."},
        ANTHROPIC_CALL,
    ],
    "stop_reason": "tool_use",
    "stop_sequence": None,
    "usage": {"input_tokens": 12, "output_tokens": 7},
}
GEMINI_CONTENT = {
    "role": "model",
    "parts": [
        {"text": "look first", "thought": True, "thoughtSignature": "dGhvdWdodA=="},
        {"text": "Reading it."},
        {
            "functionCall": {"name": "read", "args": {"path": "a.py"}},
            "thoughtSignature": "Y2FsbA==",
        },
        {"functionCall": {"name": "read", "args": {"path": "b.py"}}},
    ],
}


def _graph() -> ContextGraph:
    graph = ContextGraph(counter=WordCounter())
    graph.add_user("read a.py")
    return graph


def _calls(graph: ContextGraph, ids: tuple[str, ...]) -> list[ToolCallNode]:
    return [node for node in (graph[i] for i in ids) if isinstance(node, ToolCallNode)]


class TestToolCallShapes:
    """Every SDK's tool-call shape, as a dict and as the SDK's object, reads the same."""

    @pytest.mark.parametrize(
        "call",
        [
            OPENAI_CALL,
            OpenAIToolCall.model_validate(OPENAI_CALL),
            ANTHROPIC_CALL,
            ToolUseBlock.model_validate(ANTHROPIC_CALL),
            GEMINI_CALL,
            genai.Part.model_validate(GEMINI_CALL),
            genai.FunctionCall.model_validate(GEMINI_CALL["functionCall"]),
            {"id": "c1", "name": "read", "arguments": {"path": "a.py"}},
            {"id": "c1", "type": "function", "name": "read", "arguments": '{"path": "a.py"}'},
        ],
        ids=[
            "openai-dict",
            "openai-object",
            "anthropic-dict",
            "anthropic-object",
            "gemini-dict",
            "gemini-part",
            "gemini-function-call",
            "flat-dict",
            "flat-with-type",
        ],
    )
    def test_shape_reads_as_the_flat_call(self, call: Any) -> None:
        """The call's id, name and arguments come out as the flat shape gives them."""
        (read,) = AssistantTurn(tool_calls=(call,)).tool_calls
        assert (read.id, read.name, json.loads(read.arguments)) == ("c1", "read", {"path": "a.py"})

    def test_openai_arguments_are_kept_byte_for_byte(self) -> None:
        """OpenAI's JSON text is the stored arguments, unchanged."""
        call = {**OPENAI_CALL, "function": {"name": "f", "arguments": '{ "a" :1}'}}
        assert ToolCall.model_validate(call).arguments == '{ "a" :1}'

    def test_add_assistant_takes_none_with_openai_calls(self) -> None:
        """`add_assistant(None, tool_calls=[...])`, as OpenAI returns it, adds the turn."""
        graph = _graph()
        message = ChatCompletionMessage.model_validate(OPENAI_MESSAGE)
        assert message.content is None and message.tool_calls is not None
        ids = graph.add_assistant(message.content, tool_calls=message.tool_calls)
        (call,) = _calls(graph, ids)
        assert graph[ids[0]].content == ()
        assert (call.tool_call_id, call.name, call.arguments) == ("c1", "read", FLAT.arguments)

    def test_gemini_calls_without_id_are_numbered_by_name(self) -> None:
        """Id-less Gemini calls get `gemini_<name>_<k>`, k counting same-named calls."""
        graph = _graph()
        parts = [
            {"functionCall": {"name": "read", "args": {}}},
            genai.Part(function_call=genai.FunctionCall(name="grep", args={})),
            {"function_call": {"name": "read", "args": {}}},
        ]
        ids = graph.add_assistant(None, tool_calls=parts)
        got = [c.tool_call_id for c in _calls(graph, ids)]
        assert got == ["gemini_read_0", "gemini_grep_0", "gemini_read_1"]

    def test_gemini_signature_lands_on_the_call(self) -> None:
        """A functionCall part's `thoughtSignature` (bytes in the SDK) is the call's signature."""
        part = genai.Part(
            function_call=genai.FunctionCall(name="read", args={}), thought_signature=b"sig"
        )
        call = ToolCall.model_validate(part)
        assert call.signature == ProviderSignature(provider="gemini", value="c2ln")

    def test_a_call_without_signature_serializes_as_before(self) -> None:
        """No signature, no key: the JSON (and so every id) is what it was."""
        assert (
            FLAT.model_dump_json()
            == '{"id":"c1","name":"read","arguments":"{\\"path\\": \\"a.py\\"}"}'
        )


class TestWholeMessages:
    """`add_assistant(message)` takes an SDK's whole reply message."""

    def test_openai_message(self) -> None:
        """A `ChatCompletionMessage` gives the same nodes as its calls passed one by one."""
        by_message, by_calls = _graph(), _graph()
        message = ChatCompletionMessage.model_validate(OPENAI_MESSAGE)
        assert by_message.add_assistant(message) == by_calls.add_assistant(
            None, tool_calls=[OPENAI_CALL]
        )

    def test_anthropic_message(self) -> None:
        """A `Message` keeps thinking (signed), redacted thinking, text, calls, id and model."""
        graph = _graph()
        ids = graph.add_assistant(Message.model_validate(ANTHROPIC_MESSAGE))
        head = graph[ids[0]]
        assert head.content == (
            ThinkingPart(thinking="look first", signature="c2lnbg=="),
            RedactedThinkingPart(data="opaque"),
            TextPart(text="Reading it."),
        )
        assert (head.message_id, head.model) == ("msg_1", "claude-sonnet-4-6")
        assert [c.tool_call_id for c in _calls(graph, ids)] == ["c1"]

    def test_gemini_content(self) -> None:
        """A `Content` keeps signed thoughts, text, and calls with their signatures."""
        graph = _graph()
        ids = graph.add_assistant(genai.Content.model_validate(GEMINI_CONTENT))
        head = graph[ids[0]]
        thought = ThinkingPart(thinking="look first", signature="dGhvdWdodA==", provider="gemini")
        assert head.content == (thought, TextPart(text="Reading it."))
        calls = _calls(graph, ids)
        assert [c.tool_call_id for c in calls] == ["gemini_read_0", "gemini_read_1"]
        assert [c.signature for c in calls] == [
            ProviderSignature(provider="gemini", value="Y2FsbA=="),
            None,
        ]

    @pytest.mark.parametrize(
        ("sdk_type", "data"),
        [
            (ChatCompletionMessage, OPENAI_MESSAGE),
            (Message, ANTHROPIC_MESSAGE),
            (genai.Content, GEMINI_CONTENT),
        ],
    )
    def test_object_and_dict_give_the_same_nodes(self, sdk_type: Any, data: Any) -> None:
        """The SDK's object and the plain JSON of it build the same graph."""
        by_object, by_dict = _graph(), _graph()
        assert by_object.add_assistant(sdk_type.model_validate(data)) == by_dict.add_assistant(data)

    @pytest.mark.parametrize(
        ("data", "convert"),
        [
            (OPENAI_MESSAGE, lambda d: openai_format.to_sessions(RawInput([d]))),
            (ANTHROPIC_MESSAGE, lambda d: anthropic_format.to_sessions(RawInput([d]))),
            (GEMINI_CONTENT, lambda d: gemini_format.to_sessions(RawInput([d]))),
        ],
        ids=["openai", "anthropic", "gemini"],
    )
    def test_a_message_reads_as_its_importer_reads_it(self, data: Any, convert: Any) -> None:
        """Live and replayed give the same content and calls (ids aside: a log has positions)."""
        (imported,) = convert(data)[0].events
        live = read_message(data)
        assert live.content == imported.content
        assert [(c.name, c.arguments, c.signature) for c in live.tool_calls] == [
            (c.name, c.arguments, c.signature) for c in imported.tool_calls
        ]

    def test_fields_override_and_meta_merges(self) -> None:
        """Fields given beside a message are set on the turn; `meta` adds to the message's."""
        turn = read_message(ANTHROPIC_MESSAGE, model="other", meta={"step": 3}, pinned=True)
        assert (turn.model, turn.pinned, dict(turn.meta)) == ("other", True, {"step": 3})

    @pytest.mark.parametrize(
        "value",
        [
            ChatCompletionMessage.model_validate(OPENAI_MESSAGE),
            ANTHROPIC_MESSAGE,
            {"role": "model", "parts": []},
        ],
    )
    def test_is_reply(self, value: Any) -> None:
        """Messages are replies."""
        assert is_reply(value)

    @pytest.mark.parametrize("value", ["text", [TextPart(text="t")], TextPart(text="t"), None])
    def test_content_is_not_a_reply(self, value: Any) -> None:
        """Text and parts are content, not replies."""
        assert not is_reply(value)


class TestMessageErrors:
    """A malformed or misplaced message is an `IngestError` naming the path; nothing changes."""

    @pytest.mark.parametrize(
        ("message", "match"),
        [
            ({"role": "user", "content": "hi"}, "role: expected the assistant's message"),
            ({"role": "user", "parts": [{"text": "hi"}]}, "role: expected the model's content"),
            (
                {**OPENAI_MESSAGE, "tool_calls": [{**OPENAI_CALL, "function": {"name": 5}}]},
                r"tool_calls\[0\]\.function\.name: function `name` must be a string",
            ),
            (
                {**ANTHROPIC_MESSAGE, "content": [{"type": "tool_use", "id": "x", "name": "f"}]},
                r"content\[0\]\.input: tool_use `input` must be an object",
            ),
            ({"choices": []}, "this is a whole response, not a message"),
        ],
    )
    def test_refused(self, message: Any, match: str) -> None:
        """The error says what is wrong and where."""
        graph = _graph()
        before = graph_snapshot(graph)
        with pytest.raises(IngestError, match=match):
            graph.add_assistant(message)
        assert graph_snapshot(graph) == before

    def test_unknown_message(self) -> None:
        """A dict that no SDK writes is named by its keys."""
        with pytest.raises(IngestError, match=r"unrecognized reply message \(keys: hello\)"):
            read_message({"hello": 1})

    def test_message_with_tool_calls_beside_it(self) -> None:
        """A whole message and `tool_calls=` together are refused: the message has its own."""
        graph = _graph()
        with pytest.raises(IngestError, match="carries its own tool calls"):
            graph.add_assistant(OPENAI_MESSAGE, tool_calls=[OPENAI_CALL])


class TestWhoReads:
    """Every format's reader says how sure it is that a reply is its own; the surest reads it."""

    def test_a_field_only_one_format_has_beats_a_shared_sign(self) -> None:
        """A message with Gemini's `parts` and Anthropic's blocks is read as Gemini's content."""
        message = {
            "role": "assistant",
            "parts": [{"text": "hi"}],
            "content": [{"type": "thinking", "thinking": "t"}],
        }
        with pytest.raises(IngestError, match="role: expected the model's content"):
            read_message(message)

    def test_a_response_only_field_beats_the_message_mark(self) -> None:
        """A body with `choices` and `"type": "message"` is read as a chat completion."""
        choice = {"message": {"role": "assistant", "content": "x"}}
        body = {**ANTHROPIC_MESSAGE, "choices": [choice]}
        reply = read_response(body)
        assert (reply.provider, reply.turn.content) == ("openai", (TextPart(text="x"),))

    def test_the_error_lists_every_format(self) -> None:
        """A response no reader claims is refused, naming each format's response in order."""
        with pytest.raises(IngestError) as caught:
            read_response({"hello": 1})
        expected = ["`ChatCompletion`", "`Message`", "`GenerateContentResponse`", "`Response`"]
        text = str(caught.value)
        assert [text.index(name) for name in expected] == sorted(text.index(n) for n in expected)


class TestResponses:
    """`read_response` takes a whole response: its turn and its prompt usage."""

    def test_openai_completion(self) -> None:
        """`choices[0].message`, the completion's id and model, `usage.prompt_tokens`."""
        completion = ChatCompletion.model_validate(
            {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "created": 1,
                "model": "gpt-4o",
                "choices": [{"index": 0, "finish_reason": "stop", "message": OPENAI_MESSAGE}],
                "usage": {"prompt_tokens": 50, "completion_tokens": 5, "total_tokens": 55},
            }
        )
        reply = read_response(completion)
        assert (reply.provider, reply.prompt_tokens) == ("openai", 50)
        assert (reply.turn.message_id, reply.turn.model) == ("chatcmpl-1", "gpt-4o")

    def test_anthropic_usage_counts_the_cache(self) -> None:
        """Input tokens plus cache reads plus cache writes: the whole prompt."""
        usage = {
            "input_tokens": 12,
            "output_tokens": 7,
            "cache_read_input_tokens": 1000,
            "cache_creation_input_tokens": 30,
        }
        reply = read_response(Message.model_validate({**ANTHROPIC_MESSAGE, "usage": usage}))
        assert (reply.provider, reply.prompt_tokens) == ("anthropic", 1042)

    def test_gemini_response(self) -> None:
        """`candidates[0].content`, `usage_metadata.prompt_token_count`, id and model version."""
        data = {
            "candidates": [{"content": GEMINI_CONTENT, "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 77, "candidatesTokenCount": 3},
            "modelVersion": "gemini-3-pro-preview",
            "responseId": "resp-1",
        }
        for response in (data, genai.GenerateContentResponse.model_validate(data)):
            reply = read_response(response)
            assert (reply.provider, reply.prompt_tokens) == ("gemini", 77)
            assert (reply.turn.message_id, reply.turn.model) == ("resp-1", "gemini-3-pro-preview")
            assert [c.id for c in reply.turn.tool_calls] == ["gemini_read_0", "gemini_read_1"]

    @pytest.mark.parametrize(
        ("response", "match"),
        [
            ({"id": "x"}, "unrecognized response .*expected an OpenAI `ChatCompletion`"),
            (ChatCompletionMessage.model_validate(OPENAI_MESSAGE), "unrecognized response"),
            ({"candidates": []}, r"candidates: `candidates` must be a non-empty list"),
            (
                {"candidates": [{"finishReason": "SAFETY"}]},
                r"no content \(finish reason: SAFETY\)",
            ),
            (
                {"choices": [{"message": OPENAI_MESSAGE}], "usage": {"prompt_tokens": "many"}},
                r"usage\.prompt_tokens: `usage\.prompt_tokens` must be a count of tokens",
            ),
            ("not a response", "a reply must be an SDK object or a dict, got str"),
        ],
    )
    def test_refused(self, response: Any, match: str) -> None:
        """What cannot be read raises `IngestError` saying what was expected."""
        with pytest.raises(IngestError, match=match):
            read_response(response)
