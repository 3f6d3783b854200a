"""Counting texts made of pieces, each run of pieces between two seams counted once.

A truncation search, or a summary shortened item by item, counts many texts built from
the same lines. When the counter can say where its tokenizer never merges across
(`SeamCounter.is_seam`), a text's count is the sum of the counts of its runs between
seams, and most runs were counted before. Without seams every text is one run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeAlias

from context_graph.tokens.counting import SeamCounter, TokenCounter, seam_runs

__all__ = [
    "Counted",
    "Deferred",
    "PieceCounter",
    "Seams",
    "counting_by_lines",
    "counting_by_paragraphs",
    "line_pieces",
    "paragraph_pieces",
]

Seams: TypeAlias = Callable[[str, str], bool]


@dataclass(frozen=True, slots=True)
class Counted:
    """A piece whose tokens are already known (valid when it is counted on its own)."""

    text: str
    tokens: int


class Deferred(Protocol):
    """A piece made of parts whose tokens are counted when a total needs them.

    Like `Counted`, its counts are valid when it is counted on its own.
    """

    @property
    def text(self) -> str:
        """The piece's text."""

    def tokens(self) -> int:
        """Its exact tokens."""

    def lower(self) -> int:
        """Tokens of the parts counted so far; `more` then gives each other part once."""

    def more(self) -> int | None:
        """Tokens of one part left out of `lower` so far, or `None` when none is left."""


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

    def count(self, pieces: Sequence[str | Counted | Deferred], limit: int | None = None) -> int:
        """The tokens of the pieces' texts joined, as `count` would give them.

        With a `limit`, a number above `limit` may be a lower bound only: what is known
        is added up first, then runs not counted before, then the parts of deferred
        pieces one by one, and no more once the total is over `limit`. That is enough to
        tell whether the text fits.
        """
        total = 0
        unknown: list[str] = []
        deferred: list[Deferred] = []
        for run, single in self._between_seams(pieces):
            if isinstance(single, Counted):
                total += single.tokens
            elif single is not None and not isinstance(single, str):
                deferred.append(single)
            elif run in self._runs:
                total += self._runs[run]
            else:
                unknown.append(run)
        if limit is None:
            return total + sum(map(self._run, unknown)) + sum(p.tokens() for p in deferred)
        total += sum(piece.lower() for piece in deferred)
        for run in unknown:
            if total > limit:
                return total
            total += self._run(run)
        while deferred and total <= limit:
            # In turn, so that both ends of a truncation grow alike, as its search does.
            for piece in list(deferred):
                if total > limit:
                    break
                part = piece.more()
                if part is None:
                    deferred.remove(piece)
                else:
                    total += part
        return total

    def _between_seams(
        self, pieces: Sequence[str | Counted | Deferred]
    ) -> list[tuple[str, str | Counted | Deferred | None]]:
        """Each run of pieces between seams: its text, and the piece when it is one alone."""
        texts = [piece if isinstance(piece, str) else piece.text for piece in pieces]
        alone = self._seams is not None
        return [
            (
                "".join(texts[index] for index in run),
                pieces[run[0]] if alone and len(run) == 1 else None,
            )
            for run in seam_runs(texts, self._seams)
        ]

    def _run(self, text: str) -> int:
        tokens = self._runs.get(text)
        if tokens is None:
            tokens = self._runs[text] = self._count(text)
        return tokens


def line_pieces(text: str) -> list[str]:
    """`text` cut after each newline: the pieces a brief is counted by."""
    lines = text.split("\n")
    return [*(line + "\n" for line in lines[:-1]), lines[-1]]


def paragraph_pieces(text: str) -> list[str]:
    """`text` cut after each blank line."""
    paragraphs = text.split("\n\n")
    return [*(part + "\n\n" for part in paragraphs[:-1]), paragraphs[-1]]


def counting_by_lines(
    counter: TokenCounter, count: Callable[[str], int] | None = None
) -> Callable[[str], int]:
    """`counter.count`, or the same counts taken paragraph by paragraph, then line by line.

    A brief shortened item by item (`brief.bound`) changes one line of one section at a
    time. Here an unchanged paragraph costs a look-up, and a changed one counts only its
    lines not counted before, where a count by paragraphs alone would encode the whole
    section again. The returned function remembers what it counted: make one per piece
    of work. `count`, when given, counts instead of `counter.count` and must give the
    same numbers (a cache of the same counter's counts, `NodeTokenCache.count_text`,
    which then knows the line runs).
    """
    count = count or counter.count
    if not isinstance(counter, SeamCounter):
        return count
    lines = PieceCounter(count, counter.is_seam)
    paragraphs = PieceCounter(lambda text: lines.count(line_pieces(text)), counter.is_seam)

    def count_by_lines(text: str) -> int:
        return paragraphs.count(paragraph_pieces(text))

    return count_by_lines


def counting_by_paragraphs(
    counter: TokenCounter, count: Callable[[str], int] | None = None
) -> Callable[[str], int]:
    """`counter.count`, or the same counts taken paragraph by paragraph when it has seams.

    Paragraphs are runs of text between blank lines (a markdown brief's sections). As
    `counting_by_lines` otherwise.
    """
    count = count or counter.count
    if not isinstance(counter, SeamCounter):
        return count
    pieces = PieceCounter(count, counter.is_seam)

    def count_by_paragraphs(text: str) -> int:
        return pieces.count(paragraph_pieces(text))

    return count_by_paragraphs
