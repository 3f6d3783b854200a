"""Strays: what a lenient import keeps as notes instead of refusing (see `_base`).

`_base` re-exports both; an importer takes its keeper from `_base.strays_of(raw)`.
"""

from __future__ import annotations

from dataclasses import dataclass

from context_graph.errors import IngestError, SourceLocation
from context_graph.graph.events import Note

__all__ = ["Stray", "StrayKeeper"]


@dataclass(frozen=True)
class Stray:
    """A piece of input that a lenient import kept as a note instead of refusing it.

    Attributes:
        location: Where it is in the input.
        reason: What a strict import refuses it with.
    """

    location: SourceLocation
    reason: str

    def describe(self) -> str:
        """The place and the reason as one line, as the strict error would print them."""
        return f"{self.location.describe()}: {self.reason}"


class StrayKeeper:
    """What one import does with strays: refuse them (strict) or keep each as a note."""

    def __init__(self, *, strict: bool) -> None:
        self.strict = strict
        self.found: list[Stray] = []

    def keep(self, error: IngestError, text: str, *, timestamp: str | None = None) -> Note:
        """Return a note saying what the stray was, or raise `error` in strict mode.

        Args:
            error: What a strict import raises for this stray (its place and reason).
            text: The note's text: what the stray was and what it held.
            timestamp: When the stray was recorded, if the input says.

        Raises:
            IngestError: `error`, when the import is strict.
        """
        if self.strict:
            raise error
        self.found.append(Stray(error.location, error.reason))
        # Not pinned: a stray is evidence of a gap in the log, not a fact to keep forever.
        return Note(
            content=text,
            pinned=False,
            timestamp=timestamp,
            meta={"stray": error.reason},
            source=error.location,
        )
