"""Provider compaction artifacts read from every shape the two providers give them in.

Anthropic: a `compaction` block opening an assistant message, in a message list, a
request body, or a reply (`read_response`, the SDK's beta `BetaMessage`). Responses: a
`compaction` item in an input list, a request body or a response object (the SDK's
`Response`). Each becomes one `Compaction` event carrying the artifact verbatim; a
malformed one is refused with its place, and nothing is read.
"""

from __future__ import annotations

from typing import Any

import pytest
from anthropic.types.beta import BetaMessage
from openai.types.responses import Response, ResponseCompactionItem

from context_graph.errors import IngestError
from context_graph.graph.content import TextPart
from context_graph.graph.context_graph import ContextGraph
from context_graph.graph.events import AssistantTurn, Compaction, ToolResult, UserTurn
from context_graph.graph.json_limits import MAX_STRING
from context_graph.graph.sdk_replies import read_message, read_response
from context_graph.importers import detect_format, load_events
from context_graph.render import Renderer

SUMMARY = "The user asked to fix a.py; the test failure was an off-by-one in line 3."
BLOCK: dict[str, Any] = {"type": "compaction", "content": SUMMARY, "encrypted_content": "ZW5j"}
ENCRYPTED = "gAAAAABpG5SB-opaque+/=="
ITEM: dict[str, Any] = {"type": "compaction", "id": "cmp_1", "encrypted_content": ENCRYPTED}

ANTHROPIC_MESSAGES: list[dict[str, Any]] = [
    {"role": "user", "content": "fix a.py"},
    {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"p": "a"}}],
    },
    {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "x"}],
    },
    {"role": "assistant", "content": [BLOCK, {"type": "text", "text": "Fixed it."}]},
    {"role": "user", "content": "thanks"},
]
RESPONSES_ITEMS: list[dict[str, Any]] = [
    {"role": "user", "content": "fix a.py"},
    {"type": "function_call", "call_id": "c1", "name": "read", "arguments": "{}"},
    {"type": "function_call_output", "call_id": "c1", "output": "x = 1"},
    ITEM,
    {"role": "user", "content": "thanks"},
]


def _natives(events: list[Any]) -> list[Compaction]:
    return [e for e in events if isinstance(e, Compaction) and e.native is not None]


class TestAnthropic:
    @pytest.mark.parametrize(
        "payload",
        [ANTHROPIC_MESSAGES, {"system": "be brief", "messages": ANTHROPIC_MESSAGES}],
        ids=["message-list", "request-body"],
    )
    def test_a_leading_block_becomes_a_compaction_before_the_turn(self, payload: Any) -> None:
        """The block is a `Compaction` with its readable text, then the turn made of the rest."""
        assert detect_format(payload) == "anthropic"
        events = load_events(payload)
        (compaction,) = _natives(events)
        assert compaction.native is not None and compaction.native.provider == "anthropic"
        assert dict(compaction.native.item) == BLOCK
        assert compaction.content == (TextPart(text=SUMMARY),)
        after = events[events.index(compaction) + 1]
        assert isinstance(after, AssistantTurn)
        assert after.content == (TextPart(text="Fixed it."),)

    def test_a_reply_that_paused_after_compacting_is_the_compaction_alone(self) -> None:
        """An assistant message holding only the block gives no empty assistant turn."""
        messages = [{"role": "user", "content": "go"}, {"role": "assistant", "content": [BLOCK]}]
        events = load_events(messages)
        assert [type(e) for e in events] == [UserTurn, Compaction]

    def test_a_failed_compaction_is_left_out(self) -> None:
        """A block with null `content` (the API's no-op) stands for nothing and is not read."""
        failed = {"type": "compaction", "content": None}
        messages = [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [failed, {"type": "text", "text": "ok"}]},
        ]
        events = load_events(messages)
        assert [type(e) for e in events] == [UserTurn, AssistantTurn]

    def test_the_sdk_reply_gives_the_compaction_then_the_turn(self) -> None:
        """`read_response` of the SDK's `BetaMessage` lists the compaction first in `events`."""
        reply = BetaMessage.model_validate(
            {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": "claude-opus-4-6",
                "content": [BLOCK, {"type": "text", "text": "Fixed it."}],
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": {"input_tokens": 10, "output_tokens": 5},
            }
        )
        read = read_response(reply)
        (compaction,) = read.compactions
        assert compaction.native is not None and compaction.native.item["content"] == SUMMARY
        assert read.events == (compaction, read.turn)
        assert read.turn.content == (TextPart(text="Fixed it."),)
        assert read.turn.message_id == "msg_1"

    def test_read_message_refuses_what_it_cannot_hold(self) -> None:
        """A single assistant turn cannot carry the compaction: the error says what to use."""
        message = {"role": "assistant", "content": [BLOCK, {"type": "text", "text": "ok"}]}
        with pytest.raises(IngestError, match=r"read_response\(message\)\.events"):
            read_message(message)


class TestResponses:
    @pytest.mark.parametrize(
        "payload",
        [
            RESPONSES_ITEMS,
            {"instructions": "be brief", "input": RESPONSES_ITEMS},
        ],
        ids=["item-list", "request-body"],
    )
    def test_an_item_becomes_a_compaction_in_its_place(self, payload: Any) -> None:
        """The item is a `Compaction` with no readable text, between the items around it."""
        assert detect_format(payload) == "openai_responses"
        events = load_events(payload)
        (compaction,) = _natives(events)
        assert compaction.native is not None and compaction.native.provider == "responses"
        assert dict(compaction.native.item) == ITEM
        assert compaction.content == ()
        index = events.index(compaction)
        assert isinstance(events[index - 1], ToolResult)
        assert isinstance(events[index + 1], UserTurn)

    def test_the_sdk_response_object_is_read(self) -> None:
        """A `Response` whose output opens with a compaction item (server-side compaction)."""
        response = Response.model_validate(
            {
                "id": "resp_1",
                "object": "response",
                "created_at": 1,
                "model": "gpt-5",
                "output": [
                    ITEM | {"created_by": "system"},
                    {
                        "type": "message",
                        "id": "msg_1",
                        "role": "assistant",
                        "status": "completed",
                        "content": [{"type": "output_text", "text": "Done.", "annotations": []}],
                    },
                ],
                "parallel_tool_calls": True,
                "tool_choice": "auto",
                "tools": [],
            }
        )
        events = load_events(response.model_dump(mode="json", exclude_none=True))
        (compaction,) = _natives(events)
        assert compaction.native is not None
        assert compaction.native.item["created_by"] == "system"
        assert isinstance(events[-1], AssistantTurn)

    def test_the_compact_endpoints_window_is_read_and_sent_back_as_it_came(self) -> None:
        """A `CompactedResponse` (the user's messages, then the item) renders as itself."""
        # The JSON the endpoint returns: the SDK's `CompactedResponse` types `output` with
        # output items, which do not cover the user messages it holds.
        payload: dict[str, Any] = {
            "id": "cmp_resp_1",
            "object": "response.compaction",
            "created_at": 1,
            "output": [
                {
                    "type": "message",
                    "id": "msg_1",
                    "role": "user",
                    "status": "completed",
                    "content": [{"type": "input_text", "text": "fix a.py"}],
                },
                ITEM | {"created_by": "system"},
            ],
            "usage": {
                "input_tokens": 100,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": 10,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": 110,
            },
        }
        assert ResponseCompactionItem.model_validate(payload["output"][1])
        assert detect_format(payload) == "openai_responses"
        events = load_events(payload)
        assert [type(e) for e in events] == [UserTurn, Compaction]
        graph = ContextGraph()
        graph.ingest(events)
        rendered = Renderer(format="responses").render(graph).payload
        assert rendered["input"] == [
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "fix a.py"}],
            },
            ITEM,
        ]


HOSTILE_ANTHROPIC = [
    ({"type": "compaction", "content": 5}, "messages[1].content[0].content"),
    ({"type": "compaction", "content": ""}, "messages[1].content[0].content"),
    (
        {"type": "compaction", "content": "s", "signature": ["x"]},
        "messages[1].content[0].signature",
    ),
    ({"type": "compaction", "content": "s", "surprise": 1}, "messages[1].content[0].surprise"),
    (
        {"type": "compaction", "content": "s" * (MAX_STRING + 1)},
        "messages[1].content[0].content",
    ),
]
HOSTILE_RESPONSES = [
    ({"type": "compaction"}, "input[1].encrypted_content"),
    ({"type": "compaction", "encrypted_content": 42}, "input[1].encrypted_content"),
    ({"type": "compaction", "encrypted_content": ""}, "input[1].encrypted_content"),
    ({"type": "compaction", "encrypted_content": "e", "id": {"x": 1}}, "input[1].id"),
    ({"type": "compaction", "encrypted_content": "e", "summary": []}, "input[1].summary"),
    (
        {"type": "compaction", "encrypted_content": "e" * (MAX_STRING + 1)},
        "input[1].encrypted_content",
    ),
]


class TestHostile:
    @pytest.mark.parametrize(("block", "path"), HOSTILE_ANTHROPIC)
    def test_a_malformed_block_is_refused_where_it_is(self, block: Any, path: str) -> None:
        """Missing fields, wrong types and huge content name the message and the key."""
        body = {
            "system": "s",
            "messages": [
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": [block, {"type": "text", "text": "ok"}]},
            ],
        }
        graph = ContextGraph()
        with pytest.raises(IngestError) as caught:
            graph.ingest(load_events(body))
        assert caught.value.location is not None
        assert caught.value.location.index == 1
        assert caught.value.location.path == path
        assert len(graph) == 0

    @pytest.mark.parametrize(("item", "path"), HOSTILE_RESPONSES)
    def test_a_malformed_item_is_refused_where_it_is(self, item: Any, path: str) -> None:
        """A compaction item without its payload, or with a wrong one, names the key."""
        body = {"input": [{"role": "user", "content": "go"}, item]}
        graph = ContextGraph()
        with pytest.raises(IngestError) as caught:
            graph.ingest(load_events(body))
        assert caught.value.location is not None
        assert caught.value.location.index == 1
        assert caught.value.location.path == path
        assert len(graph) == 0

    def test_a_block_after_other_blocks_is_refused(self) -> None:
        """What a compaction in mid-message stands for is ambiguous: it is refused."""
        messages = [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [{"type": "text", "text": "a"}, BLOCK]},
        ]
        with pytest.raises(IngestError, match="must come first") as caught:
            load_events(messages)
        assert caught.value.location is not None
        assert caught.value.location.path == "[1].content[1].type"

    def test_a_block_in_a_user_message_is_refused(self) -> None:
        """Only the assistant's message carries a compaction block."""
        messages = [{"role": "user", "content": [BLOCK]}]
        with pytest.raises(IngestError, match="compaction") as caught:
            load_events(messages, format="anthropic")
        assert caught.value.location is not None
        assert caught.value.location.path == "[0].content[0].type"
