"""`ToolInputClearer` and `ThinkingClearer` through a `ContextManager`, in all four formats."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from context_graph.errors import ConfigurationError
from context_graph.validate.request import validate
from orchestrator import ContextManager
from orchestrator.policy import Policy
from processors import ThinkingClearer, ToolInputClearer, available_processors, create_processor
from processors.tool_inputs import CLEARED_INPUT_KEY

FORMATS = ("openai", "anthropic", "gemini", "responses")
BIG = "\n".join(f"line {i} = {i * i}  # the value of row {i}" for i in range(300))


def session(turns: int = 5, *, write: str = BIG, tool: str = "write") -> list[dict[str, Any]]:
    """A coding session: a large write in the first turn, then `turns - 1` small loops."""
    events: list[dict[str, Any]] = [
        {"type": "system", "content": "you write code"},
        {"type": "user", "content": "write a.py"},
        {
            "type": "assistant",
            "content": [
                {"type": "thinking", "thinking": "I will write it", "signature": "sig-0"},
                {"type": "text", "text": "Writing a.py."},
            ],
            "tool_calls": [
                {
                    "id": "w1",
                    "name": tool,
                    "arguments": json.dumps({"path": "a.py", "content": write, "mode": 420}),
                }
            ],
        },
        {"type": "tool_result", "call_id": "w1", "name": tool, "content": "wrote a.py"},
    ]
    for turn in range(1, turns):
        events += [
            {"type": "user", "content": f"step {turn}"},
            {
                "type": "assistant",
                "content": [
                    {"type": "thinking", "thinking": f"think {turn}", "signature": f"sig-{turn}"},
                    {"type": "redacted_thinking", "data": f"opaque-{turn}"},
                ],
                "tool_calls": [{"id": f"b{turn}", "name": "bash", "arguments": '{"cmd": "ls"}'}],
            },
            {"type": "tool_result", "call_id": f"b{turn}", "name": "bash", "content": "a.py"},
        ]
    return events


def compacted(fmt: str, events: list[dict[str, Any]], *processors: Any) -> ContextManager:
    manager = ContextManager(format=fmt, policy=Policy(pipeline=processors))
    manager.ingest(events)
    anyio.run(manager.compact)
    return manager


def thinking_blocks(payload: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        block
        for message in payload["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") in ("thinking", "redacted_thinking")
    ]


class TestToolInputClearer:
    @pytest.mark.parametrize("fmt", FORMATS)
    def test_old_write_is_cleared_and_stays_valid(self, fmt: str) -> None:
        """An old 300-line write is sent as its path, its mode and a placeholder, validly."""
        manager = ContextManager(format=fmt, policy=Policy())
        manager.ingest(session())
        before = manager.render_sync()
        manager = compacted(fmt, session(), ToolInputClearer())
        after = manager.render_sync()
        assert validate(after.payload, fmt) == []
        assert after.tokens < before.tokens - 1_500
        body = json.dumps(after.payload)
        assert "line 299" not in body and "a.py" in body and "content cleared: 300 line(s)" in body

    def test_anthropic_input_is_an_object_keeping_small_arguments(self) -> None:
        """Anthropic `input` stays an object with the path and the mode as they were."""
        payload = compacted("anthropic", session(), ToolInputClearer()).render_sync().payload
        (use,) = [
            block
            for message in payload["messages"]
            if isinstance(message["content"], list)
            for block in message["content"]
            if block.get("type") == "tool_use" and block["name"] == "write"
        ]
        assert use["id"] == "w1"
        assert use["input"]["path"] == "a.py" and use["input"]["mode"] == 420
        assert use["input"]["content"].startswith("[content cleared: 300 line(s)")

    def test_the_original_stays_expandable(self) -> None:
        """The cleared call expands to the pristine call with its full arguments."""
        manager = compacted("openai", session(), ToolInputClearer())
        cleared = [n for n in manager.working.view.overlay.derived.values()]
        (call,) = [n for n in cleared if CLEARED_INPUT_KEY in n.meta]
        (original,) = manager.expand(call.id)
        assert json.loads(original.arguments)["content"] == BIG  # type: ignore[attr-defined]

    def test_recent_and_other_tools_are_kept(self) -> None:
        """A write of the last turns, and a large call of a tool not listed, keep their input."""
        for events in (session(turns=2), session(tool="search")):
            payload = compacted("openai", events, ToolInputClearer()).render_sync().payload
            assert "line 299" in json.dumps(payload)

    def test_bad_options_are_refused(self) -> None:
        """Out-of-range options raise `ConfigurationError` naming them."""
        for options in ({"keep_turns": 0}, {"tools": "write"}, {"min_tokens": -1}):
            with pytest.raises(ConfigurationError, match="ToolInputClearer"):
                ToolInputClearer(**options)

    def test_registered(self) -> None:
        """Profiles find it by name."""
        assert "clear_tool_inputs" in available_processors()
        assert isinstance(create_processor("clear_tool_inputs", keep_turns=2), ToolInputClearer)


class TestThinkingClearer:
    def test_finished_turns_lose_their_thinking_the_current_loop_keeps_it(self) -> None:
        """Only the current user turn's signed blocks go back, unmodified."""
        payload = compacted("anthropic", session(), ThinkingClearer()).render_sync().payload
        assert validate(payload, "anthropic") == []
        assert thinking_blocks(payload) == [
            {"type": "thinking", "thinking": "think 4", "signature": "sig-4"},
            {"type": "redacted_thinking", "data": "opaque-4"},
        ]

    def test_current_tool_loop_is_never_touched(self) -> None:
        """A session still in its first user turn keeps every thinking block."""
        payload = compacted("anthropic", session(turns=1), ThinkingClearer()).render_sync()
        assert thinking_blocks(payload.payload)[0]["signature"] == "sig-0"

    def test_bad_option_is_refused(self) -> None:
        """`keep_turns` below 1 would clear the running loop's thinking: refused."""
        with pytest.raises(ConfigurationError, match="keep_turns"):
            ThinkingClearer(keep_turns=0)
        assert isinstance(create_processor("clear_thinking"), ThinkingClearer)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    fmt=st.sampled_from(FORMATS),
    turns=st.integers(1, 6),
    lines=st.integers(0, 400),
    keep=st.integers(1, 4),
    tool=st.sampled_from(["write", "Edit", "apply_patch", "str_replace_editor", "bash"]),
)
def test_clearing_keeps_every_request_valid(
    fmt: str, turns: int, lines: int, keep: int, tool: str
) -> None:
    """Both clearers never break pairing, validity or a signed block, in every format."""
    write = "\n".join(f"x{i} = {i}" for i in range(lines))
    events = session(turns, write=write, tool=tool)
    manager = compacted(
        fmt, events, ThinkingClearer(keep_turns=keep), ToolInputClearer(keep_turns=keep)
    )
    payload = manager.render_sync().payload
    assert validate(payload, fmt) == []
    if fmt == "anthropic":
        signed = {f"sig-{t}": f"think {t}" for t in range(turns)} | {"sig-0": "I will write it"}
        for block in thinking_blocks(payload):
            if block["type"] == "thinking":
                assert signed[block["signature"]] == block["thinking"]
        last = thinking_blocks(payload)
        assert any(b.get("signature") == f"sig-{turns - 1}" for b in last)
