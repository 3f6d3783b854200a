"""`EventBus`: blinker signals that let users observe the orchestrator.

Each bus holds its own signals (never blinker's global namespace), so two managers in one
process do not hear each other. Receivers are called as `receiver(sender, **payload)`,
blinker's convention; the sender is the bus's owner (the manager), or the bus itself.

Signals only observe. A receiver's return value is ignored, and a receiver that raises
does not break the sender or the receivers after it: the error is logged on the
`context_graph` logger (with its traceback) and the next receiver runs. Cancellation and
interpreter exits (`BaseException`s that are not `Exception`s: `KeyboardInterrupt`,
`asyncio.CancelledError`, trio's `Cancelled`) are never swallowed; they propagate.

```python
bus = EventBus()
bus.connect("trigger_fired", lambda sender, **payload: print(payload["firing"].reason))
bus.emit("trigger_fired", firing=firing)

with Recorder(bus) as recorder:
    bus.emit("render_done", tokens=812)
assert recorder.names() == ["render_done"]
```
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, TypeVar

from blinker import Signal

from context_graph.errors import ConfigurationError
from context_graph.testing import RecordedEvent, Recorder

__all__ = ["SIGNALS", "EventBus", "RecordedEvent", "Recorder"]

logger = logging.getLogger("context_graph")

#: Every signal a bus carries, with the payload it is sent with.
SIGNALS: Mapping[str, str] = MappingProxyType(
    {
        "agent_tools_withheld": (
            "A request fitted its budget only without the agent tools' definitions, so "
            "they were left out of it (format, tools: their names, budget, required: what "
            "the request needed with them)."
        ),
        "auto_continued": (
            "A request after an automatic compaction carried the auto-continue line (format, text)."
        ),
        "budget_crossed": "The view's tokens crossed a budget ratio (ratio, threshold, tokens).",
        "compaction_done": (
            "A pipeline run ended (run: what it did, background, timed_out: its time limit "
            "cut it short, cancelled: the manager closed while it ran)."
        ),
        "compaction_deferred": (
            "Another worker holds the shared session's compaction lease, or the store "
            "refused what a render's or background run compacted, so this call kept no "
            "compaction (background, floor: the floor's truncation rather than a run, "
            "reason: who holds it, or why it was not kept)."
        ),
        "compaction_hook_deferred": (
            "A before-compaction hook asked to defer a run (trigger, reason, honoured: "
            "False when the run could not wait: an overflow or an explicit compact())."
        ),
        "compaction_hook_ran": (
            "A compaction hook returned (hook, stage: `before` or `after`, trigger)."
        ),
        "compaction_timed_out": (
            "A time limit cut a compaction short; its unfinished stage applied nothing "
            "(run: what it did before, background, floor: the floor's truncation rather "
            "than a pipeline run, timeout: the limit in seconds)."
        ),
        "memory_flushed": (
            "Before a run, the notes the hooks asked for were pinned (node_ids, notes)."
        ),
        "node_added": "A node entered the pristine record (node_id, node).",
        "overflow_fallback": (
            "Even compacted, the request did not fit its budget, so it was sent degraded: "
            "media left out, tool outputs cut, then the text the floor keeps cut to its "
            "heads, then the latest turn's earlier steps left out, then its newest step "
            "too, each with a notice "
            "(format, steps: those taken, budget, required: what the full request needed)."
        ),
        "proposal_applied": "A proposal was applied (proposal, entry: the audit entry).",
        "proposal_made": "A processor made a proposal (proposal).",
        "proposal_rejected": "A proposal was refused and changed nothing (proposal, reason).",
        "proposal_waited": (
            "The cost guard held a proposal back: rewriting the cached prompt would cost "
            "more than it saves (proposal, reason, cost and saving in dollars, calls)."
        ),
        "render_done": "A request was rendered (format, tokens, budget).",
        "trigger_fired": "A trigger fired (firing).",
        "usage_recorded": (
            "A call's usage was added to the session's (usage: the call's `Usage`, "
            "totals: the session's `UsageTotals`, cache_hit_rate: the session's cached "
            "input over its input, `None` without input)."
        ),
        "usage_reported": (
            "The provider's prompt tokens calibrated the count (usage: prompt_tokens and "
            "the engine's estimate, factor)."
        ),
        "user_turn_replayed": (
            "The latest user turn was compacted away, so a request carried it again at "
            "its end (format, node_id)."
        ),
    }
)

Receiver = TypeVar("Receiver", bound=Callable[..., Any])


class EventBus:
    """The orchestrator's signals, one set per bus.

    Args:
        sender: What receivers get as their first argument; the bus itself by default.
    """

    def __init__(self, *, sender: object | None = None) -> None:
        self._sender = self if sender is None else sender
        self._signals = {name: Signal(doc) for name, doc in SIGNALS.items()}

    @property
    def signal_names(self) -> tuple[str, ...]:
        """The names of the signals this bus carries (those of `SIGNALS`)."""
        return tuple(self._signals)

    def signal(self, name: str) -> Signal:
        """The blinker signal `name` of this bus.

        Raises:
            ConfigurationError: `name` is not one of `SIGNALS`.
        """
        found = self._signals.get(name)
        if found is None:
            msg = f"unknown signal `{name}`; the bus carries {', '.join(SIGNALS)}"
            raise ConfigurationError(msg)
        return found

    def connect(self, name: str, receiver: Receiver, *, weak: bool = False) -> Receiver:
        """Call `receiver(sender, **payload)` on every `name` sent; return `receiver`.

        Receivers are held strongly by default (a lambda would otherwise vanish at once);
        pass `weak=True` to let the bus drop a receiver nobody else holds.

        Raises:
            ConfigurationError: an unknown signal, or an async receiver (signals are sent
                synchronously; schedule your own task from a plain function instead).
        """
        signal = self.signal(name)
        if inspect.iscoroutinefunction(receiver):
            msg = (
                f"signal `{name}`: receiver {receiver!r} is async; connect a plain function "
                "that schedules the work instead"
            )
            raise ConfigurationError(msg)
        return signal.connect(receiver, weak=weak)

    def disconnect(self, name: str, receiver: Callable[..., Any]) -> None:
        """Stop calling `receiver` on `name` (no error if it was not connected)."""
        self.signal(name).disconnect(receiver)

    def emit(self, name: str, /, **payload: object) -> None:
        """Send `name` with `payload` to every receiver; their results are ignored.

        A receiver that raises an `Exception` is logged and skipped; the others still
        run. Other `BaseException`s (cancellation, `KeyboardInterrupt`) propagate.

        Raises:
            ConfigurationError: `name` is not one of `SIGNALS`.
        """
        signal = self.signal(name)
        if signal.is_muted:
            return
        for receiver in signal.receivers_for(self._sender):
            try:
                receiver(self._sender, **payload)
            except Exception:
                # Observers must never change what the orchestrator does.
                logger.exception("receiver %r of signal `%s` raised; ignored", receiver, name)
