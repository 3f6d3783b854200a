"""Gemini `Content[]` histories as the Gemini CLI writes them: pairing, harness context, strays.

Each quirk of ../shared/traces/gemini_cli/google-gemini_gemini-cli (README) has a test:
responses with ids answering calls without, parallel calls, `thoughtSignature` and
`thought: true` parts, the `<session_context>` turn, and the response with no call.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph.errors import IngestError
from context_graph.formats.gemini import read as gemini
from context_graph.graph.content import ProviderSignature, TextPart, ThinkingPart
from context_graph.graph.context_graph import ContextGraph
from context_graph.graph.events import AssistantTurn, Note, ToolResult, UserTurn
from context_graph.importers import load_events, load_graph, load_sessions
from context_graph.importers._base import RawInput
from context_graph.render import Renderer
from context_graph.testing import graph_snapshot

TRACES = Path(__file__).resolve().parents[3].parent / "shared" / "traces"
FAMILY = TRACES / "gemini_cli" / "google-gemini_gemini-cli"
NOT_FOLLOWING = FAMILY / "NotFollowingUserIntent.json"
TRAJECTORY = FAMILY / "trajectory.json"
needs_traces = pytest.mark.skipif(not FAMILY.is_dir(), reason="shared traces not present")


def _user(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "parts": list(parts)}


def _model(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"role": "model", "parts": list(parts)}


def _fcall(name: str, call_id: str | None = None, **args: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"name": name, "args": args}
    if call_id is not None:
        body["id"] = call_id
    return {"functionCall": body}


def _fresp(name: str, output: str, call_id: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"name": name, "response": {"output": output}}
    if call_id is not None:
        body["id"] = call_id
    return {"functionResponse": body}


def _events(payload: Any, *, strict: bool = True) -> list[Any]:
    return gemini.to_sessions(RawInput(payload, strict=strict))[0].events


def _text(event: Any) -> str:
    return "".join(part.text for part in event.content if isinstance(part, TextPart))


def _answers(events: list[Any]) -> dict[str, tuple[str, str]]:
    """Ingest `events`; map each result's text to (its call's id, its call's arguments)."""
    graph = ContextGraph()
    graph.ingest(events)
    pairs: dict[str, tuple[str, str]] = {}
    for node in graph:
        if node.kind == "tool_result":
            call = graph.call_of(node.id)
            assert call is not None
            pairs[node.text] = (call.tool_call_id, call.arguments)
    return pairs


class TestPairing:
    def test_response_with_an_id_answers_a_call_without_one(self) -> None:
        """The CLI's id on the response pairs by name with the id-less call, which takes it."""
        payload = [
            _user({"text": "go"}),
            _model({**_fcall("run_shell_command", command="ls"), "thoughtSignature": "c2ln"}),
            _user(_fresp("run_shell_command", "a b", "run_shell_command-17-fb5d")),
        ]
        events = _events(payload)
        assert events[1].tool_calls[0].id == "run_shell_command-17-fb5d"
        assert events[1].tool_calls[0].signature == ProviderSignature(
            provider="gemini", value="c2ln"
        )
        assert _answers(events) == {"a b": ("run_shell_command-17-fb5d", '{"command": "ls"}')}

    def test_three_parallel_calls_pair_by_name_and_order(self) -> None:
        """Three id-less calls answered out of order by responses with ids pair by name."""
        payload = [
            _user({"text": "go"}),
            _model(_fcall("read", path="a"), _fcall("ls", dir="x"), _fcall("read", path="b")),
            _user(
                _fresp("ls", "ls x", "ls-1"),
                _fresp("read", "read a", "read-1"),
                _fresp("read", "read b", "read-2"),
            ),
        ]
        assert _answers(_events(payload)) == {
            "ls x": ("ls-1", '{"dir": "x"}'),
            "read a": ("read-1", '{"path": "a"}'),
            "read b": ("read-2", '{"path": "b"}'),
        }

    def test_ids_on_both_sides_must_agree(self) -> None:
        """A response whose id differs from its same-named call's own id does not pair by name."""
        payload = [_model(_fcall("f", "x1")), _user(_fresp("f", "out", "x2"))]
        with pytest.raises(IngestError, match="`x2` has no matching tool call"):
            ContextGraph().ingest(_events(payload))

    def test_a_response_answers_only_the_model_turn_before_it(self) -> None:
        """An id-less call of an older model turn is not answered by name two turns later."""
        payload = [_model(_fcall("f")), _model({"text": "more"}), _user(_fresp("f", "late"))]
        with pytest.raises(IngestError, match="no unanswered functionCall `f`"):
            _events(payload)

    def test_an_older_turns_call_with_an_id_is_answered_by_it(self) -> None:
        """A response with an id answers a still open call of an earlier turn."""
        payload = [
            _model(_fcall("f", "old")),
            _model({"text": "x"}),
            _user(_fresp("f", "o", "old")),
        ]
        assert _answers(_events(payload)) == {"o": ("old", "{}")}


class TestThoughts:
    def test_unsigned_thought_parts_are_gemini_thinking(self) -> None:
        """`thought: true` text without a signature is kept as Gemini thinking, in order."""
        payload = [
            _user({"text": "go"}),
            _model({"text": "**Plan** read it", "thought": True}, _fcall("read_file", "r1")),
        ]
        turn = _events(payload)[1]
        assert turn.content == (
            ThinkingPart(thinking="**Plan** read it", signature=None, provider="gemini"),
        )


class TestHarnessContext:
    @pytest.mark.parametrize("tag", ["session_context", "state_snapshot"])
    def test_a_cli_block_alone_is_a_notice(self, tag: str) -> None:
        """A user content that is only a `<session_context>` / `<state_snapshot>` is a notice."""
        events = _events(
            [_user({"text": f"<{tag}>\n- cwd: /w\n</{tag}>\n"}), _user({"text": "hi"})]
        )
        assert [(e.type, e.notice) for e in events] == [("user", True), ("user", False)]

    @pytest.mark.parametrize(
        "parts",
        [
            [{"text": "<session_context>x</session_context> and fix the bug"}],
            [{"text": "fix it"}, {"text": "<session_context>x</session_context>"}],
            [{"text": "please read <session_context>x</session_context>"}],
        ],
        ids=["text-after", "block-after-the-words", "text-before"],
    )
    def test_a_block_with_the_users_words_stays_a_request(self, parts: list[Any]) -> None:
        """A block in a part with the user's words, or after them, is the user's request."""
        (event,) = _events([_user(*parts)])
        assert isinstance(event, UserTurn) and not event.notice

    def test_leading_block_parts_are_a_notice_before_the_request(self) -> None:
        """Gemini CLI 0.61 sends its session context and the first prompt as two parts of
        one content: the context is a notice, the prompt the user's request, and rendered
        again they are one content, as they came."""
        context = "<session_context>\n- cwd: /w\n</session_context>"
        snapshot = "<state_snapshot>goal</state_snapshot>"
        contents = [_user({"text": context}, {"text": snapshot}, {"text": "fix it"})]
        events = _events(contents)
        assert [(e.type, e.notice, _text(e)) for e in events] == [
            ("user", True, context + snapshot),
            ("user", False, "fix it"),
        ]
        graph = ContextGraph()
        graph.ingest(events)
        payload = Renderer(format="gemini").render(graph).payload
        assert payload["contents"] == contents


class TestStrays:
    def test_strict_refuses_an_idless_response_with_no_call(self) -> None:
        """The strict default refuses an id-less response that answers nothing, as before."""
        with pytest.raises(IngestError, match="no unanswered functionCall `f`"):
            _events([_user({"text": "a"}), _user(_fresp("f", "x"))])

    def test_lenient_keeps_an_idless_stray_as_a_note(self) -> None:
        """Lenient, the stray is an unpinned note naming the tool and holding its output."""
        raw = RawInput([_user({"text": "a"}), _user(_fresp("f", "x"))], strict=False)
        (session,) = gemini.to_sessions(raw)
        note = session.events[1]
        assert isinstance(note, Note) and not note.pinned
        assert _text(note) == ("a tool result for `f` arrived with no matching call; its output: x")
        assert [(s.location.index, s.location.path) for s in session.strays] == [
            (1, "[1].parts[0].functionResponse")
        ]
        assert "no unanswered functionCall `f`" in session.strays[0].reason

    def test_lenient_keeps_a_response_whose_id_no_call_has(
        self, write_json: Callable[..., Path]
    ) -> None:
        """A response with an unknown id is a note leniently; strictly the graph refuses it."""
        payload = [_model({"text": "done"}), _user(_fresp("run", "out", "nlcj"))]
        file = write_json(payload)
        with pytest.raises(IngestError, match="tool result `nlcj` has no matching tool call"):
            load_graph(file)
        (session,) = load_sessions(file, strict=False)
        assert [e.type for e in session.events] == ["assistant", "note"]
        assert "`run` (id `nlcj`)" in _text(session.events[1])
        assert session.strays[0].describe() == (
            f"{file} message 1 [1].parts[0].functionResponse: "
            "tool result `nlcj` has no matching tool call earlier in the history"
        )
        assert len(load_graph(file, strict=False)) == 2

    def test_an_error_response_says_so(self) -> None:
        """A stray error response's note says it held an error."""
        payload = [_user({"functionResponse": {"name": "f", "response": {"error": "boom"}}})]
        (note,) = _events(payload, strict=False)
        assert _text(note).endswith("its error: boom")

    def test_strict_is_the_default_of_every_loader(self, write_json: Callable[..., Path]) -> None:
        """load_sessions, load_events and load_graph are strict unless told otherwise."""
        file = write_json([_user(_fresp("f", "x"))])
        for load in (load_sessions, load_events, load_graph):
            with pytest.raises(IngestError, match="no unanswered functionCall"):
                load(file)
        assert [e.type for e in load_events(file, strict=False)] == ["note"]

    def test_the_loader_argument_wins_over_the_input(self) -> None:
        """A lenient `RawInput` handed to a strict loader is read strictly."""
        raw = RawInput([_user(_fresp("f", "x"))], strict=False)
        with pytest.raises(IngestError):
            load_sessions(raw, format="gemini")

    def test_a_lenient_read_changes_no_graph_on_bad_input(self, graph: ContextGraph) -> None:
        """Malformed input is refused in lenient mode too, and the graph stays as it was."""
        before = graph_snapshot(graph)
        with pytest.raises(IngestError) as caught:
            graph.ingest(_events([_user({"text": 5})], strict=False))
        assert caught.value.location.path == "[0].parts[0].text"
        assert graph_snapshot(graph) == before


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "role",
                    "parts",
                    "text",
                    "functionCall",
                    "functionResponse",
                    "id",
                    "name",
                    "args",
                    "response",
                    "thought",
                    "thoughtSignature",
                    "output",
                ]
            ),
            inner,
            max_size=4,
        )
    ),
    max_leaves=20,
)


class TestHostileHistories:
    @settings(max_examples=150)
    @given(data=st.lists(_JSON, max_size=5), strict=st.booleans())
    def test_any_json_gives_events_or_a_typed_error(self, data: list[Any], strict: bool) -> None:
        """Arbitrary JSON is read or refused with IngestError; a graph takes what is read."""
        try:
            sessions = gemini.to_sessions(RawInput(data, strict=strict))
        except IngestError as exc:
            assert exc.location is not None
            return
        graph = ContextGraph()
        try:
            graph.ingest(sessions[0].events)
        except IngestError:
            assert strict  # only a strict read passes an orphan id on to the graph
        notes = sum(isinstance(e, Note) for e in sessions[0].events)
        assert notes == len(sessions[0].strays)
        assert not strict or notes == 0


@needs_traces
class TestSharedHistories:
    def test_not_following_user_intent_ingests_strictly(self) -> None:
        """Every response of the file pairs with the call before it, by name."""
        events = load_events(NOT_FOLLOWING)
        graph = ContextGraph()
        graph.ingest(events)
        calls = [c for e in events if isinstance(e, AssistantTurn) for c in e.tool_calls]
        results = [e for e in events if isinstance(e, ToolResult)]
        assert len(calls) == len(results) == 56
        assert [c.id for c in calls] == [r.call_id for r in results]
        assert all(c.signature is not None for c in calls)
        assert graph.unanswered_calls() == ()

    def test_the_session_context_is_a_notice(self) -> None:
        """The first user turn, written by the CLI, is a notice; the request after it is not."""
        first, second = load_events(NOT_FOLLOWING)[:2]
        assert (first.notice, second.notice) == (True, False)

    def test_trajectory_refuses_strictly_at_the_stray(self) -> None:
        """The strict read refuses the response with no call, with the error it always gave."""
        with pytest.raises(IngestError) as caught:
            load_graph(TRAJECTORY)
        assert caught.value.location.index == 99
        assert caught.value.reason == (
            "tool result `nlcjynug` has no matching tool call earlier in the history"
        )

    def test_trajectory_reads_leniently_with_one_stray(self) -> None:
        """Lenient, the one stray is a note at its place and reported; the rest pairs."""
        (session,) = load_sessions(TRAJECTORY, strict=False)
        assert [(s.location.index, s.reason[:22]) for s in session.strays] == [
            (99, "tool result `nlcjynug`")
        ]
        notes = [e for e in session.events if isinstance(e, Note)]
        assert len(notes) == 1
        expected = "a tool result for `run_shell_command` (id `nlcjynug`) arrived with no"
        assert _text(notes[0]).startswith(expected)
        thoughts = [
            p
            for e in session.events
            if isinstance(e, AssistantTurn)
            for p in e.content
            if isinstance(p, ThinkingPart)
        ]
        assert thoughts and all(p.provider == "gemini" for p in thoughts)
        graph = ContextGraph()
        graph.ingest(session.events)
        assert graph.unanswered_calls() == ()

    def test_trajectory_parallel_calls_pair(self) -> None:
        """The two parallel calls of content 14 are answered by the two responses of 15."""
        raw = json.loads(TRAJECTORY.read_text(encoding="utf-8"))
        events = _events(raw[13:16])
        assert _answers(events[1:]).keys() == {
            r["functionResponse"]["response"]["output"] for r in raw[15]["parts"]
        }
