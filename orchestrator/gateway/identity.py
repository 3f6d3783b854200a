"""Which agent session a proxied request belongs to, from what the client sends.

Never a guess from the prompt: two sessions in one project share a system prompt and
their first messages, and a proxy that keys sessions by a hash of either merges them.
The identity is read, in order, from:

1. `x-context-graph-session`, a header a user or a wrapper sets on purpose;
2. `x-claude-code-session-id`, which Claude Code sends on every call;
3. `metadata.user_id`, which Claude Code fills with a JSON object whose `session_id`
   is the same id (older versions: a string ending in `_session_<id>`);
4. `session-id` / `session_id`, sent by Codex CLI; `x-opencode-session`, which
   opencode sends to its own providers, and `x-session-id`, which it sends to every
   other provider (an openai-compatible one in `opencode.json`);
5. the Responses API's `prompt_cache_key`.

A request with none of these belongs to the anonymous session, where conversations are
told apart by their content alone (`orchestrator.gateway.threads`). gemini-cli 0.61 sends
none (captured: no session header, nothing in the body; its one per-machine id,
`x-gemini-api-privileged-user-id`, is sent only with usage statistics on, and is shared by
every session of the machine); its `GEMINI_CLI_CUSTOM_HEADERS` can send the first.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["ANONYMOUS", "session_of"]

ANONYMOUS = "anonymous"
"""The session of a request that names none."""

_HEADERS = (
    "x-context-graph-session",
    "x-claude-code-session-id",
    "session-id",
    "session_id",
    "x-opencode-session",
    "x-session-id",
)
_LONGEST = 200
"""Longer ids are refused as ids: a session id names a file, and a header may be anything."""
_LEGACY_USER_ID = re.compile(r"_session_([A-Za-z0-9-]+)$")


def session_of(headers: Mapping[str, str], body: Any) -> str:
    """The session a request names, or `ANONYMOUS`.

    Args:
        headers: The request's headers; looked up without regard to case.
        body: The request's JSON body (anything: a malformed one names no session).
    """
    lowered = {name.lower(): value for name, value in headers.items()}
    for name in _HEADERS:
        found = _usable(lowered.get(name))
        if found is not None:
            return found
    if isinstance(body, Mapping):
        for found in (_from_metadata(body.get("metadata")), _usable(body.get("prompt_cache_key"))):
            if found is not None:
                return found
    return ANONYMOUS


def _from_metadata(metadata: Any) -> str | None:
    """The session in Anthropic's `metadata.user_id` as Claude Code fills it."""
    if not isinstance(metadata, Mapping):
        return None
    user_id = metadata.get("user_id")
    if not isinstance(user_id, str):
        return None
    try:
        decoded = json.loads(user_id)
    except ValueError:
        legacy = _LEGACY_USER_ID.search(user_id)
        return None if legacy is None else _usable(legacy.group(1))
    return _usable(decoded.get("session_id")) if isinstance(decoded, dict) else None


def _usable(value: Any) -> str | None:
    """`value` as a session id: a non-blank string of printable characters, not too long."""
    if not isinstance(value, str):
        return None
    text: str = value.strip()
    if not text or len(text) > _LONGEST or not text.isprintable():
        return None
    return text
