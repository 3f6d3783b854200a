"""What the gateway notes in each thread's store beside the engine's own state.

After each request it renders, the gateway keeps one state key, `proxy`, in the
thread's session store: the agent's session id, the wire format, how many tokens the
request that went upstream held, and when. The manager ignores keys it does not know,
so the record reopens as before; `listing` reads the key back to tell the user what
the proxy holds, also while another process serves the session.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from pydantic import JsonValue

from context_graph.errors import StoreConflictError
from orchestrator.manager import ContextManager

__all__ = ["ACTIVITY_KEY", "Activity", "note_request", "read_activity", "take_note"]

ACTIVITY_KEY = "proxy"
"""The state key the gateway keeps its notes under."""


@dataclass(frozen=True, slots=True)
class Activity:
    """The gateway's note of a thread's last request.

    Attributes:
        session: The agent's session id the thread belongs to.
        wire: The wire format it came in (`anthropic`, `responses`, ...).
        sent_tokens: The engine's count of the last request sent upstream.
        at: When it was sent (seconds since the epoch).
    """

    session: str
    wire: str
    sent_tokens: int | None
    at: float


def take_note(manager: ContextManager, *, session: str, wire: str) -> Activity | None:
    """The note of the request `manager` just rendered, to keep once it has gone upstream.

    `None` without a store: there is nowhere to keep it.
    """
    if manager.store is None:
        return None
    return Activity(session, wire, manager.stats().last_render_tokens, time.time())


def note_request(manager: ContextManager, note: Activity) -> None:
    """Keep `note` in the manager's store (nothing without a store).

    The gateway keeps it once the answer has gone back to the agent: a write to the
    session file then costs the agent no time. The note only informs `listing`; what
    the thread holds was written when it was taken in.
    """
    store = manager.store
    if store is None:
        return
    note_state: dict[str, JsonValue] = {
        "session": note.session,
        "wire": note.wire,
        "sent_tokens": note.sent_tokens,
        "at": note.at,
    }
    try:
        store.put_states({ACTIVITY_KEY: note_state})
    except StoreConflictError:
        # Another gateway on a shared store wrote first: its note is as recent as this one.
        return


def read_activity(state: dict[str, Any]) -> Activity | None:
    """The note in a restored session's state (`None`: the gateway wrote none, or not this)."""
    note = state.get(ACTIVITY_KEY)
    if not isinstance(note, dict):
        return None
    session, wire, sent, at = (note.get(k) for k in ("session", "wire", "sent_tokens", "at"))
    if not isinstance(session, str) or not isinstance(wire, str):
        return None
    return Activity(
        session,
        wire,
        sent if isinstance(sent, int) and not isinstance(sent, bool) else None,
        float(at) if isinstance(at, (int, float)) and not isinstance(at, bool) else 0.0,
    )
