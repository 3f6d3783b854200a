"""The lenient-mode mechanism every importer can use: `StrayKeeper` and `Stray`."""

from __future__ import annotations

import pytest

from context_graph.errors import IngestError, SourceLocation
from context_graph.graph.content import TextPart
from context_graph.importers._base import RawInput, Stray, StrayKeeper, strays_of

WHERE = SourceLocation("run.json", None, 4, "[4].parts[0]")


class TestStrayKeeper:
    def test_strict_raises_the_error_it_is_given(self) -> None:
        """A strict keeper raises the strict error unchanged and records nothing."""
        keeper = StrayKeeper(strict=True)
        error = IngestError("no call", WHERE)
        with pytest.raises(IngestError) as caught:
            keeper.keep(error, "a stray")
        assert caught.value is error
        assert keeper.found == []

    def test_lenient_returns_a_note_and_records_the_stray(self) -> None:
        """A lenient keeper returns an unpinned note at the place and lists the stray."""
        keeper = StrayKeeper(strict=False)
        note = keeper.keep(IngestError("no call", WHERE), "a stray", timestamp="t")
        assert (note.content, note.pinned, note.timestamp, note.source) == (
            (TextPart(text="a stray"),),
            False,
            "t",
            WHERE,
        )
        assert dict(note.meta) == {"stray": "no call"}
        assert keeper.found == [Stray(WHERE, "no call")]
        assert keeper.found[0].describe() == "run.json message 4 [4].parts[0]: no call"

    @pytest.mark.parametrize("strict", [True, False])
    def test_strays_of_follows_the_input(self, strict: bool) -> None:
        """`strays_of` gives a keeper as strict as the input says; strict by default."""
        assert strays_of(RawInput([], strict=strict)).strict is strict
        assert strays_of(RawInput([])).strict is True
