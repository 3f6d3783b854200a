"""The blocks of a text between seams, each counted once."""

from __future__ import annotations

from collections.abc import Callable, Sequence


class Blocks:
    """A text cut at seams into blocks, and the tokens of runs of blocks.

    Each block is counted at most once. When the whole text's tokens are known, a run
    whose blocks are mostly uncounted (a long omitted span) is found by subtracting the
    blocks around it instead, since the blocks' counts add up to the whole text's.

    Args:
        text: The text.
        edges: Character offsets of the block edges, from 0 to `len(text)`.
        count: Counts the tokens of a text.
        total: `count(text)`, when already known.
    """

    def __init__(
        self, text: str, edges: Sequence[int], count: Callable[[str], int], total: int | None
    ) -> None:
        self._text = text
        self._edges = list(edges)
        self._count = count
        self._total = total
        self._tokens: list[int | None] = [None] * (len(self._edges) - 1)
        self._uncounted_chars = len(text)

    def tokens(self, low: int, high: int) -> int:
        """Tokens of blocks `low` to `high` (exclusive), counted on their own."""
        pending = self.pending(low, high)
        if pending is None:
            return self.subtracted(low, high)
        self._fill(pending)
        return self.known(low, high)

    def pending(self, low: int, high: int) -> list[int] | None:
        """The uncounted blocks of `low` to `high`, in order; `None` to subtract instead.

        `None` when the run's tokens are cheaper to find by subtracting the blocks around
        it from the whole text's: those are then all counted, and `subtracted` gives them.
        """
        tokens = self._tokens
        inside = [block for block in range(low, high) if tokens[block] is None]
        if inside and self._total is not None:
            inside_chars = sum(self._chars(block) for block in inside)
            if self._uncounted_chars - inside_chars < inside_chars:
                outside = [*range(low), *range(high, len(tokens))]
                self._fill([block for block in outside if tokens[block] is None])
                return None
        return inside

    def subtracted(self, low: int, high: int) -> int:
        """Tokens of blocks `low` to `high` as the whole text's less every block around them.

        Only valid when the whole text's tokens are known and the blocks around are all
        counted (as `pending` leaves them when it answers `None`).
        """
        total = self._total or 0
        return total - self._known(0, low) - self._known(high, len(self._tokens))

    def known(self, low: int, high: int) -> int:
        """Tokens of the blocks of `low` to `high` counted so far."""
        return self._known(low, high)

    def block(self, block: int) -> int:
        """Tokens of one block, counted now unless it was before."""
        if self._tokens[block] is None:
            self._fill([block])
        return self._known(block, block + 1)

    @property
    def size(self) -> int:
        """How many blocks there are."""
        return len(self._tokens)

    def _fill(self, blocks: list[int]) -> None:
        for block in blocks:
            self._tokens[block] = self._count(
                self._text[self._edges[block] : self._edges[block + 1]]
            )
            self._uncounted_chars -= self._chars(block)

    def _chars(self, block: int) -> int:
        return self._edges[block + 1] - self._edges[block]

    def _known(self, low: int, high: int) -> int:
        return sum(tokens for tokens in self._tokens[low:high] if tokens is not None)
