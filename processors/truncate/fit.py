"""Choosing which units to keep so that the result fits the budget as tightly as it can.

The kept units are a prefix of a priority order (head first, tail first, both ends in
turn, or error lines first), then grown one unit at a time at the edges of the omitted
region while that still fits. The search counts candidates with approximate numbers in
the omission markers (cheap); the final answer is checked with the real numbers.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import accumulate
from operator import methodcaller
from typing import Literal, TypeAlias

from processors.pieces import Deferred, PieceCounter, Seams
from processors.truncate.count import Blocks
from processors.truncate.units import marker, offsets

__all__ = [
    "ERROR_PATTERN",
    "Budget",
    "GapTokens",
    "Layout",
    "Policy",
    "Runs",
    "fit_layout",
    "largest",
    "priority",
    "runs_of",
]

Policy: TypeAlias = Literal["head", "tail", "head_tail", "errors_first"]
GapTokens: TypeAlias = Callable[[int, int], int]
#: Kept unit indices as sorted, maximal, disjoint `(start, stop)` ranges (`stop` exclusive).
Runs: TypeAlias = tuple[tuple[int, int], ...]

#: Lines that `errors_first` keeps before anything else.
ERROR_PATTERN = re.compile(r"error|exception|traceback|fail|fatal|panic|warn", re.IGNORECASE)


@dataclass(frozen=True)
class Budget:
    """The limits a truncated text must meet."""

    max_tokens: int
    max_bytes: int | None
    count: Callable[[str], int]

    def fits(self, text: str) -> bool:
        """Whether `text` is within both the token and the byte limit."""
        return self.fits_bytes(text) and self.count(text) <= self.max_tokens

    def fits_bytes(self, text: str) -> bool:
        """Whether `text` is within the byte limit (always, when there is none)."""
        return self.max_bytes is None or _utf8_size(text) <= self.max_bytes

    @property
    def chars(self) -> int:
        """A rough size of the budget in characters (about four per token)."""
        chars = self.max_tokens * 4
        return chars if self.max_bytes is None else min(chars, self.max_bytes)


def _utf8_size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def largest(fits: Callable[[int], bool], low: int, high: int) -> int:
    """The largest `x` in `[low, high]` found with `fits(x)` true and `fits(x + 1)` false.

    `fits(low)` is assumed true. Gallops up from `low`, then bisects, so it costs about
    `2 log2(x - low)` calls. When `fits` is not monotone the answer is still a place
    where it turns from true to false (or `high`).
    """
    bad = high + 1
    step = 1
    while low + step < bad:
        if not fits(low + step):
            bad = low + step
            break
        low += step
        step *= 2
    while bad - low > 1:
        middle = (low + bad) // 2
        if fits(middle):
            low = middle
        else:
            bad = middle
    return low


def priority(units: Sequence[str], policy: Policy, context: int) -> list[int]:
    """Unit indices in the order `policy` keeps them."""
    every = list(range(len(units)))
    if policy == "head":
        return every
    if policy == "tail":
        return every[::-1]
    both = _both_ends(units, every)
    if policy == "head_tail":
        return both
    first = _error_blocks(units, context)
    chosen = set(first)
    return first + [index for index in both if index not in chosen]


def _both_ends(units: Sequence[str], indices: list[int]) -> list[int]:
    """Take from whichever end has kept fewer characters so far."""
    order: list[int] = []
    left, right = 0, len(indices) - 1
    head = tail = 0
    while left <= right:
        if head <= tail:
            order.append(indices[left])
            head += len(units[indices[left]])
            left += 1
        else:
            order.append(indices[right])
            tail += len(units[indices[right]])
            right -= 1
    return order


def _error_blocks(units: Sequence[str], context: int) -> list[int]:
    """Error units with `context` neighbours each: first error, last, second, ..."""
    hits = [index for index, unit in enumerate(units) if ERROR_PATTERN.search(unit)]
    alternating = [hit for pair in zip(hits, reversed(hits), strict=True) for hit in pair]
    offsets_ = [0] + [sign * step for step in range(1, context + 1) for sign in (-1, 1)]
    order: dict[int, None] = {}
    for hit in alternating[: len(hits)]:
        for delta in offsets_:
            if 0 <= hit + delta < len(units):
                order.setdefault(hit + delta)
    return list(order)


class Layout:
    """A text cut into units, and the truncated texts made by keeping some of them.

    Candidates are counted without joining them: runs of kept units are split at the
    counter's seams between units (found once), the blocks between two seams are each
    counted once, and only the few pieces around omission markers are counted anew.
    """

    def __init__(
        self,
        text: str,
        units: Sequence[str],
        count: Callable[[str], int],
        seams: Seams | None = None,
        tokens: int | None = None,
    ) -> None:
        self.text = text
        self.units = list(units)
        self.starts = offsets(self.units)
        # Line ends before each unit: a marker's line count then costs no scan of its gap.
        self._breaks = list(accumulate(map(methodcaller("count", "\n"), self.units), initial=0))
        self._count = count
        self._pieces = PieceCounter(count, seams)
        self._gap_tokens: dict[tuple[int, int], int] = {}  # an omitted span is counted once
        total = len(self.units)
        inner = (
            []
            if seams is None
            else [
                index
                for index in range(1, total)
                if seams(self.units[index - 1], self.units[index])
            ]
        )
        self._bounds = [0, *inner, total] if total else [0]
        edges = [self.starts[bound] for bound in self._bounds]
        self._blocks = Blocks(text, edges, count, tokens)

    def render(self, kept: Iterable[int], *, exact: bool) -> str:
        """Kept units in order, each omitted run replaced by one marker line."""
        return "".join(self.render_pieces(kept, exact=exact))

    def render_pieces(self, kept: Iterable[int], *, exact: bool) -> list[str]:
        """The pieces `fits` counts `render(kept, exact=exact)` by, kept runs cut into blocks.

        They join to the rendered text; each was counted (through the layout's `count`)
        when the search checked that text, unless its tokens were found by subtraction.
        """
        pieces: list[str] = []
        for piece in self._candidate(runs_of(kept), exact=exact):
            if isinstance(piece, _BlockRun):
                pieces.extend(piece.texts())
            else:
                pieces.append(piece if isinstance(piece, str) else piece.text)
        return pieces

    def fits(self, kept: Iterable[int], budget: Budget, *, exact: bool) -> bool:
        """Whether `render(kept, exact=exact)` fits `budget` (counted without joining it)."""
        return self.fits_runs(runs_of(kept), budget, exact=exact)

    def fits_runs(self, runs: Runs, budget: Budget, *, exact: bool) -> bool:
        """`fits` for the units of `runs`."""
        pieces = self._candidate(runs, exact=exact)
        if budget.max_bytes is not None:
            # UTF-8 sizes add up over a concatenation: the pieces need not be joined.
            texts = (piece if isinstance(piece, str) else piece.text for piece in pieces)
            if sum(map(_utf8_size, texts)) > budget.max_bytes:
                return False
        limit = budget.max_tokens
        return self._pieces.count(pieces, limit) <= limit

    def _candidate(self, runs: Runs, *, exact: bool) -> list[str | Deferred]:
        """The pieces of the text keeping `runs`, kept runs as seam-bounded blocks."""
        gap_tokens = self._exact_tokens if exact else self._estimated_tokens
        pieces: list[str | Deferred] = []
        position = 0
        for start, stop in runs:
            if start > position:
                pieces.extend(self._gap(position, start, gap_tokens))
            pieces.extend(self._span(start, stop))
            position = stop
        if position < len(self.units):
            pieces.extend(self._gap(position, len(self.units), gap_tokens))
        return pieces

    def _gap(self, first: int, stop: int, gap_tokens: GapTokens) -> list[str | Deferred]:
        """The marker line for omitted units `first` to `stop`, on a line of its own."""
        pieces: list[str | Deferred] = []
        if first > 0 and not self.units[first - 1].endswith("\n"):
            pieces.append("\n")
        start, end = self.starts[first], self.starts[stop]
        breaks = self._breaks[stop] - self._breaks[first]
        pieces.append(marker(self.text, start, end, gap_tokens(first, stop), breaks))
        if stop < len(self.units):
            pieces.append("\n")
        return pieces

    def _span(self, first: int, stop: int) -> list[str | Deferred]:
        """Units `first` to `stop` (exclusive) as pieces: whole blocks counted once."""
        bounds = self._bounds
        low = bisect_left(bounds, first)
        high = bisect_right(bounds, stop) - 1
        if low >= len(bounds) or high < 0 or bounds[low] > bounds[high]:
            return [self._slice(first, stop)]
        begin, end = bounds[low], bounds[high]
        pieces: list[str | Deferred] = [self._slice(first, begin)]
        if begin < end:
            pieces.append(_BlockRun(self._slice(begin, end), self._blocks, low, high))
        pieces.append(self._slice(end, stop))
        return pieces

    def _slice(self, first: int, stop: int) -> str:
        return self.text[self.starts[first] : self.starts[stop]]

    def _exact_tokens(self, first: int, stop: int) -> int:
        tokens = self._gap_tokens.get((first, stop))
        if tokens is None:
            tokens = self._gap_tokens[first, stop] = self._pieces.count(self._span(first, stop))
        return tokens

    def _estimated_tokens(self, first: int, stop: int) -> int:
        return max(1, (self.starts[stop] - self.starts[first]) // 4)


class _BlockRun:
    """Blocks `low` to `high` of a layout as one piece, counted as a total needs them."""

    __slots__ = ("_blocks", "_high", "_low", "_next", "_pending", "text")

    def __init__(self, text: str, blocks: Blocks, low: int, high: int) -> None:
        self.text = text
        self._blocks = blocks
        self._low = low
        self._high = high
        self._pending: Sequence[int] = ()
        self._next = 0

    def tokens(self) -> int:
        return self._blocks.tokens(self._low, self._high)

    def texts(self) -> list[str]:
        """The texts of the blocks, in order."""
        return [self._blocks.text(block) for block in range(self._low, self._high)]

    def lower(self) -> int:
        pending = self._blocks.pending(self._low, self._high)
        if pending is None:
            return self._blocks.subtracted(self._low, self._high)
        if self._high == self._blocks.size and self._low > 0:
            pending = pending[::-1]  # a tail grows downwards: count next to what is known first
        self._pending = pending
        self._next = 0
        return self._blocks.known(self._low, self._high)

    def more(self) -> int | None:
        if self._next == len(self._pending):
            return None
        self._next += 1
        return self._blocks.block(self._pending[self._next - 1])


def runs_of(kept: Iterable[int]) -> Runs:
    """The runs of the unit indices `kept`."""
    runs: list[tuple[int, int]] = []
    start = stop = -1
    for index in sorted(kept):
        if index > stop:
            if stop > start:
                runs.append((start, stop))
            start = index
        if index >= stop:
            stop = index + 1
    if stop > start:
        runs.append((start, stop))
    return tuple(runs)


def _prefixes(order: list[int], policy: Policy, total: int) -> Callable[[int], Runs]:
    """The runs of `order[:size]`, by `size`; without sorting for the policies at both ends."""
    if policy == "head":
        return lambda size: ((0, size),) if size else ()
    if policy == "tail":
        return lambda size: ((total - size, total),) if size else ()
    if policy == "errors_first":
        return lambda size: runs_of(order[:size])
    # `head_tail` takes 0, 1, 2, ... and total - 1, total - 2, ... in some interleaving.
    heads = [0]
    for index in order:
        heads.append(heads[-1] + (index == heads[-1]))

    def ends(size: int) -> Runs:
        head, tail = heads[size], total - (size - heads[size])
        if head >= tail:  # the two ends meet: everything (nothing, for no units)
            return ((0, total),) if total else ()
        return tuple(run for run in ((0, head), (tail, total)) if run[0] < run[1])

    return ends


class _Search:
    """A layout's verdicts on candidates, each given once (the same runs fit or not alike)."""

    def __init__(self, layout: Layout, budget: Budget) -> None:
        self.layout = layout
        self._budget = budget
        self._verdicts: dict[tuple[Runs, bool], bool] = {}

    def fits(self, runs: Runs, *, exact: bool) -> bool:
        verdict = self._verdicts.get((runs, exact))
        if verdict is None:
            verdict = self.layout.fits_runs(runs, self._budget, exact=exact)
            self._verdicts[runs, exact] = verdict
        return verdict


def fit_layout(
    layout: Layout,
    policy: Policy,
    budget: Budget,
    *,
    context: int,
    adjust: Callable[[set[int]], set[int]] | None = None,
) -> set[int] | None:
    """The units of `layout` to keep under `policy`, or `None` if not even a marker fits.

    Their text (`layout.render(kept, exact=True)`) fits `budget`, and adding the next
    unit at either edge of an omitted region that `policy` grows from would not. `adjust`
    may then drop a few more units (to balance markup), when the result still fits.
    """
    order = priority(layout.units, policy, context)
    search = _Search(layout, budget)
    prefix = _prefixes(order, policy, len(order))
    size = largest(lambda size: search.fits(prefix(size), exact=False), 0, len(order) - 1)
    kept = _grow(search, order[:size], policy, exact=False)
    while kept and not search.fits(runs_of(kept), exact=True):
        kept.pop()
    if not kept and not search.fits((), exact=True):
        return None
    kept = _grow(search, kept, policy, exact=True)
    if adjust is not None:
        adjusted = adjust(set(kept))
        if search.fits(runs_of(adjusted), exact=True):
            return adjusted
    return set(kept)


def _grow(search: _Search, kept: list[int], policy: Policy, *, exact: bool) -> list[int]:
    """Add units at the edges of the omitted region while the result still fits."""
    kept = list(kept)
    runs = runs_of(kept)
    total = len(search.layout.units)
    grew = True
    while grew:
        grew = False
        for edge in _edges(runs, total, policy):
            wider = runs_of([*kept, edge])
            if search.fits(wider, exact=exact):
                kept.append(edge)
                runs = wider
                grew = True
    return kept


def _edges(runs: Runs, total: int, policy: Policy) -> list[int]:
    """The first and last omitted units, as far as `policy` grows from them."""
    if total == 0 or runs == ((0, total),):
        return []
    first = runs[0][1] if runs and runs[0][0] == 0 else 0
    last = runs[-1][0] - 1 if runs and runs[-1][1] == total else total - 1
    if policy == "head":
        return [first]
    if policy == "tail":
        return [last]
    return [first] if first == last else [first, last]
