from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from context_graph.validate import validate

SdkCheck = Callable[[Any, str], list[str]]

OPENAI = {
    "messages": [
        {"role": "developer", "content": "Be terse."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is in this image?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA"}},
            ],
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                {"id": "c2", "type": "function", "function": {"name": "g", "arguments": "{}"}},
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "1"},
        {"role": "tool", "tool_call_id": "c2", "content": [{"type": "text", "text": "2"}]},
        {"role": "assistant", "content": "Done."},
    ]
}

ANTHROPIC = {
    "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
    "messages": [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Look."},
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": "AA"},
                },
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "Hmm.", "signature": "c2ln"},
                {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"q": 1}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"},
                {"type": "text", "text": "Go on."},
            ],
        },
    ],
}


def _edited(payload: dict[str, Any], edit: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    copied = copy.deepcopy(payload)
    edit(copied)
    return copied


def _rename(obj: dict[str, Any], old: str, new: str) -> None:
    obj[new] = obj.pop(old)


class TestSdkCheck:
    @pytest.mark.parametrize(("payload", "fmt"), [(OPENAI, "openai"), (ANTHROPIC, "anthropic")])
    def test_correct_payload_passes(self, sdk_check: SdkCheck, payload: Any, fmt: str) -> None:
        """A correct payload matches the SDK types and breaks no validation rule."""
        assert sdk_check(payload, fmt) == []
        assert validate(payload, fmt) == []  # type: ignore[arg-type]

    def test_misspelled_tool_calls_is_an_unknown_key(self, sdk_check: SdkCheck) -> None:
        """`tool_call` for `tool_calls` is reported, which TypeAdapter would let through."""
        payload = _edited(OPENAI, lambda p: _rename(p["messages"][2], "tool_calls", "tool_call"))
        assert sdk_check(payload, "openai") == [
            "messages[2].tool_call: unknown key for ChatCompletionAssistantMessageParam"
        ]

    def test_misspelled_tool_use_id_is_reported(self, sdk_check: SdkCheck) -> None:
        """`tool_use_ids` is an unknown key and leaves the required `tool_use_id` missing."""
        block = ("messages", 2, "content", 0)

        def edit(p: dict[str, Any]) -> None:
            _rename(p[block[0]][block[1]][block[2]][block[3]], "tool_use_id", "tool_use_ids")

        assert sdk_check(_edited(ANTHROPIC, edit), "anthropic") == [
            "messages[2].content[0].tool_use_ids: unknown key for ToolResultBlockParam",
            "messages[2].content[0].tool_use_id: missing required key",
        ]

    def test_wrong_literal_is_reported(self, sdk_check: SdkCheck) -> None:
        """A tool call of type `functions` is not the literal `function`."""

        def edit(p: dict[str, Any]) -> None:
            p["messages"][2]["tool_calls"][0]["type"] = "functions"

        assert sdk_check(_edited(OPENAI, edit), "openai") == [
            "messages[2].tool_calls[0].type: expected one of ['function'], got 'functions'"
        ]

    def test_wrong_media_type_literal_is_reported(self, sdk_check: SdkCheck) -> None:
        """An image media type outside the SDK's literal set is reported with its path."""

        def edit(p: dict[str, Any]) -> None:
            p["messages"][0]["content"][1]["source"]["media_type"] = "image/bmp"

        (problem,) = sdk_check(_edited(ANTHROPIC, edit), "anthropic")
        assert problem.startswith("messages[0].content[1].source.media_type: expected one of")

    def test_missing_required_key_is_reported(self, sdk_check: SdkCheck) -> None:
        """A tool message without `tool_call_id` misses a required key."""
        payload = _edited(OPENAI, lambda p: p["messages"][3].pop("tool_call_id"))
        assert sdk_check(payload, "openai") == ["messages[3].tool_call_id: missing required key"]

    def test_wrong_json_type_is_reported(self, sdk_check: SdkCheck) -> None:
        """A thinking signature that is not a string, and a non-object message, are reported."""

        def edit(p: dict[str, Any]) -> None:
            p["messages"][1]["content"][0]["signature"] = 7
            p["messages"].append("hello")

        problems = sdk_check(_edited(ANTHROPIC, edit), "anthropic")
        assert problems[0] == "messages[1].content[0].signature: expected str, got int"
        assert problems[1].startswith("messages[3]: expected an object")

    def test_system_is_checked(self, sdk_check: SdkCheck) -> None:
        """Anthropic's top-level `system` is checked against the SDK's `system` type."""
        payload = _edited(ANTHROPIC, lambda p: p["system"][0].update(txt="x"))
        assert sdk_check(payload, "anthropic") == ["system[0].txt: unknown key for TextBlockParam"]

    def test_gemini_is_skipped(self, sdk_check: SdkCheck) -> None:
        """No Gemini SDK is installed, so Gemini payloads are not checked."""
        assert sdk_check({"contents": "anything"}, "gemini") == []

    def test_non_object_payload(self, sdk_check: SdkCheck) -> None:
        """A body that is not an object is reported, not raised."""
        assert sdk_check([], "openai") == ["$: expected an object, got list"]
