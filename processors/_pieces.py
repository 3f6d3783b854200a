"""Counting texts made of pieces, each run of pieces between two seams counted once.

A truncation search, or a summary shortened item by item, counts many texts built from
the same lines. When the counter can say where its tokenizer never merges across
(`SeamCounter.is_seam`), a text's count is the sum of the counts of its runs between
seams, and most runs were counted before. Without seams every text is one run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeAlias

from context_graph.tokens import SeamCounter, TokenCounter

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


def counting_by_paragraphs(counter: TokenCounter) -> Callable[[str], int]:
    """`counter.count`, or the same counts taken paragraph by paragraph when it has seams.

    Paragraphs are runs of text between blank lines (a markdown brief's sections). The
    returned function remembers what it counted: make one per piece of work.
    """
    if not isinstance(counter, SeamCounter):
        return counter.count
    pieces = PieceCounter(counter.count, counter.is_seam)

    def count(text: str) -> int:
        paragraphs = text.split("\n\n")
        return pieces.count([*(part + "\n\n" for part in paragraphs[:-1]), paragraphs[-1]])

    return count
