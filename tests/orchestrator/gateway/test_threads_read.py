"""`SessionTable.read`: a session's next request re-reads only what is new, and reads the same."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.gateway.threads import SessionTable
from orchestrator.integrations.clients_apis import ANTHROPIC_MESSAGES
from orchestrator.integrations.conversation import item_keys
from orchestrator.manager import ContextManager


def _table() -> SessionTable:
    return SessionTable(ANTHROPIC_MESSAGES, lambda place: ContextManager(), None)


def _message(n: int, text: str) -> dict[str, Any]:
    # `None` fields are dropped by the reading: a reused reading must drop them too.
    return {"role": "user" if n % 2 == 0 else "assistant", "content": text, "name": None}


_texts = st.lists(st.sampled_from(["a", "b", "c", "dd"]), max_size=8)


@settings(max_examples=200, deadline=None)
@given(first=_texts, second=_texts)
def test_a_session_reads_each_request_as_a_fresh_read_would(
    first: list[str], second: list[str]
) -> None:
    """Whatever the two requests share (all, a leading part, nothing), the reading is exact."""
    table = _table()
    one = [_message(n, text) for n, text in enumerate(first)]
    two = [_message(n, text) for n, text in enumerate(second)]
    for messages in (one, two, one):
        request = {"messages": messages}
        history = ANTHROPIC_MESSAGES.read_history(request)
        assert table.read(request, "s") == (history, item_keys(history))


def test_the_shared_leading_items_are_not_read_again() -> None:
    """The items a request shares with the session's last one keep their reading (the
    same objects), so a long history costs only its new turn."""
    table = _table()
    messages = [_message(n, f"turn {n}") for n in range(6)]
    history, keys = table.read({"messages": messages}, "s")
    longer = [*messages, _message(6, "new")]
    again, again_keys = table.read({"messages": longer}, "s")
    assert all(a is b for a, b in zip(history, again, strict=False))
    assert all(a is b for a, b in zip(keys, again_keys, strict=False))
    assert again[-1] == {"role": "user", "content": "new"}
    other, _ = table.read({"messages": longer}, "another session")
    assert other == again and other[0] is not again[0]
