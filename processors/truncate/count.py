"""The blocks of a text between seams, each counted once."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

__all__ = ["Blocks"]


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
        # Tokens per block, 0 until counted: a run's known tokens are then a plain sum.
        self._tokens = [0] * (len(self._edges) - 1)
        self._counted = [False] * len(self._tokens)
        self._uncounted_chars = len(text)
        # Every block before `_head` and from `_tail` on is counted, and `_inner` of those
        # between: searches count from the ends inwards, so a scan for uncounted blocks
        # skips both counted ends, and is not needed at all while nothing between is.
        self._head = 0
        self._tail = len(self._tokens)
        self._inner = 0

    def tokens(self, low: int, high: int) -> int:
        """Tokens of blocks `low` to `high` (exclusive), counted on their own."""
        pending = self.pending(low, high)
        if pending is None:
            return self.subtracted(low, high)
        self._fill(pending)
        return sum(self._tokens[low:high])

    def pending(self, low: int, high: int) -> Sequence[int] | None:
        """The uncounted blocks of `low` to `high`, in order; `None` to subtract instead.

        `None` when the run's tokens are cheaper to find by subtracting the blocks around
        it from the whole text's: those are then all counted, and `subtracted` gives them.
        """
        counted = self._counted
        head, tail = self._head, self._tail
        first, stop = max(low, head), min(high, tail)
        edges = self._edges
        inside: Sequence[int]
        if first >= stop:
            inside = range(0)
        elif self._inner == 0:
            inside = range(first, stop)
        else:
            inside = [block for block in range(first, stop) if not counted[block]]
        if inside and self._total is not None:
            if self._inner == 0:
                inside_chars = edges[stop] - edges[first]
            else:
                inside_chars = sum(edges[block + 1] - edges[block] for block in inside)
            if self._uncounted_chars - inside_chars < inside_chars:
                outside = [*range(head, min(low, tail)), *range(max(high, head), tail)]
                self._fill([block for block in outside if not counted[block]])
                return None
        return inside

    def subtracted(self, low: int, high: int) -> int:
        """Tokens of blocks `low` to `high` as the whole text's less every block around them.

        Only valid when the whole text's tokens are known and the blocks around are all
        counted (as `pending` leaves them when it answers `None`).
        """
        total = self._total or 0
        return total - sum(self._tokens[:low]) - sum(self._tokens[high:])

    def known(self, low: int, high: int) -> int:
        """Tokens of the blocks of `low` to `high` counted so far."""
        return sum(self._tokens[low:high])

    def block(self, block: int) -> int:
        """Tokens of one block, counted now unless it was before."""
        if not self._counted[block]:
            self._fill((block,))
        return self._tokens[block]

    def text(self, block: int) -> str:
        """The text of one block."""
        return self._text[self._edges[block] : self._edges[block + 1]]

    @property
    def size(self) -> int:
        """How many blocks there are."""
        return len(self._tokens)

    def _fill(self, blocks: Iterable[int]) -> None:
        edges = self._edges
        counted = self._counted
        for block in blocks:
            self._tokens[block] = self._count(self._text[edges[block] : edges[block + 1]])
            counted[block] = True
            self._uncounted_chars -= edges[block + 1] - edges[block]
            self._inner += self._head <= block < self._tail
        while self._head < self._tail and counted[self._head]:
            self._head += 1
            self._inner -= 1
        while self._tail > self._head and counted[self._tail - 1]:
            self._tail -= 1
            self._inner -= 1
