"""Restores (`context_expand`) in the session journal, and their pins in the state."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from context_graph.testing import WordCounter
from orchestrator.persistence.codec import checksum, decode_entry, encode_applied
from processors import ObservationMasker, Proposal
from processors.base import Restore
from tests.orchestrator.policy_keywords import make_manager, open_manager
from tests.orchestrator.test_agent_tools import fill


def _options() -> dict[str, Any]:
    return {
        "counter": WordCounter(),
        "budget": 4_000,
        "agent_tools": True,
        "expand_pin_turns": 1,
        "pipeline": [ObservationMasker(keep_turns=1)],
    }


class TestCodec:
    """A restore proposal round-trips through a journal entry."""

    def test_round_trip(self) -> None:
        """Both kinds of restore (whole, one level) decode to what was written."""
        manager = make_manager(**_options())
        fill(manager)
        manager.render_sync()
        manager.handle_tool_call_sync("context_expand", {"id": manager.raw.transcript()[4]})
        audit = manager.working.audit()[-1:]
        proposal = Proposal(
            processor="context_expand",
            edits=(Restore(target="a~1"), Restore(target="b~2", whole=False)),
            purpose="restore",
        )
        body = encode_applied((proposal,), audit)
        entry = decode_entry("mem", 1, "proposals", body.encode("utf-8"), checksum(body))
        assert entry.proposals == (proposal,)
        assert entry.audit == audit


class TestReopen:
    """A reopened session has the restore, and its pin, as the process left them."""

    async def test_a_released_pin_stays_released(self, tmp_path: Path) -> None:
        """Once a pin is let go and saved, a reopen does not hold the node again."""
        path = tmp_path / "session.db"
        manager = open_manager(path, **_options())
        outputs = fill(manager)
        await manager.render()
        await manager.handle_tool_call("context_expand", {"id": outputs[0]})
        await manager.compact()
        assert manager.working.is_current(outputs[0])  # held
        manager.add_user("Next.")
        await manager.render()  # the pin expires here, and the state is saved
        manager.close()
        again = open_manager(path, **_options())
        try:
            assert again.working.is_current(outputs[0])  # the restore is journaled
            await again.compact()
            assert not again.working.is_current(outputs[0])  # no pin came back
        finally:
            again.close()

    async def test_a_held_pin_holds_after_reopen(self, tmp_path: Path) -> None:
        """A pin still running when the process stopped holds in the next one."""
        path = tmp_path / "session.db"
        manager = open_manager(path, **_options())
        outputs = fill(manager)
        await manager.render()
        await manager.handle_tool_call("context_expand", {"id": outputs[0]})
        manager.close()
        again = open_manager(path, **_options())
        try:
            await again.compact()
            assert again.working.is_current(outputs[0])
        finally:
            again.close()
