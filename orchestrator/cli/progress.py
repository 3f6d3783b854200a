"""Signs of life on stderr while a long command runs.

On a terminal, a phase ("reading run.jsonl (38.2 MB)...", "ingesting 41,203 events...")
appears once it has lasted about a second, and a counted phase (replay's events) draws a
bar; both are erased when the command ends, so only the summary stays. When stderr is
not a terminal nothing is drawn, unless `--progress` asks for it: then every phase is one
plain line as it starts, and a counted one adds a line at every tenth.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Literal, TextIO

__all__ = ["Progress"]

Mode = Literal["off", "live", "lines"]

_DELAY = 1.0  # seconds a phase runs before a terminal shows it
_BAR = 30


class Progress:
    """Phase lines and a bar on a stream, as the mode says.

    Args:
        stream: Where to write (stderr).
        mode: `off` (say nothing), `live` (a terminal line redrawn in place, shown once a
            phase lasts `delay` seconds) or `lines` (one plain line per phase and step).
        delay: Seconds before a live phase is shown.
    """

    def __init__(self, stream: TextIO, *, mode: Mode, delay: float = _DELAY) -> None:
        self._stream = stream
        self._mode: Mode = mode
        self._delay = delay
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self._drawn = False
        self._started = time.monotonic()
        self._step = -1
        # Bumped whenever a pending live phase is called off: a timer that fires late
        # (already running when cancelled) then draws nothing.
        self._generation = 0

    @classmethod
    def for_stderr(cls, *, asked: bool) -> Progress:
        """Live on a terminal; plain lines when `--progress` was given and it is not one."""
        stream = sys.stderr
        terminal = _isatty(stream)
        if terminal:
            return cls(stream, mode="live", delay=0.0 if asked else _DELAY)
        return cls(stream, mode="lines" if asked else "off")

    def phase(self, text: str) -> None:
        """A new phase begins (`"ingesting 400 events..."`); it replaces the last one."""
        self._cancel()
        self._started = time.monotonic()
        self._step = -1
        if self._mode == "lines":
            self._write(f"context-graph: {text}\n")
        elif self._mode == "live" and self._drawn:
            self._draw(text, self._generation)  # a line is showing: replace it at once
        elif self._mode == "live":
            args = (text, self._generation)
            self._timer = threading.Timer(self._delay, self._draw, args=args)
            self._timer.daemon = True
            self._timer.start()

    def count(self, done: int, total: int, what: str) -> None:
        """Progress through a counted phase: `done` of `total` `what`s."""
        if self._mode == "off" or total <= 0:
            return
        if self._mode == "lines":
            step = done * 10 // total
            if step != self._step:
                self._step = step
                self._write(f"context-graph: {done:,}/{total:,} {what} ({step * 10}%)\n")
            return
        filled = done * _BAR // total
        if filled != self._step and time.monotonic() - self._started >= self._delay:
            self._step = filled
            self._cancel()
            bar = "#" * filled + "." * (_BAR - filled)
            self._draw(f"[{bar}] {done:,}/{total:,} {what}", self._generation)

    def close(self) -> None:
        """Stop; erase a live line, so that what follows starts on a clean line."""
        self._cancel()
        with self._lock:
            if self._drawn:
                self._raw("\r\x1b[K")
                self._drawn = False

    def _draw(self, text: str, generation: int) -> None:
        with self._lock:
            if generation != self._generation:
                return
            self._raw(f"\r\x1b[K{text}")
            self._drawn = True

    def _write(self, text: str) -> None:
        with self._lock:
            self._raw(text)

    def _raw(self, text: str) -> None:
        try:
            self._stream.write(text)
            self._stream.flush()
        except (OSError, ValueError):
            self._mode = "off"  # stderr went away; the work itself goes on

    def _cancel(self) -> None:
        with self._lock:
            self._generation += 1
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
