"""What an agent's harness writes in the user's role is read as a notice by the gateways'
readers (`context_graph.formats.harness`), not as the user's latest request.

The shapes are the real agents': Claude Code 2.1.197 sends its first message as the
CLAUDE.md reminder, the prompt and a reminder listing agent types, and appends a
`<system-reminder>` nudge to a tool result every few steps; Codex 0.171 sends its
AGENTS.md instructions and `<environment_context>` as a message before the prompt
(both seen through the gateway: tests/orchestrator/gateway/test_claude_code.py,
test_codex.py).
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from context_graph.formats.anthropic import gateway as anthropic_gateway
from context_graph.formats.anthropic import read as anthropic
from context_graph.formats.harness import (
    HARNESS_TAGS,
    harness_runs,
    is_harness_message,
    is_harness_text,
)
from context_graph.formats.openai_chat import gateway as chat_gateway
from context_graph.formats.openai_chat import read as chat
from context_graph.formats.openai_responses import read as responses
from context_graph.graph.anchors import floor_anchors
from context_graph.graph.content import ImagePart, TextPart
from context_graph.graph.context_graph import ContextGraph
from context_graph.graph.events import AgentEvent, ToolResult, UserTurn
from context_graph.importers._base import RawInput
from context_graph.render import Renderer

CLAUDE_MD = (
    "<system-reminder>\nAs you answer the user's questions, you can use the following "
    "context:\n# claudeMd\nAlways run the tests before you finish.\n</system-reminder>"
)
AGENT_TYPES = "<system-reminder>\nAvailable agent types for the Agent tool:\n</system-reminder>"
NUDGE = (
    "<system-reminder>\nThe task tools haven't been used recently. If you're working on "
    "tasks that would benefit from tracking progress, consider using them.\n</system-reminder>"
)
NOTIFICATION = (
    "<task-notification>\n<task-id>bd0afab</task-id>\n<status>completed</status>\n"
    "</task-notification>\nRead the output file to retrieve the result: /tmp/tasks/bd0afab.output"
)
ENVIRONMENT = (
    "<environment_context>\n  <cwd>/w</cwd>\n  <shell>bash</shell>\n</environment_context>"
)
AGENTS_MD = "# AGENTS.md instructions for /w\n\n<INSTRUCTIONS>\nRun the tests.\n</INSTRUCTIONS>"


def _text(value: str) -> dict[str, str]:
    return {"type": "text", "text": value}


def _result(call_id: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call_id, "content": "out"}


def _anthropic(*messages: dict[str, Any]) -> list[AgentEvent]:
    (session,) = anthropic.to_sessions(RawInput({"system": "sys", "messages": list(messages)}))
    return [event for event in session.events if event.type != "system"]


def _users(events: list[AgentEvent]) -> list[tuple[bool, str]]:
    return [
        (event.notice, "".join(p.text for p in event.content if isinstance(p, TextPart)))
        for event in events
        if isinstance(event, UserTurn)
    ]


class TestHarnessText:
    @pytest.mark.parametrize(
        "text",
        [
            NUDGE,
            f"  {CLAUDE_MD}\n\n{AGENT_TYPES}\n",
            NOTIFICATION,
            "[Request interrupted by user]",
            "[Request interrupted by user for tool use]",
            "<local-command-stdout>Reconnected.</local-command-stdout>",
            "<ide_opened_file>The user opened /repo/a.py</ide_opened_file>",
            "<session_context>\n- cwd: /w\n</session_context>",
            ENVIRONMENT,
            AGENTS_MD,
            "<turn_aborted>\nThe user interrupted.\n</turn_aborted>",
        ],
    )
    def test_harness_blocks_alone_are_the_harness(self, text: str) -> None:
        assert is_harness_text(text)

    @pytest.mark.parametrize(
        "text",
        [
            "",
            "   \n",
            "Fix the bug.",
            f"{NUDGE}\nFix the bug.",
            f"Fix the bug. {NUDGE}",
            "<system-reminder>\nleft open",
            "<div>html</div>",
            f"<div>{NUDGE}</div>",
            "Please read <environment_context>x</environment_context>",
            "[Request interrupted by user] and now do this instead",
            f"{NUDGE}\nsee: /tmp/x",  # the output-path line follows a notification only
            "# AGENTS.md is where the rules are",
        ],
    )
    def test_the_users_words_are_not(self, text: str) -> None:
        assert not is_harness_text(text)

    @given(st.sampled_from(sorted(HARNESS_TAGS)), st.text(), st.text())
    def test_a_whole_block_is_the_harness_and_words_after_it_are_not(
        self, tag: str, inside: str, words: str
    ) -> None:
        inside = inside.replace(f"</{tag}>", "")
        block = f"<{tag}>{inside}</{tag}>"
        assert is_harness_text(block)
        if words.strip() and not {"<", "[", ":"} & set(words):
            assert not is_harness_text(block + words)

    @pytest.mark.parametrize(
        "text",
        [
            "<system-reminder>" * 200_000,
            "<task-notification>x</task-notification>" + "a: /b\n" * 200_000,
            "[Request interrupted by user" * 200_000,
            "<" + "a" * 2_000_000 + ">",
            "<system-reminder>" + "x" * 2_000_000,
        ],
        ids=["unclosed-blocks", "path-lines", "unclosed-markers", "a-long-tag", "one-open-block"],
    )
    def test_hostile_text_is_read_once(self, text: str) -> None:
        """Each would take hours read quadratically; read once, each is not the harness's."""
        assert not is_harness_text(text)


class TestRuns:
    @given(
        st.lists(
            st.one_of(
                st.sampled_from([NUDGE, CLAUDE_MD, ENVIRONMENT, "Fix it.", "and this"]).map(
                    lambda text: TextPart(text=text)
                ),
                st.just(ImagePart(data="aGk=", media_type="image/png")),
            ),
            max_size=12,
        )
    )
    def test_runs_keep_every_part_in_order_and_alternate(self, parts: list[Any]) -> None:
        runs = harness_runs(parts)
        assert [part for _, run in runs for part in run] == parts
        assert all(a[0] != b[0] for a, b in itertools.pairwise(runs))
        for harness, run in runs:
            for part in run:
                assert harness == (isinstance(part, TextPart) and is_harness_text(part.text))
        assert is_harness_message(parts) == (bool(runs) and runs == [(True, tuple(parts))])


class TestAnthropicRead:
    def test_claude_codes_first_message_is_a_notice_the_prompt_and_a_notice(self) -> None:
        """Read from one message, rendered back as that one message."""
        first = {
            "role": "user",
            "content": [_text(CLAUDE_MD), _text("Count to three."), _text(AGENT_TYPES)],
        }
        events = _anthropic(first)
        assert _users(events) == [
            (True, CLAUDE_MD),
            (False, "Count to three."),
            (True, AGENT_TYPES),
        ]
        graph = ContextGraph()
        graph.ingest(events)
        assert Renderer(format="anthropic").render(graph).payload["messages"] == [first]

    def test_a_nudge_after_a_tool_result_is_a_notice_and_the_task_stays_the_request(
        self,
    ) -> None:
        call = {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}
        answer = {"role": "user", "content": [_result("t1"), _text(NUDGE)]}
        messages = [
            {"role": "user", "content": "Count to three."},
            {"role": "assistant", "content": [_text("Step 1."), call]},
            answer,
        ]
        events = _anthropic(*messages)
        assert [e.type for e in events] == ["user", "assistant", "tool_result", "user"]
        assert _users(events) == [(False, "Count to three."), (True, NUDGE)]
        graph = ContextGraph()
        graph.ingest(events)
        kinds = [unit.kind for unit in graph.units()]
        request = kinds.index("user")
        # The task is the first and the latest request; the nudge is only the latest
        # user-role unit (before, it was the latest request: the floor's anchor).
        assert floor_anchors(kinds) == (request, request, len(kinds) - 1)
        assert kinds[-1] == "notice"
        rendered = Renderer(format="anthropic").render(graph).payload["messages"]
        assert rendered[-1]["content"][1:] == [_text(NUDGE)]
        assert isinstance(events[2], ToolResult) and rendered[-1]["content"][0]["type"] == (
            "tool_result"
        )

    @pytest.mark.parametrize(
        "content",
        [NUDGE, [_text(NUDGE)], [_text("[Request interrupted by user]")]],
        ids=["string", "block", "interrupted"],
    )
    def test_a_message_of_harness_text_alone_is_a_notice(self, content: Any) -> None:
        events = _anthropic(
            {"role": "user", "content": "Go."}, {"role": "user", "content": content}
        )
        assert [notice for notice, _ in _users(events)] == [False, True]

    def test_a_reminder_in_the_users_block_stays_the_request(self) -> None:
        events = _anthropic({"role": "user", "content": [_text(f"{NUDGE}\nFix the bug.")]})
        assert _users(events) == [(False, f"{NUDGE}\nFix the bug.")]

    def test_an_image_with_a_reminder_is_the_users(self) -> None:
        image = {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": "aGk="},
        }
        events = _anthropic({"role": "user", "content": [image, _text(NUDGE)]})
        turns = [e for e in events if isinstance(e, UserTurn)]
        assert [(t.notice, len(t.content)) for t in turns] == [(False, 1), (True, 1)]

    def test_a_system_message_the_gateway_made_a_reminder_is_a_notice(self) -> None:
        """Claude Code's mid-conversation system message, as the gateway reads it."""
        body = {
            "model": "claude-opus-4-8",
            "system": "sys",
            "messages": [
                {"role": "user", "content": "Count to three."},
                {"role": "system", "content": "Available agent types for the Agent tool."},
            ],
        }
        readable = anthropic_gateway.readable_request(body)
        (session,) = anthropic.to_sessions(RawInput(readable))
        assert [notice for notice, _ in _users(list(session.events))] == [False, True]

    @pytest.mark.parametrize("blocks", [False, True])
    def test_what_the_user_typed_meanwhile_is_a_request(self, blocks: bool) -> None:
        """The system message Claude Code hands a queued user message over in is the
        user's request, its text as sent; another system message stays a notice."""
        queued = f"{anthropic_gateway.QUEUED_MESSAGE}\nThe cap is now $900.\n\nAddress it."
        body = {
            "model": "claude-opus-4-8",
            "system": "sys",
            "messages": [
                {"role": "user", "content": "Count to three."},
                {"role": "system", "content": [_text(queued)] if blocks else queued},
                {"role": "system", "content": "Available agent types for the Agent tool."},
            ],
        }
        readable = anthropic_gateway.readable_request(body)
        (session,) = anthropic.to_sessions(RawInput(readable))
        users = _users(list(session.events))
        assert [notice for notice, _ in users] == [False, False, True]
        assert users[1][1] == queued


class TestChatRead:
    def test_a_system_message_the_gateway_made_a_reminder_is_a_notice(self) -> None:
        body = {
            "model": "m",
            "messages": [
                {"role": "system", "content": "sys"},
                {"role": "user", "content": "Count to three."},
                {"role": "system", "content": "Only use the tools you were given."},
            ],
        }
        readable = chat_gateway.readable_request(body)
        (session,) = chat.to_sessions(RawInput(readable))
        assert [notice for notice, _ in _users(list(session.events))] == [False, True]

    def test_a_message_with_the_users_words_stays_whole_and_a_request(self) -> None:
        content = [_text(NUDGE), _text("And more.")]
        messages = [{"role": "user", "content": content}]
        (session,) = chat.to_sessions(RawInput({"messages": messages}))
        (turn,) = session.events
        assert isinstance(turn, UserTurn) and not turn.notice and len(turn.content) == 2
        graph = ContextGraph()
        graph.ingest(session.events)
        assert Renderer(format="openai").render(graph).payload["messages"] == messages


class TestResponsesRead:
    def test_codexs_context_messages_are_notices(self) -> None:
        """Codex's AGENTS.md and environment message before the prompt (its own shape)."""
        items = [
            {
                "type": "message",
                "role": "user",
                "content": [
                    {"type": "input_text", "text": AGENTS_MD},
                    {"type": "input_text", "text": ENVIRONMENT},
                ],
            },
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "Count with seq."}],
            },
        ]
        (session,) = responses.to_sessions(RawInput({"model": "m", "input": items}))
        assert [notice for notice, _ in _users(list(session.events))] == [True, False]


CLINE_DETAILS = (
    "<environment_details>\n# VSCode Visible Files\nsrc/app.py\n\n# VSCode Open Tabs\n"
    "src/app.py\n\n# Current Time\n1/5/2026, 10:04:12 AM (UTC)\n</environment_details>"
)


class TestClineHistories:
    """Cline and Roo Code keep a task as `api_conversation_history.json`, the Anthropic
    messages they sent: the task in `<task>` tags, and the editor's state in an
    `<environment_details>` block appended to the first request and to every tool's
    result. That block is the harness's, not a request of the user's."""

    def test_the_editors_state_after_a_result_is_a_notice(self) -> None:
        call = {"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "a"}}
        messages = [
            {
                "role": "user",
                "content": [
                    _text("<task>\nFix the crash in src/app.py\n</task>"),
                    _text(CLINE_DETAILS),
                ],
            },
            {"role": "assistant", "content": [_text("Reading it."), call]},
            {"role": "user", "content": [_result("t1"), _text(CLINE_DETAILS)]},
        ]
        events = _anthropic(*messages)
        assert _users(events) == [
            (False, "<task>\nFix the crash in src/app.py\n</task>"),
            (True, CLINE_DETAILS),
            (True, CLINE_DETAILS),
        ]
        graph = ContextGraph()
        graph.ingest(events)
        kinds = [unit.kind for unit in graph.units()]
        request = kinds.index("user")
        # The task stays the latest request (before, the editor's state after the
        # result was: the floor's anchor and the brief's goal).
        assert floor_anchors(kinds)[:2] == (request, request)

    def test_words_beside_the_block_stay_the_users(self) -> None:
        assert not is_harness_text(f"{CLINE_DETAILS}\nAlso add a test.")
        assert is_harness_text(CLINE_DETAILS)
