"""With redaction on, the HTML replay report holds no secret: not in a request, not in the
original behind a compacted piece (taken from the pristine record), not in a note or the
title. `OutputScreen` is the one place that screens it, and every CLI output too."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from context_graph.graph.events import AgentEvent
from context_graph.importers import load_sessions
from orchestrator import ContextManager
from orchestrator.policy import Policy, get_policy
from orchestrator.replay import replay
from orchestrator.report import OutputScreen, Recording, ReplayRecorder
from orchestrator.report.page import render_html
from processors.redact import SecretRedactor
from tests.orchestrator.secret_sessions import PASSWORD, PLANTED, leaks, write_session

BUDGET = 2_500

REDACT_TOML = """
name = "redacting"
[[stages]]
processor = "mask"
options = { keep_turns = 1, min_tokens = 50 }
[[stages]]
processor = "truncate"
options = { max_tokens = 200 }
[[stages]]
processor = "redact"
"""


@pytest.fixture(name="events")
def events_fixture(tmp_path: Path) -> list[AgentEvent]:
    return list(load_sessions(write_session(tmp_path))[0].events)


def _record(events: list[AgentEvent], policy: Policy) -> Recording:
    manager = ContextManager(format="anthropic", budget=BUDGET, policy=policy)
    recorder = ReplayRecorder(manager, "anthropic")
    replay(events, budget=BUDGET, format="anthropic", manager=manager, on_call=recorder)
    return recorder.recording


SWITCHES: dict[str, Policy] = {
    "redact_secrets": get_policy("coding").replace(redact_secrets=True),
    "toml redact stage": Policy.from_toml(REDACT_TOML),
}


class TestReport:
    """The report's every byte, with redaction switched on either way."""

    @pytest.mark.parametrize("switch", sorted(SWITCHES))
    def test_no_byte_of_the_page_holds_a_secret(
        self, events: list[AgentEvent], switch: str
    ) -> None:
        """Requests, originals, notes, title: the page has placeholders, no secret."""
        recording = _record(events, SWITCHES[switch])
        title = f"deploy with {PLANTED['github_token'][0]}"
        page = render_html(recording, title)
        assert leaks(page) == []
        assert leaks(json.dumps(recording.to_json())) == []
        assert "[REDACTED:github_token]" in page

    def test_originals_are_shown_redacted(self, events: list[AgentEvent]) -> None:
        """A compacted piece's original comes from the pristine record, redacted as sent."""
        recording = _record(events, SWITCHES["redact_secrets"])
        originals = [piece["original"] for piece in recording.pieces.values()]
        assert any("[REDACTED:" in original for original in originals)
        assert leaks("".join(originals)) == []

    def test_without_redaction_the_originals_hold_the_secrets(
        self, events: list[AgentEvent]
    ) -> None:
        """The check sees a leak: off, the page shows the session as it was."""
        recording = _record(events, get_policy("coding"))
        assert leaks(render_html(recording, "t"))


class TestOutputScreen:
    """The screen itself."""

    def test_off_passes_everything_unchanged(self) -> None:
        """No redactor: text, values and JSON documents come back as they are."""
        screen = OutputScreen()
        line, _ = PLANTED["openai_api_key"]
        document = json.dumps({"a": line}, indent=2)
        assert screen.text(line) == line
        assert screen.value({"a": [line]}) == {"a": [line]}
        assert screen.json_text(document, indent=2) is document

    def test_a_document_without_secrets_is_kept_byte_for_byte(self) -> None:
        """Nothing to hide: the JSON text is returned as it came, formatting and all."""
        document = '{"b": 1,   "a": ["x"]}\n'
        assert OutputScreen(SecretRedactor()).json_text(document) is document

    def test_keys_and_values_are_redacted_and_keys_kept_apart(self) -> None:
        """Two keys that redact alike are numbered; the JSON stays valid."""
        first, token = PLANTED["github_token"]
        second = "GITHUB_TOKEN=ghp_" + token[4:][::-1]
        screen = OutputScreen(SecretRedactor())
        value = screen.value({first: 1, second: [first]})
        assert value == {
            "GITHUB_TOKEN=[REDACTED:github_token]": 1,
            "GITHUB_TOKEN=[REDACTED:github_token] (2)": ["GITHUB_TOKEN=[REDACTED:github_token]"],
        }

    def test_a_secret_learned_from_the_session_is_hidden_where_it_stands_bare(self) -> None:
        """`learn` the nodes: a password found by its key is redacted in a bare mention."""
        manager = ContextManager(policy=Policy())
        manager.add_user(f"DB_PASSWORD={PASSWORD}")
        screen = OutputScreen(SecretRedactor())
        bare = f"the login with {PASSWORD} failed"
        assert PASSWORD in screen.text(bare)
        screen.learn(manager.raw)
        assert screen.text(bare) == "the login with [REDACTED:password] failed"

    def test_a_known_secret_cut_short_is_hidden(self) -> None:
        """`ghp_dA54e0t0…` in a message: the start of a known secret, then an ellipsis."""
        _, token = PLANTED["github_token"]
        screen = OutputScreen(SecretRedactor())
        screen.learn_value({"messages": [{"content": PLANTED["github_token"][0]}]})
        for mark in ("\u2026", "..."):
            text = f"id `{token[:20]}{mark}` answers no call; `{token[:5]}{mark}` too short"
            assert screen.text(text) == (
                f"id `[REDACTED:github_token]{mark}` answers no call; `{token[:5]}{mark}` too short"
            )
