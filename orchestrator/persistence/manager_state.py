"""The persistence side of `ContextManager`: its own state in the session file.

The journal (every ingested batch and every applied proposal, in order) is written by the
graphs a `SessionStore` restores, so nothing here records edits. What is kept here is the
manager's own state, which the journal cannot rebuild: trigger and guard state, counters,
the calibration factor, firings not handled yet, the nodes already scanned for secrets,
what the model has not been sent yet and how many units each renderer keeps leaving out
(`Renderer.kept_drops`). Each key is written only when its value changed, so a turn that
changes nothing costs no write.

What was not sent is kept as `sent`, the number of pristine nodes the last request
covered: the nodes ingested after it are the unsent ones (`ContextManager._unsent`), and
since every ingested batch is journaled, that holds after a crash too, however many
batches came in since the state was last written.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from pydantic import JsonValue

from context_graph.errors import StoreCorruptError
from context_graph.graph.context_graph import ContextGraph
from context_graph.render import Renderer
from context_graph.tokens.calibration import Calibrator
from context_graph.tokens.counting import ProviderFormat
from orchestrator.compaction.guards import GuardState
from orchestrator.compaction.triggers import Firing, TriggerState
from orchestrator.options import check_format
from orchestrator.persistence.protocol import SessionStore

__all__ = ["PersistenceMethods"]


class PersistenceMethods:
    """Saving and restoring the manager's state; mixed into `ContextManager`."""

    _store: SessionStore | None
    _saved: dict[str, str]
    _state: TriggerState
    _guard_state: GuardState
    _applied: int
    _rejected: int
    _calibrator: Calibrator
    _pending: list[Firing]
    _scanned: set[str]
    _raw: ContextGraph
    _unsent: set[str]
    _renderers: dict[ProviderFormat, Renderer]
    _renderer: Callable[[ProviderFormat], Renderer]

    def _state_values(self) -> dict[str, JsonValue]:
        return {
            "triggers": self._state.model_dump(mode="json"),
            "guards": self._guard_state.model_dump(mode="json"),
            "counters": {"applied": self._applied, "rejected": self._rejected},
            "calibration": {
                "factor": self._calibrator.factor,
                "observations": self._calibrator.observations,
            },
            "pending": [firing.model_dump(mode="json") for firing in self._pending],
            "scanned": list[JsonValue](sorted(self._scanned)),
            "sent": {"nodes": self._pristine_count() - len(self._unsent)},
            "renderers": {fmt: r.kept_drops for fmt, r in sorted(self._renderers.items())},
        }

    def _pristine_count(self) -> int:
        return len(self._raw) - len(self._raw.derived())

    def _save_state(self) -> None:
        """Write every state key whose value changed since it was last written.

        The keys are written in one transaction: they depend on each other (a trigger
        that fired and the firing it left pending), so a crash between two of them
        would reopen a state no process was ever in.
        """
        store = self._store
        if store is None or store.closed:
            return
        changed: dict[str, JsonValue] = {}
        texts: dict[str, str] = {}
        for key, value in self._state_values().items():
            text = json.dumps(value, sort_keys=True)
            if self._saved.get(key) != text:
                changed[key], texts[key] = value, text
        if changed:
            store.put_states(changed)
            self._saved.update(texts)

    def _load_state(self, store: SessionStore, state: dict[str, JsonValue]) -> None:
        """Take the manager's state from a restored session (missing keys: defaults).

        Raises:
            StoreCorruptError: a state value does not have the shape it was saved with.
        """
        try:
            self._apply_state(state)
        except (TypeError, ValueError, KeyError) as exc:
            raise StoreCorruptError(store.location, f"state does not load: {exc}") from exc
        self._saved = {key: json.dumps(v, sort_keys=True) for key, v in state.items()}

    def _apply_state(self, state: dict[str, Any]) -> None:
        if "triggers" in state:
            self._state = TriggerState.model_validate(state["triggers"])
        if "guards" in state:
            self._guard_state = GuardState.model_validate(state["guards"])
        if "counters" in state:
            self._applied = int(state["counters"]["applied"])
            self._rejected = int(state["counters"]["rejected"])
        if "calibration" in state:
            calibration = state["calibration"]
            self._calibrator.resume(calibration["factor"], calibration["observations"])
        if "pending" in state:
            self._pending = [Firing.model_validate(item) for item in state["pending"]]
        if "scanned" in state:
            self._scanned = {str(node_id) for node_id in state["scanned"]}
        if "sent" in state:
            sent = int(state["sent"]["nodes"])
            if not 0 <= sent <= self._pristine_count():
                msg = f"`sent` is {sent}, but the record has {self._pristine_count()} nodes"
                raise ValueError(msg)
            derived = set(self._raw.derived())
            pristine = [node.id for node in self._raw if node.id not in derived]
            self._unsent = set(pristine[sent:])
        if "renderers" in state:
            for fmt, kept in dict(state["renderers"]).items():
                self._renderer(check_format(fmt, "renderers")).keep_drops(kept)
