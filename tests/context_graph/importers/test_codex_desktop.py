"""Codex Desktop rollouts: the user's requests are recorded only as `user_message` events.

The fixture is a Desktop rollout as the app writes it (originator `Codex Desktop`): two
user requests, each only an `event_msg` `user_message` (the second with a screenshot),
and the model's items as `response_item`s. The Codex CLI records each request twice,
as a user message item and then the event; there the event adds nothing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from context_graph.errors import IngestError
from context_graph.graph.content import ImagePart, TextPart
from context_graph.graph.context_graph import ContextGraph
from context_graph.graph.events import AssistantTurn, UserTurn
from context_graph.importers import detect_format, load_sessions
from context_graph.render import FORMATS, Renderer
from context_graph.tokens.counting import ProviderFormat
from context_graph.validate import validate
from tests.context_graph.importers.test_codex_cli import FILES, META, _records, _user, _write

DESKTOP = Path(__file__).parent / "data" / "rollout-2026-06-02T11-14-02-codex-desktop.jsonl"
ASKS = [
    json.loads(line)["payload"]["message"]
    for line in DESKTOP.read_text("utf-8").splitlines()
    if '"user_message"' in line
]


def _asked(text: str, **fields: Any) -> dict[str, Any]:
    payload = {"type": "user_message", "message": text, "images": [], "local_images": []}
    return {"type": "event_msg", "payload": payload | fields}


def _first_user_text(payload: dict[str, Any], fmt: ProviderFormat) -> tuple[int, str]:
    """The position among the conversation's messages of the first user one, and its text."""
    if fmt == "gemini":
        turns = [(c["role"], c["parts"]) for c in payload["contents"]]
    elif fmt == "responses":
        turns = [(i.get("role", i.get("type")), i.get("content")) for i in payload["input"]]
    else:
        turns = [(m["role"], m["content"]) for m in payload["messages"]]
    turns = [(role, content) for role, content in turns if role not in ("system", "developer")]
    for index, (role, content) in enumerate(turns):
        if role == "user":
            parts = content if isinstance(content, list) else [{"text": content}]
            return index, "".join(str(p.get("text", "")) for p in parts)
    return -1, ""


class TestCodexDesktop:
    def test_detected_as_a_codex_rollout(self) -> None:
        """The Desktop app writes the CLI's rollout format."""
        assert detect_format(DESKTOP) == "codex_cli"

    def test_the_requests_are_user_turns(self) -> None:
        """Each `user_message` event is the user's turn, in order; its images come with it."""
        (session,) = load_sessions(DESKTOP)
        assert session.meta["originator"] == "Codex Desktop"
        users = [e for e in session.events if isinstance(e, UserTurn)]
        assert [u.notice for u in users] == [False, False]
        assert [u.content[0] for u in users] == [TextPart(text=ask) for ask in ASKS]
        (image,) = users[1].content[1:]
        assert isinstance(image, ImagePart) and image.media_type == "image/png"
        assert users[1].meta["local_images"] == [
            "/Users/sample/Desktop/Screenshot 2026-06-02 at 11.16.02.png"
        ]
        assert "event_msg.user_message" not in session.meta["skipped_records"]  # type: ignore[operator]

    def test_each_request_comes_before_its_answer(self) -> None:
        """The first event after the system prompts is the request; each answer follows one."""
        (session,) = load_sessions(DESKTOP)
        kinds = [type(e).__name__ for e in session.events]
        assert kinds[:4] == ["SystemPrompt", "SystemPrompt", "UserTurn", "AssistantTurn"]
        users = [i for i, e in enumerate(session.events) if isinstance(e, UserTurn)]
        assert all(isinstance(session.events[i + 1], AssistantTurn) for i in users)
        assert [session.events[i].source.line for i in users] == [
            n for n, r in _records(DESKTOP) if r["payload"].get("type") == "user_message"
        ]

    @pytest.mark.parametrize("fmt", FORMATS)
    def test_renders_user_first_in_every_format(self, fmt: ProviderFormat) -> None:
        """The request opens the conversation in every format, and the body is valid."""
        (session,) = load_sessions(DESKTOP)
        graph = ContextGraph()
        graph.ingest(session.events)
        payload = Renderer(format=fmt).render(graph).payload
        assert _first_user_text(payload, fmt) == (0, ASKS[0])
        assert validate(payload, fmt) == []


class TestPairing:
    """A `user_message` event repeats the user message item before it, when there is one."""

    @pytest.mark.parametrize("path", FILES, ids=lambda p: p.parent.name)
    def test_cli_rollouts_import_as_without_the_events(self, path: Path, tmp_path: Path) -> None:
        """A CLI rollout's events are what they are with every `user_message` made another
        UI event: the requests come from the items alone, nothing twice."""
        lines = [record for _, record in _records(path)]
        muted = [
            {**r, "payload": {**r["payload"], "type": "agent_message"}}
            if r["type"] == "event_msg" and r["payload"].get("type") == "user_message"
            else r
            for r in lines
        ]
        assert muted != lines
        (real,) = load_sessions(path)
        (without,) = load_sessions(_write(tmp_path, muted, path.name))
        assert [e.model_dump(exclude={"source"}) for e in real.events] == [
            e.model_dump(exclude={"source"}) for e in without.events
        ]
        assert [e.source.line for e in real.events] == [e.source.line for e in without.events]
        skipped = real.meta.pop("skipped_records"), without.meta.pop("skipped_records")
        assert real.meta == without.meta
        assert [sum(counts.values()) for counts in skipped] == [sum(skipped[0].values())] * 2  # type: ignore[union-attr]

    def test_an_event_after_its_item_adds_nothing(self, tmp_path: Path) -> None:
        """The CLI's order: the item, then the event (even when the UI's text differs)."""
        records = [META, _user("fix it\n"), _asked("fix it"), _user("and test it"), _asked("and")]
        (session,) = load_sessions(_write(tmp_path, records))
        users = [e for e in session.events if isinstance(e, UserTurn)]
        assert [u.content for u in users] == [
            (TextPart(text="fix it\n"),),
            (TextPart(text="and test it"),),
        ]

    def test_harness_items_do_not_stand_for_a_request(self, tmp_path: Path) -> None:
        """Harness context in the user's role is no request: the event after it is one."""
        context = _user("<environment_context>\n  <cwd>/w</cwd>\n</environment_context>")
        records = [META, context, _asked("fix it")]
        (session,) = load_sessions(_write(tmp_path, records))
        users = [e for e in session.events if isinstance(e, UserTurn)]
        assert [u.notice for u in users] == [True, False]
        assert users[1].content == (TextPart(text="fix it"),)

    def test_an_event_repeating_a_harness_item_adds_nothing(self, tmp_path: Path) -> None:
        """A shell command the UI shows as the user's message is the notice already read."""
        shell = "<user_shell_command>ls</user_shell_command>"
        (session,) = load_sessions(_write(tmp_path, [META, _user(shell), _asked(shell)]))
        assert [e.notice for e in session.events if isinstance(e, UserTurn)] == [True]

    def test_an_empty_event_is_no_turn(self, tmp_path: Path) -> None:
        """A `user_message` with no text and no image sends nothing."""
        (session,) = load_sessions(_write(tmp_path, [META, _asked("")]))
        assert not any(isinstance(e, UserTurn) for e in session.events)
        assert session.meta["skipped_records"] == {"event_msg.user_message": 1}

    @pytest.mark.parametrize(
        ("fields", "path"),
        [
            ({"message": 3}, "payload.message"),
            ({"images": "x"}, "payload.images"),
            ({"images": [None]}, "payload.images[0]"),
        ],
        ids=["message a number", "images a string", "image null"],
    )
    def test_a_bad_event_names_its_line_and_field(
        self, tmp_path: Path, fields: dict[str, Any], path: str
    ) -> None:
        """A malformed `user_message` raises `IngestError` at its line and field."""
        file = _write(tmp_path, [META, _asked("hi", **fields)])
        with pytest.raises(IngestError) as caught:
            load_sessions(file, format="codex_cli")
        location = caught.value.location
        assert (location.file, location.line, location.path) == (str(file), 2, path)
