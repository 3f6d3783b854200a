"""`held_prefix`: the longest leading part of a caller's conversation a record holds."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph.graph.context_graph import ContextGraph
from context_graph.importers import load_events, load_graph
from orchestrator.integrations.held import held_prefix, open_calls

#: Few texts, so that conversations repeat themselves ("continue", "ok").
TEXTS = st.sampled_from(["continue", "ok", "read it", "done"])


@st.composite
def conversations(draw: st.DrawFn) -> tuple[list[Any], list[int]]:
    """A chat conversation of steps (user, assistant with calls, results); step ends."""
    items: list[Any] = [{"role": "system", "content": "Be careful."}]
    ends = [1]
    for step in range(draw(st.integers(1, 6))):
        items.append({"role": "user", "content": draw(TEXTS)})
        calls = draw(st.integers(0, 2))
        message: dict[str, Any] = {"role": "assistant", "content": draw(TEXTS)}
        if calls:
            message["tool_calls"] = [
                {
                    "id": f"c{step}_{k}",
                    "type": "function",
                    "function": {"name": "read", "arguments": json.dumps({"k": k})},
                }
                for k in range(calls)
            ]
        items.append(message)
        items += [
            {"role": "tool", "tool_call_id": f"c{step}_{k}", "content": draw(TEXTS)}
            for k in range(calls)
        ]
        ends.append(len(items))
    return items, ends


def held(items: list[Any], record: ContextGraph) -> Any:
    events = load_events({"messages": items}, format="openai")
    return held_prefix(events, record, items=len(items))


class TestHeldPrefix:
    @settings(max_examples=60)
    @given(conversation=conversations(), data=st.data())
    def test_the_held_part_is_what_the_record_was_built_from(
        self, conversation: tuple[list[Any], list[int]], data: st.DataObject
    ) -> None:
        """A record of the first k items holds exactly those k of the whole conversation."""
        items, ends = conversation
        k = data.draw(st.sampled_from(ends))
        record = load_graph({"messages": items[:k]}, format="openai")
        found = held(items, record)
        assert (found.items, found.rest) == (k, False)

    def test_only_new_items_hold_nothing(self) -> None:
        """A list of new items only is held nowhere: all of it is new."""
        record = load_graph({"messages": [{"role": "user", "content": "a"}]}, format="openai")
        found = held([{"role": "user", "content": "b"}], record)
        assert (found.items, found.matched, found.rest) == (0, 0, True)

    def test_a_reply_the_caller_left_out_is_stepped_over(self) -> None:
        """The record's assistant turns need not be in the caller's list."""
        record = load_graph(
            {
                "messages": [
                    {"role": "user", "content": "a"},
                    {"role": "assistant", "content": "reply"},
                    {"role": "user", "content": "b"},
                ]
            },
            format="openai",
        )
        found = held([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}], record)
        assert (found.items, found.matched, found.rest) == (2, 2, False)

    def test_a_changed_item_ends_the_held_part(self) -> None:
        """After a changed item the record still holds more: the list left it partway."""
        base = [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]
        record = load_graph({"messages": base}, format="openai")
        found = held([base[0], {"role": "user", "content": "c"}], record)
        assert (found.items, found.matched, found.rest) == (1, 1, True)

    def test_a_changed_system_prompt_is_new_and_the_rest_still_held(self) -> None:
        """A list whose system prompt changed is still held after it; the prompt is new."""
        base = [{"role": "system", "content": "one"}, {"role": "user", "content": "a"}]
        record = load_graph({"messages": base}, format="openai")
        found = held([{"role": "system", "content": "two"}, base[1]], record)
        assert (found.items, found.matched, found.rest) == (2, 1, False)
        assert [e.content[0].text for e in found.systems] == ["two"]

    def test_an_item_held_only_in_part_is_not_held(self) -> None:
        """The last message is the record's tool result with a text appended (Claude Code
        appends its compaction prompt so): the held part ends before that message, at
        the turn making the call, and the record holds more after it."""
        call = {"type": "tool_use", "id": "t1", "name": "read", "input": {}}
        result = {"type": "tool_result", "tool_use_id": "t1", "content": "the file"}
        base = [
            {"role": "user", "content": "Read the file."},
            {"role": "assistant", "content": [call]},
            {"role": "user", "content": [result]},
        ]
        record = load_graph({"messages": base}, format="anthropic")
        appended = [result, {"type": "text", "text": "Sum up."}]
        grown = [*base[:2], {"role": "user", "content": appended}]
        events = load_events({"messages": grown}, format="anthropic")
        found = held_prefix(events, record, items=len(grown))
        assert (found.items, found.matched, found.rest) == (2, 2, True)
        assert found.last is not None and record[found.last].kind == "assistant"

    def test_open_calls_are_the_last_turns_unanswered(self) -> None:
        """`open_calls` gives the calls of the last assistant turn still without an answer."""
        call = {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}
        record = load_graph(
            {
                "messages": [
                    {"role": "user", "content": "a"},
                    {"role": "assistant", "content": None, "tool_calls": [call]},
                ]
            },
            format="openai",
        )
        assert [c.tool_call_id for c in open_calls(record)] == ["c1"]
