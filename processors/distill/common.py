"""Shared pieces of the distillers: levels, the document they read, line selection.

Every content-type rule works on a `Doc` (the body's lines, with and without a
line-number gutter) and a token budget, and most of them end the same way: some lines
must stay (error lines, summaries, structure), and the rest of the budget is filled with
the lines that bring the most identifiers not yet kept per token (`fill_by_entities`).
"""

from __future__ import annotations

import heapq
import itertools
import math
import re
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal, TypeAlias

from context_graph.entities import critical_entities

__all__ = [
    "LEVELS",
    "SCAN_WINDOW",
    "TARGET_RATIOS",
    "Costs",
    "Doc",
    "Level",
    "at_least",
    "fill_by_entities",
    "has_gutter",
    "is_error_line",
    "omitted",
    "plural",
    "remembered_entities",
    "render_lines",
    "scan_range",
    "scan_text",
    "select",
    "split_gutter",
    "strip_gutter",
    "with_context",
]

Level: TypeAlias = Literal["light", "medium", "heavy"]

LEVELS: tuple[Level, ...] = ("light", "medium", "heavy")

#: Rough share of the original tokens each level aims for.
TARGET_RATIOS: Mapping[Level, float] = MappingProxyType({"light": 0.8, "medium": 0.3, "heavy": 0.1})

#: Past this many lines, only the head and the tail are scanned for identifiers.
SCAN_WINDOW = 2_000

_ERROR_LINE = re.compile(
    r"\b(?:\w*(?:Error|Exception)|ERROR|ERR|FAIL|FAILED|FAILURE|FATAL|CRITICAL|PANIC"
    r"|Traceback|WARN|WARNING|panic)\b"
    r"|\b(?:error|Error|warning|Warning|failed|Failed|fatal|Fatal)(?=:|\b\s*\()"
    r"|\[(?:error|warn|warning|critical|fatal)\]"
    r"|^E {2,}\S"
)
_GUTTER = re.compile(r"^( *)(\d+)(→|\t)")
_COLON_GUTTER = re.compile(r"^(\d+):")
_SILENT = re.compile(r"^\s*[\^~]*\s*$")
_KEEP_WEIGHT = 4
_ERROR_NAME_END = re.compile(r"(?:Error|Exception)$")


def is_error_line(line: str) -> bool:
    """Whether a line of command output reports an error, a failure or a warning."""
    return _ERROR_LINE.search(line) is not None


def at_least(items: Sequence[str], test: Callable[[str], object], needed: float) -> bool:
    """Whether at least `needed` of `items` pass `test` (a truthy result).

    Detectors ask this of thousands of lines; it stops as soon as the answer is settled:
    once enough passed, or once too few are left to pass even if every one did.
    """
    hits = 0
    left = len(items)
    for item in items:
        left -= 1
        if test(item):
            hits += 1
            if hits >= needed:
                return True
        elif hits + left < needed:
            return False
    return hits >= needed


def split_gutter(line: str) -> tuple[str, str]:
    """`(gutter without its padding, rest)`; the gutter is empty when the line has none."""
    # Both gutters start with a space or a digit (`\d` is `str.isdecimal`): most lines
    # of text are told apart by their first character alone.
    first = line[:1]
    if first != " " and not first.isdecimal():
        return "", line
    match = _GUTTER.match(line) or _COLON_GUTTER.match(line)
    if not match:
        return "", line
    return match.group(0).lstrip(" "), line[match.end() :]


def strip_gutter(line: str) -> str:
    """A line without its line-number gutter (`cat -n`, the Read tool, SWE-agent's `open`)."""
    return split_gutter(line)[1]


def has_gutter(lines: Sequence[str]) -> bool:
    """Whether the lines carry a line-number gutter.

    `12→` and `12<tab>` gutters count when most non-blank lines have one; `12:` counts
    only when nearly every line has one and the numbers run on consecutively, which
    tells a file view from `grep -n` output.
    """
    filled = list(filter(str.strip, lines))
    if not filled:
        return False
    if sum(map(bool, map(_GUTTER.match, filled))) >= 0.8 * len(filled):
        return True
    matches = list(filter(None, map(_COLON_GUTTER.match, filled)))
    if len(matches) < 3 or len(matches) < 0.9 * len(filled):
        return False
    numbers = [int(m.group(1)) for m in matches]
    steps = sum(1 for a, b in itertools.pairwise(numbers) if b == a + 1)
    return steps >= 0.9 * (len(numbers) - 1)


@dataclass(frozen=True)
class Costs:
    """Estimates the tokens of fragments from the whole text's characters per token."""

    chars_per_token: float

    def of(self, text: str) -> int:
        """Estimated tokens of `text` plus its newline (at least 1)."""
        return max(1, math.ceil((len(text) + 1) / self.chars_per_token))


@dataclass(frozen=True)
class Doc:
    """The body a content-type rule distills.

    Attributes:
        lines: The lines as shown (with a gutter when the source had one).
        plain: The same lines without the gutter, for analysis.
        level: `medium` or `heavy` (light does not reach the content rules).
        budget: Tokens the body should fit in (a target, not a hard cap).
        costs: The token estimator.
        keep: Entities to keep first (those a later turn of the agent named).
        entities: The critical entities of one line (`remembered_entities` when a body is
            distilled more than once).
    """

    lines: tuple[str, ...]
    plain: tuple[str, ...]
    level: Level
    budget: int
    costs: Costs
    keep: Container[str] = frozenset()
    entities: Callable[[str], Sequence[str]] = field(default=critical_entities)

    @property
    def heavy(self) -> bool:
        """Whether this is the heavy level."""
        return self.level == "heavy"

    @property
    def text(self) -> str:
        """The plain lines joined."""
        return "\n".join(self.plain)

    def cost(self, indices: Iterable[int]) -> int:
        """Estimated tokens of the shown lines at `indices`."""
        return sum(self.costs.of(self.lines[i]) for i in indices)


def plural(count: int, word: str, many: str | None = None) -> str:
    """`1 line`, `2 lines`, `1,204 lines` (`many` is the plural when not `word + s`)."""
    return f"{count:,} {word if count == 1 else many or word + 's'}"


def omitted(count: int) -> str:
    """The marker that stands for `count` left-out lines."""
    return f"[... {plural(count, 'line')} ...]"


def render_lines(lines: Sequence[str], keep: Iterable[int]) -> str:
    """The kept lines in order, with a marker for every left-out run that says something.

    Runs of blank lines and caret lines (`^^^^`) go silently; a single left-out line
    no longer than its marker is shown instead of the marker.
    """
    out: list[str] = []
    previous = -1
    for index in [*sorted(set(keep)), len(lines)]:
        gap = lines[previous + 1 : index]
        if len(gap) == 1 and len(gap[0]) <= len(omitted(1)):
            out.extend(gap)
        elif not all(_SILENT.match(line) for line in gap) and (out or index < len(lines)):
            out.append(omitted(len(gap)))
        if index < len(lines):
            out.append(lines[index])
        previous = index
    return "\n".join(out)


def scan_range(count: int) -> list[int]:
    """Line indices worth scanning: all, or the head and tail windows of a huge body."""
    if count <= 2 * SCAN_WINDOW:
        return list(range(count))
    return [*range(SCAN_WINDOW), *range(count - SCAN_WINDOW, count)]


def scan_text(lines: Sequence[str]) -> str:
    """The lines worth scanning for identifiers (`scan_range`), joined."""
    return "\n".join(lines[i] for i in scan_range(len(lines)))


def remembered_entities() -> Callable[[str], Sequence[str]]:
    """`critical_entities` with a memory, for the lines of one body distilled twice."""
    memory: dict[str, list[str]] = {}

    def entities(line: str) -> list[str]:
        found = memory.get(line)
        if found is None:
            found = memory[line] = critical_entities(line)
        return found

    return entities


def _weight(entity: str, keep: Container[str]) -> int:
    if entity in keep:
        return _KEEP_WEIGHT
    return 2 if "/" in entity or _ERROR_NAME_END.search(entity) else 1


def fill_by_entities(
    doc: Doc,
    kept: set[int],
    budget: int,
    *,
    candidates: Iterable[int] | None = None,
    entities: Callable[[str], Sequence[str]] | None = None,
) -> set[int]:
    """Add the lines that keep the most new identifiers per token, while they fit.

    A greedy weighted set cover (paths and error names count double, the entities of
    `doc.keep` four times), evaluated lazily;
    ties go to the earlier line, so the choice is deterministic. Lines that bring
    nothing new are never added.
    """
    entities = entities or doc.entities
    pool = range(len(doc.plain)) if candidates is None else candidates
    covered = {e for i in kept for e in entities(doc.plain[i])}
    spent = doc.cost(kept) + _marker_cost(doc, kept)
    found = {i: entities(doc.plain[i]) for i in pool if i not in kept and doc.plain[i].strip()}
    costs = {i: doc.costs.of(doc.lines[i]) for i in found}
    gain = _Gain(covered, doc.keep)
    heap = [(-gain(ents) / costs[i], i) for i, ents in found.items() if ents]
    heap = [item for item in heap if item[0] < 0]
    heapq.heapify(heap)
    chosen = set(kept)
    while heap:
        _, index = heapq.heappop(heap)
        new = gain(found[index])
        if new <= 0:
            continue
        score = -new / costs[index]
        if heap and score > heap[0][0]:
            heapq.heappush(heap, (score, index))
            continue
        cost = costs[index] + _added_marker(chosen, index, doc)
        if spent + cost > budget:
            continue
        chosen.add(index)
        spent += cost
        covered.update(found[index])
    return chosen


class _Gain:
    """The weight of a line's entities not covered yet.

    Each entity's weight is worked out once (the greedy loop re-scores lines often), and
    `keep` is asked only about entities not covered when first scored, as before.
    """

    __slots__ = ("_covered", "_keep", "_weights")

    def __init__(self, covered: set[str], keep: Container[str]) -> None:
        self._covered = covered
        self._keep = keep
        self._weights: dict[str, int] = {}

    def __call__(self, entities: Sequence[str]) -> int:
        total = 0
        covered, weights = self._covered, self._weights
        for entity in set(entities):
            if entity not in covered:
                weight = weights.get(entity)
                if weight is None:
                    weight = weights[entity] = _weight(entity, self._keep)
                total += weight
        return total


def _marker_cost(doc: Doc, kept: Iterable[int]) -> int:
    ordered = sorted(kept)
    gaps = sum(1 for a, b in zip([-1, *ordered], ordered, strict=False) if b - a > 1)
    return gaps * doc.costs.of(omitted(10))


def _added_marker(chosen: set[int], index: int, doc: Doc) -> int:
    """Roughly what an omission marker adds when `index` is kept (isolated lines pay it)."""
    if index - 1 in chosen or index + 1 in chosen:
        return 0
    return doc.costs.of(omitted(10))


def select(doc: Doc, must: Iterable[int], *, fill: bool = True) -> str:
    """Keep `must`, fill the rest of the budget by identifiers, render with markers."""
    kept = {i for i in must if 0 <= i < len(doc.lines)}
    if fill:
        kept = fill_by_entities(doc, kept, doc.budget, candidates=scan_range(len(doc.lines)))
    return render_lines(doc.lines, kept)


def with_context(indices: Iterable[int], count: int, radius: int) -> set[int]:
    """`indices` plus `radius` lines either side, within `0..count-1`."""
    out: set[int] = set()
    for index in indices:
        out.update(range(max(0, index - radius), min(count, index + radius + 1)))
    return out
