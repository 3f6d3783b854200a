"""Counting texts made of pieces, each run of pieces between two seams counted once.

A truncation search counts many candidates built from the same lines and markers. When
the counter can say where its tokenizer never merges across (`SeamCounter.is_seam`), a
candidate's count is the sum of the counts of its runs between seams, and most runs
were counted for an earlier candidate. Without seams every candidate is one run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeAlias

Seams: TypeAlias = Callable[[str, str], bool]


@dataclass(frozen=True, slots=True)
class Counted:
    """A piece whose tokens are already known (valid when it is counted on its own)."""

    text: str
    tokens: int


class PieceCounter:
    """Counts the concatenation of pieces, exactly, reusing counts of repeated runs.

    Args:
        count: Counts the tokens of a text.
        seams: `is_seam(left, right)` of the counter, or `None` when it has none.
    """

    def __init__(self, count: Callable[[str], int], seams: Seams | None) -> None:
        self._count = count
        self._seams = seams
        self._runs: dict[str, int] = {}

    def count(self, pieces: Sequence[str | Counted]) -> int:
        """The tokens of the pieces' texts joined, as `count` would give them."""
        texts = [piece.text if isinstance(piece, Counted) else piece for piece in pieces]
        kept = [index for index, text in enumerate(texts) if text]
        if self._seams is None:
            return self._run([texts[index] for index in kept], None)
        is_seam = self._seams
        total = 0
        first = 0
        for position in range(1, len(kept) + 1):
            if position < len(kept) and not is_seam(
                texts[kept[position - 1]], texts[kept[position]]
            ):
                continue
            run = kept[first:position]
            single = pieces[run[0]] if len(run) == 1 else None
            total += self._run([texts[index] for index in run], single)
            first = position
        return total

    def _run(self, texts: list[str], single: str | Counted | None) -> int:
        if isinstance(single, Counted):
            return single.tokens
        text = "".join(texts)
        tokens = self._runs.get(text)
        if tokens is None:
            tokens = self._runs[text] = self._count(text)
        return tokens


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
        tokens = self._tokens
        inside = [block for block in range(low, high) if tokens[block] is None]
        if inside and self._total is not None:
            inside_chars = sum(self._chars(block) for block in inside)
            if self._uncounted_chars - inside_chars < inside_chars:
                outside = [*range(low), *range(high, len(tokens))]
                self._fill([block for block in outside if tokens[block] is None])
                return self._total - self._known(0, low) - self._known(high, len(tokens))
        self._fill(inside)
        return self._known(low, high)

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
