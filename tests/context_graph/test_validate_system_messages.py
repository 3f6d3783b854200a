"""Mid-conversation system messages in an Anthropic body: taken by the model that takes
them (Claude Opus 4.8, on Anthropic's own API), where the API's placement rules allow.

Claude Code 2.1.197 sends one after its first message in every request (the list of its
agent types) and may end a request with another: the fake upstream refused every raw
body it sent.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from context_graph.validate import validate

MODEL = "claude-opus-4-8"
USER = {"role": "user", "content": "Count the files."}
SYSTEM = {"role": "system", "content": "Answer in one line."}
CALL = {
    "role": "assistant",
    "content": [{"type": "tool_use", "id": "t1", "name": "ls", "input": {}}],
}
RESULT = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a"}]}
ANSWER = {"role": "assistant", "content": "Two files."}


def rules(*messages: dict[str, Any], model: str = MODEL) -> list[str]:
    body = {"model": model, "max_tokens": 10, "messages": list(messages)}
    return [violation.rule for violation in validate(body, "anthropic")]


class TestTaken:
    def test_after_the_first_message_and_last(self) -> None:
        """Claude Code's shape: one after its first message, one at the end."""
        assert rules(USER, SYSTEM, CALL, RESULT, SYSTEM) == []

    def test_after_the_tool_results_before_the_answer(self) -> None:
        assert rules(USER, CALL, RESULT, SYSTEM, ANSWER) == []

    def test_as_text_blocks_with_a_cache_mark(self) -> None:
        blocks = [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}]
        assert rules(USER, {"role": "system", "content": blocks}) == []

    def test_a_snapshot_id_of_the_model(self) -> None:
        assert rules(USER, SYSTEM, model="claude-opus-4-8-20260528") == []


class TestRefused:
    @pytest.mark.parametrize(
        "model", ["claude-sonnet-5", "claude-opus-4-7", "us.anthropic.claude-opus-4-8-v1:0", ""]
    )
    def test_by_any_other_model(self, model: str) -> None:
        """Other models (and the model on a cloud platform) answer with a 400."""
        assert rules(USER, SYSTEM, model=model) == ["system_role_in_messages"]

    @pytest.mark.parametrize(
        ("messages", "index"),
        [
            ((SYSTEM, USER), 0),  # first
            ((USER, CALL, SYSTEM, RESULT), 2),  # after an assistant message
            ((USER, SYSTEM, USER), 1),  # followed by a user message
            ((USER, SYSTEM, SYSTEM), 1),  # two in a row
        ],
    )
    def test_out_of_place(self, messages: tuple[dict[str, Any], ...], index: int) -> None:
        body = {"model": MODEL, "max_tokens": 10, "messages": list(messages)}
        found = [v for v in validate(body, "anthropic") if v.rule == "system_message_misplaced"]
        assert found and found[0].index == index
        assert found[0].path == f"messages[{index}].role"

    @pytest.mark.parametrize(
        "content",
        ["", "  ", None, [], [{"type": "image", "source": {}}], [{"type": "tool_result"}], 5],
    )
    def test_with_other_than_text(self, content: Any) -> None:
        assert "system_message_content_invalid" in rules(
            USER, {"role": "system", "content": content}
        )

    def test_with_an_unknown_key(self) -> None:
        assert rules(USER, SYSTEM | {"name": "x"}) == ["unknown_field"]


@given(
    st.lists(st.sampled_from(["user", "system", "assistant"]), min_size=1, max_size=8),
)
def test_placement_matches_the_apis_rules(roles: list[str]) -> None:
    """A system message is accepted exactly where the API's rules put it: not first,
    right after a user message, then the end or an assistant message, never two together."""
    text = {"user": "hi", "system": "be brief", "assistant": "ok"}
    messages = [{"role": role, "content": text[role]} for role in roles]
    found = rules(*messages)
    for pos, role in enumerate(roles):
        if role != "system":
            continue
        allowed = (
            pos > 0
            and roles[pos - 1] == "user"
            and (pos + 1 == len(roles) or roles[pos + 1] == "assistant")
        )
        if not allowed:
            assert "system_message_misplaced" in found
    if "system_message_misplaced" in found:
        assert any(
            role == "system"
            and not (
                pos > 0
                and roles[pos - 1] == "user"
                and (pos + 1 == len(roles) or roles[pos + 1] == "assistant")
            )
            for pos, role in enumerate(roles)
        )
