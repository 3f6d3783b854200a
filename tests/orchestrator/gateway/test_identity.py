"""Which session a proxied request belongs to: read from what the client sends, never guessed."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from orchestrator.gateway.identity import ANONYMOUS, session_of

CLAUDE_CODE_USER_ID = json.dumps(
    {"device_id": "f76d", "account_uuid": "", "session_id": "6bcb31ba-cb0e-4e07"}
)


class TestSessionOf:
    def test_claude_code_header(self) -> None:
        headers = {"X-Claude-Code-Session-Id": "6bcb31ba-cb0e-4e07"}
        assert session_of(headers, {}) == "6bcb31ba-cb0e-4e07"

    def test_claude_code_metadata_json(self) -> None:
        """Claude Code's `metadata.user_id` is a JSON object as a string, holding the session."""
        body = {"metadata": {"user_id": CLAUDE_CODE_USER_ID}}
        assert session_of({}, body) == "6bcb31ba-cb0e-4e07"

    def test_older_claude_code_metadata(self) -> None:
        body = {"metadata": {"user_id": "user_abc_account__session_1234-abcd"}}
        assert session_of({}, body) == "1234-abcd"

    def test_explicit_header_wins(self) -> None:
        headers = {"x-context-graph-session": "mine", "x-claude-code-session-id": "theirs"}
        assert session_of(headers, {"metadata": {"user_id": CLAUDE_CODE_USER_ID}}) == "mine"

    def test_codex_and_opencode(self) -> None:
        assert session_of({"session_id": "codex-1"}, {}) == "codex-1"
        assert session_of({"Session-Id": "codex-2"}, {}) == "codex-2"
        assert session_of({"x-opencode-session": "oc-1"}, {}) == "oc-1"
        assert session_of({}, {"prompt_cache_key": "pck"}) == "pck"

    def test_opencode_to_an_openai_compatible_provider(self) -> None:
        """What opencode 1.18.33 sends to a provider of its `opencode.json` (captured)."""
        session = "ses_dc0c1f7c2ffe9l33ynD2zLLKI5"
        headers = {"x-session-affinity": session, "X-Session-Id": session}
        assert session_of(headers, {"model": "m", "messages": []}) == session

    def test_nothing_named_is_anonymous(self) -> None:
        """Two requests with the same prompt and no id are not told apart by a prompt hash."""
        body = {"system": "You are a coding agent.", "messages": [{"role": "user", "content": "x"}]}
        assert session_of({}, body) == ANONYMOUS

    def test_unusable_ids_are_not_ids(self) -> None:
        assert session_of({"x-claude-code-session-id": "   "}, {}) == ANONYMOUS
        assert session_of({"x-claude-code-session-id": "a" * 201}, {}) == ANONYMOUS
        assert session_of({"x-claude-code-session-id": "a\nb"}, {}) == ANONYMOUS
        assert session_of({}, {"metadata": {"user_id": json.dumps({"session_id": 7})}}) == ANONYMOUS
        assert session_of({}, {"metadata": {"user_id": "{not json"}}) == ANONYMOUS
        assert session_of({}, {"metadata": "x"}) == ANONYMOUS
        assert session_of({}, ["not", "a", "body"]) == ANONYMOUS

    @given(
        st.dictionaries(st.text(max_size=30), st.text(max_size=300), max_size=5),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=50),
            lambda inner: (
                st.lists(inner, max_size=3)
                | st.dictionaries(
                    st.sampled_from(["metadata", "user_id", "session_id", "prompt_cache_key", "x"]),
                    inner,
                    max_size=3,
                )
            ),
            max_leaves=10,
        ),
    )
    def test_any_input_gives_a_printable_bounded_id(
        self, headers: dict[str, str], body: Any
    ) -> None:
        found = session_of(headers, body)
        assert found == ANONYMOUS or (0 < len(found) <= 200 and found.isprintable())
        assert found == found.strip()
