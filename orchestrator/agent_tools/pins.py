"""`Pins`: what `context_expand` brought back stays in view for a few user turns.

Each restored node is pinned until a number of user turns; compaction leaves the pinned
nodes alone (`Compactor`, through `held`), and a pin that expired is let go when it is
next read. The expander pins; the pins are its state in the session store (`pins`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pydantic import JsonValue

from orchestrator.persistence import state_values

__all__ = ["Pins"]


class Pins:
    """Restored node ids, each with the user turn at which compaction may take it again.

    Its store key is `pins` (`StateOwner`), handed over once there was a pin, and from
    then on (also when empty, once every pin was let go), so a session that never
    expanded anything keeps the keys it always had.
    """

    __slots__ = ("_kept", "_until")

    def __init__(self) -> None:
        self._until: dict[str, int] = {}
        self._kept = False

    def pin(self, node_ids: Iterable[str], until: int) -> None:
        """Hold `node_ids` until `until` user turns."""
        self._until.update(dict.fromkeys(node_ids, until))
        self._kept = self._kept or bool(self._until)

    def held(self, turns: int) -> frozenset[str]:
        """The pinned nodes at `turns` user turns; the expired pins are let go."""
        expired = [node_id for node_id, until in self._until.items() if turns >= until]
        for node_id in expired:
            del self._until[node_id]
        return frozenset(self._until)

    def state(self) -> dict[str, JsonValue]:
        """`pins`, once there was one: node id -> the turn it is held until."""
        if not self._kept:
            return {}
        return {"pins": dict[str, JsonValue](sorted(self._until.items()))}

    def read(self, values: Mapping[str, Any]) -> Callable[[], None]:
        """Check `pins` of a stored state; what takes it (see `StateOwner.read`)."""
        if "pins" not in values:
            return lambda: None
        stored = state_values.mapping(values["pins"], "pins").items()
        pins = {node: state_values.whole(until, f"pins.{node}") for node, until in stored}

        def take() -> None:
            self._until, self._kept = pins, True

        return take

    def load(self, values: Mapping[str, Any]) -> None:
        """Take `pins` from a stored state."""
        self.read(values)()
