"""`ReplayRecorder`: what a replay sent at each call, kept for the HTML report.

A replay renders at every model call; consecutive requests repeat most of their
messages, so each distinct message is kept once and a call is the list of its messages'
numbers. Every compaction the manager applied is kept with the pieces it added, the
trigger that set it off (`CompactionCauses`), and each piece with the original it stands
for (`ContextManager.expand`), so the page can show a compacted piece and, on a click,
what it replaced. When the recorded session kept its provider's usage, its sum and real
cache-hit rate are kept too (`RecordedUsage`). Texts longer than `MAX_TEXT` characters
are cut, saying how much was left out, to keep the file a size a browser opens at once.

The originals come from the pristine record, which keeps what the session held: with
redaction on (the manager's `redactor`), every text goes through an `OutputScreen` before
it is cut and kept, and the whole recording again when it is read (`Recording.to_json`),
by then knowing every secret of the session.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from context_graph.formats.wires import WIRES
from context_graph.render.result import RenderResult, count_payload
from context_graph.tokens.counting import ProviderFormat
from orchestrator.manager import ContextManager
from orchestrator.pricing import call_dollars, price_for
from orchestrator.replay import CallReport
from orchestrator.report.causes import CompactionCauses
from orchestrator.report.screen import OutputScreen
from orchestrator.report.usage import RecordedUsage

__all__ = ["MAX_TEXT", "Recording", "ReplayRecorder"]

MAX_TEXT = 20_000
_SHORTEST_PIECE = 12
"""A compacted piece shorter than this is not looked for inside messages (too common)."""
_SHAPE_KEYS = frozenset(
    {"role", "type", "id", "call_id", "tool_call_id", "tool_use_id", "cache_control"}
)


def _cut(text: str) -> str:
    if len(text) <= MAX_TEXT:
        return text
    return f"{text[:MAX_TEXT]}\n[... {len(text) - MAX_TEXT:,} more characters not shown ...]"


def _strings(value: Any, out: list[str]) -> list[str]:
    """Every string inside a JSON value, in order, keys that only name a shape left out."""
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, Mapping):
        for key, item in value.items():
            if key not in _SHAPE_KEYS:
                _strings(item, out)
    elif isinstance(value, list):
        for item in value:
            _strings(item, out)
    return out


def _role(message: Mapping[str, Any]) -> str:
    role = message.get("role") or message.get("type") or "item"
    return str(role)


@dataclass
class Recording:
    """Everything the page shows, as plain JSON-ready values."""

    format: ProviderFormat
    budget: int | None
    provider: str
    """The provider whose caching prices the calls (from the format)."""
    calls: list[dict[str, Any]] = field(default_factory=list)
    messages: list[dict[str, Any]] = field(default_factory=list)
    pieces: dict[str, dict[str, Any]] = field(default_factory=dict)
    compactions: list[dict[str, Any]] = field(default_factory=list)
    screen: OutputScreen = field(default_factory=OutputScreen, repr=False, compare=False)
    """What every text goes through on its way out (`to_json`); off by default."""
    usage: dict[str, Any] | None = None
    """The usage the recorded session's provider reported, summed, with its cache-hit
    rate (`RecordedUsage.to_json`); `None` when the session kept none."""

    def totals(self) -> dict[str, Any]:
        """Sums over the calls, as the page's header shows them."""
        sent = [c for c in self.calls if c["sent"] is not None]
        tokens = sum(c["sent"] for c in sent)
        cached = sum(c["cached"] for c in sent)
        # How much of the budget the compacted requests (smaller than the history) used.
        fills = [c["sent"] / self.budget for c in sent if self.budget and c["sent"] < c["raw"]]
        return {
            "calls": len(self.calls),
            "raw": sum(c["raw"] for c in self.calls),
            "sent": tokens,
            "refused": len(self.calls) - len(sent),
            "invalid": sum(bool(c["errors"]) for c in self.calls),
            "compactions": len(self.compactions),
            "saved": sum(c["saved"] for c in self.compactions),
            "cached": cached,
            "hit_share": cached / tokens if tokens else 0.0,
            "dollars": sum(c["dollars"] for c in sent),
            "fill": sum(fills) / len(fills) if fills else None,
        }

    def to_json(self) -> dict[str, Any]:
        """The recording as the page's script reads it, through `screen`."""
        data = {
            "format": self.format,
            "budget": self.budget,
            "provider": self.provider,
            "totals": self.totals(),
            "calls": self.calls,
            "messages": self.messages,
            "pieces": self.pieces,
            "compactions": self.compactions,
            "usage": self.usage,
        }
        screened: dict[str, Any] = self.screen.value(data)
        return screened


class ReplayRecorder:
    """Pass as `on_call` to `orchestrator.replay.replay`; read `recording` afterwards.

    Make it before the replay starts: it listens on the manager's bus for the triggers
    that fire.
    """

    def __init__(self, manager: ContextManager, format: ProviderFormat) -> None:
        self._manager = manager
        self._screen = OutputScreen(manager.redactor)
        self._causes = CompactionCauses(manager.bus)
        self._format = format
        self._history_key = WIRES[format].history_key
        self._price = price_for(format)
        self._cache = manager.raw.token_cache
        self._numbers: dict[str, int] = {}
        self._audited = 0
        self._previous: list[int] = []
        self._usage = RecordedUsage()
        self._taken = 0
        self.recording = Recording(format, None, self._price.provider, screen=self._screen)

    def __call__(self, call: CallReport, result: RenderResult | None) -> None:
        """Keep one call: its request, the compactions since the last one, its cost."""
        self._screen.learn(self._manager.raw)
        self._take_compactions(call.index)
        self._take_usage()
        if result is not None:
            self.recording.budget = result.budget
        numbers = [] if result is None else self._numbered(result.payload)
        shared = 0
        for before, now in zip(self._previous, numbers, strict=False):
            if before != now:
                break
            shared += 1
        sent = call.rendered_tokens
        reused = sum(self.recording.messages[n]["tokens"] for n in numbers[:shared])
        dollars, cached = (0.0, 0)
        if sent is not None:
            dollars, cached = call_dollars(sent, min(reused, sent), self._price)
            self._previous = numbers
        self.recording.calls.append(
            {
                "index": call.index,
                "event": call.event,
                "raw": call.raw_tokens,
                "sent": sent,
                "processors": list(call.processors),
                "saved": call.tokens_saved,
                "cached": cached,
                "dollars": dollars,
                "errors": [self._screen.text(e) for e in call.validation_errors],
                "error": None if call.error is None else self._screen.text(call.error),
                "messages": numbers,
            }
        )

    def _take_usage(self) -> None:
        """Add the recorded usage of the turns ingested since the previous call."""
        nodes = list(self._manager.raw)
        for node in nodes[self._taken :]:
            self._usage.take(node)
        self._taken = len(nodes)
        self.recording.usage = self._usage.to_json()

    def _take_compactions(self, call_index: int) -> None:
        """Record the audit entries applied since the previous call, with their pieces."""
        entries = self._manager.working.audit()[self._audited :]
        self._audited += len(entries)
        view = self._manager.working.snapshot()
        for entry in entries:
            for node_id in entry.added:
                node = view.get(node_id)
                if node is None:
                    continue
                original = "\n\n".join(n.text for n in self._manager.expand(node_id))
                original = self._screen.text(original)  # before the cut, so no half secret
                self.recording.pieces[node_id] = {
                    "processor": entry.processor,
                    "text": self._screen.text(node.text),
                    "original": _cut(original),
                    "original_chars": len(original),
                }
            cause = self._causes.of(entry)
            self.recording.compactions.append(
                {
                    "call": call_index,
                    "processor": entry.processor,
                    "trigger": cause.trigger,
                    "reason": self._screen.text(cause.reason),
                    "removed": len(entry.removed),
                    "added": list(entry.added),
                    "saved": entry.tokens_saved,
                    "note": self._screen.text(entry.note),
                }
            )

    def _numbered(self, payload: Mapping[str, Any]) -> list[int]:
        found = payload.get(self._history_key)
        listed: Sequence[Any] = found if isinstance(found, list) else []
        numbers = []
        for message in listed:
            key = json.dumps(message, sort_keys=True, ensure_ascii=False)
            number = self._numbers.get(key)
            if number is None:
                number = self._numbers[key] = len(self.recording.messages)
                self.recording.messages.append(self._message(message))
            numbers.append(number)
        return numbers

    def _message(self, message: Any) -> dict[str, Any]:
        text = self._screen.text("\n".join(s for s in _strings(message, []) if s))
        # A message's tokens: a body holding it alone, less the empty body's overheads.
        key = self._history_key
        alone = count_payload({key: [message]}, self._format, self._cache)
        empty = count_payload({key: []}, self._format, self._cache)
        pieces = [
            piece_id
            for piece_id, piece in self.recording.pieces.items()
            if len(piece["text"]) >= _SHORTEST_PIECE and piece["text"] in text
        ]
        role = _role(message) if isinstance(message, Mapping) else "item"
        return {"role": role, "text": _cut(text), "tokens": max(0, alone - empty), "pieces": pieces}
