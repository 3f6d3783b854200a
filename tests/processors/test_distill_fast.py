"""The distiller's shortcuts give what the straightforward logic they replace gives.

Each `_reference_*` function below is the code a shortcut replaced, kept verbatim; the
property tests compare both on random bodies built from the shapes the detectors and
rules look for (test output, tracebacks, grep hits, listings, logs, source, gutters).
"""

from __future__ import annotations

import heapq
import itertools
import re
from collections.abc import Callable, Container, Iterable, Sequence

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from context_graph.entities import critical_entities
from processors.distill._common import (
    _COLON_GUTTER,
    _GUTTER,
    Costs,
    Doc,
    _added_marker,
    _marker_cost,
    fill_by_entities,
    has_gutter,
    split_gutter,
)
from processors.distill._light import _squeeze_blanks, collapse_repeats, light, minify_json

# Lines of every shape the detectors tell apart, and pieces that sit on their edges.
_SHAPES = [
    "============ 1 failed, 2 passed in 0.12s ============",
    "tests/test_api.py::test_create PASSED",
    "tests/test_api.py::test_load FAILED",
    "FAILED tests/test_api.py::test_load - AssertionError: 1 != 2",
    "ERROR: test_load (tests.test_io.LoadTests.test_load)",
    "FAIL: test_x (mod.Case)",
    "Ran 3 tests in 0.004s",
    "OK",
    "FAILED (errors=1)",
    "--- FAIL: TestParse (0.00s)",
    "ok  \tgithub.com/a/b\t0.012s",
    "PASS",
    "Tests:       1 failed, 3 passed, 4 total",
    "Traceback (most recent call last):",
    '  File "/repo/app/main.py", line 12, in run',
    '  File "/usr/lib/python3.11/json/__init__.py", line 346, in loads',
    "    return _default_decoder.decode(s)",
    "           ^^^^^^^^^^^^^^^^",
    "ValueError: invalid literal for int() with base 10: 'x'",
    "During handling of the above exception, another exception occurred:",
    "    at Object.<anonymous> (/repo/src/index.js:10:5)",
    "\tat com.example.App.main(App.java:21)",
    "    at node:internal/main:1:1",
    "src/app/main.py:12:def run(config):",
    "src/app/main.py-13-    return config",
    "README.md:3:the parser",
    "12:    x = parse(y)",
    "--",
    "drwxr-xr-x  2 root root  4096 Jan  1 10:00 src",
    "-rw-r--r--  1 user staff  12K 2024-01-01 10:00 main.py",
    "├── src",
    "│   └── app.py",
    "main.py  setup.cfg  docs/",
    "src/app:",
    "total 12",
    "Found 3 files",
    "./src/app/main.py",
    "2024-05-20 10:00:01,123 INFO server started on port 8080",
    "[12:00:01] ERROR connection refused",
    "May 20 10:00:02 host sshd[12]: WARN retry",
    "level=info msg=ready",
    "[debug] cache warm",
    "1716199200.5 DEBUG tick",
    "import os",
    "from app.config import load",
    "def run(config: dict) -> int:",
    "async def fetch(url):",
    "class Parser(Base):",
    "    @property",
    '    """Parse the rows."""',
    "    return run(x)",
    "if __name__ == '__main__':",
    "x = 1; import sys",
    "@dataclass",
    "function main() {",
    "const add = (a, b) => a + b;",
    "}",
    "#include <stdio.h>",
    "fn main() -> Result<(), Error> {",
    "<div class='x'>",
    "diff --git a/x.py b/x.py",
    "@@ -1,3 +1,4 @@",
    "# Heading",
    "the file was modified at noon, see what that means",
    "Error: disk full on /dev/sda1",
    "warning: unused variable `x`",
    "\x1b[31mFAILED\x1b[0m red",
    "progress 10%\rprogress 100%",
    "==========================",
    "-----",
    "",
    "   ",
    "\t",
]
_PIECES = st.sampled_from(
    ["x", " ", "  ", "\t", ":", "12", "→", "-", "(", ")", "{", "}", ";", "at ", "def ", "if ",
     "import ", "ERROR", "[info]", "/a/b.py", "a.py", "\x1b[0m", "\r", "\u00a0", "٣", "²"]
)  # fmt: skip
_LINE = st.one_of(
    st.sampled_from(_SHAPES),
    st.lists(_PIECES, max_size=8).map("".join),
    st.text(max_size=20).map(lambda text: text.replace("\n", " ")),
)


def _numbered(lines: list[str], start: int, style: str, width: int) -> list[str]:
    return [f"{start + i:>{width}}{style}{line}" for i, line in enumerate(lines)]


_GUTTERED = st.builds(
    _numbered,
    st.lists(_LINE, max_size=30),
    st.integers(0, 120),
    st.sampled_from(["→", "\t", ":", ": "]),
    st.sampled_from([0, 1, 6]),
)
#: Bodies: lines of mixed shapes, a run of one shape, or numbered lines with some edits.
_LINES = st.one_of(
    st.lists(_LINE, max_size=40),
    st.tuples(st.sampled_from(_SHAPES), st.integers(0, 12)).map(lambda t: [t[0]] * t[1]),
    st.tuples(_GUTTERED, st.lists(_LINE, max_size=3)).map(lambda t: [*t[1], *t[0]]),
)


def _reference_has_gutter(lines: Sequence[str]) -> bool:
    filled = [line for line in lines if line.strip()]
    if not filled:
        return False
    if sum(1 for line in filled if _GUTTER.match(line)) >= 0.8 * len(filled):
        return True
    numbers = [int(m.group(1)) for line in filled if (m := _COLON_GUTTER.match(line))]
    if len(numbers) < 3 or len(numbers) < 0.9 * len(filled):
        return False
    steps = sum(1 for a, b in itertools.pairwise(numbers) if b == a + 1)
    return steps >= 0.9 * (len(numbers) - 1)


def _reference_split_gutter(line: str) -> tuple[str, str]:
    match = _GUTTER.match(line) or _COLON_GUTTER.match(line)
    if not match:
        return "", line
    return match.group(0).lstrip(" "), line[match.end() :]


class TestGutterShortcuts:
    @settings(max_examples=300, deadline=None)
    @given(lines=_LINES)
    def test_has_gutter_as_before(self, lines: list[str]) -> None:
        """`has_gutter` answers as the line-by-line count did."""
        assert has_gutter(lines) == _reference_has_gutter(lines)

    @settings(max_examples=300, deadline=None)
    @given(lines=_LINES)
    def test_split_gutter_as_before(self, lines: list[str]) -> None:
        """`split_gutter` splits every line as before, digits of any script included."""
        for line in [*lines, "٣→x", "²→x", " 7\tx", "  :x", ""]:
            assert split_gutter(line) == _reference_split_gutter(line)


_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")
_RULER = re.compile(r"([=\-_~*#])\1{9,}")


def _reference_clean(line: str, *, layout: bool, gutter: bool) -> str:
    prefix, line = split_gutter(line) if gutter else ("", line)
    line = _ANSI.sub("", line).rstrip()
    if line.endswith("\r"):
        line = line.rstrip("\r").rstrip()
    if not layout:
        line = _RULER.sub(lambda m: m.group(1) * 10, line)
    return prefix + line


def _reference_light(lines: Sequence[str], *, content_type: str) -> str:
    gutter = _reference_has_gutter(lines)
    if content_type == "json" and not gutter:
        return minify_json("\n".join(lines))
    layout = content_type in {"python", "code", "json"}
    cleaned = [_reference_clean(line, layout=layout, gutter=gutter) for line in lines]
    if not gutter:
        cleaned = _squeeze_blanks(cleaned)
    if not layout:
        cleaned = collapse_repeats(cleaned)
    return "\n".join(cleaned)


_ESCAPES = st.sampled_from(["\x1b[1;31m", "\x1b]0;title\x07", "\x1b]8;;\x1b\\"])
_COLOURED = st.lists(st.one_of(_LINE, st.tuples(_ESCAPES, _LINE).map("".join)), max_size=30)


class TestLightShortcuts:
    @settings(max_examples=300, deadline=None)
    @given(
        lines=st.one_of(_LINES, _COLOURED),
        content_type=st.sampled_from(["text", "python", "log", "json"]),
    )
    def test_light_as_before(self, lines: list[str], content_type: str) -> None:
        """Light cleaning is unchanged, with the gutter passed in or found again."""
        expected = _reference_light(lines, content_type=content_type)
        assert light(lines, content_type=content_type) == expected
        gutter = _reference_has_gutter(lines)
        assert light(lines, content_type=content_type, gutter=gutter) == expected


def _reference_weight(entity: str, keep: Container[str]) -> int:
    if entity in keep:
        return 4
    return 2 if "/" in entity or re.search(r"(?:Error|Exception)$", entity) else 1


def _reference_gain(entities: Sequence[str], covered: set[str], keep: Container[str]) -> int:
    return sum(_reference_weight(e, keep) for e in set(entities) if e not in covered)


def _reference_fill(
    doc: Doc,
    kept: set[int],
    budget: int,
    *,
    candidates: Iterable[int] | None = None,
    entities: Callable[[str], Sequence[str]] | None = None,
) -> set[int]:
    entities = entities or doc.entities
    pool = range(len(doc.plain)) if candidates is None else candidates
    covered = {e for i in kept for e in entities(doc.plain[i])}
    spent = doc.cost(kept) + _marker_cost(doc, kept)
    found = {i: entities(doc.plain[i]) for i in pool if i not in kept and doc.plain[i].strip()}
    heap = [
        (-_reference_gain(ents, covered, doc.keep) / doc.costs.of(doc.lines[i]), i)
        for i, ents in found.items()
    ]
    heap = [item for item in heap if item[0] < 0]
    heapq.heapify(heap)
    chosen = set(kept)
    while heap:
        _, index = heapq.heappop(heap)
        gain = _reference_gain(found[index], covered, doc.keep)
        if gain <= 0:
            continue
        score = -gain / doc.costs.of(doc.lines[index])
        if heap and score > heap[0][0]:
            heapq.heappush(heap, (score, index))
            continue
        cost = doc.costs.of(doc.lines[index]) + _added_marker(chosen, index, doc)
        if spent + cost > budget:
            continue
        chosen.add(index)
        spent += cost
        covered.update(found[index])
    return chosen


class _Asked:
    """A `keep` set that records the questions asked of it."""

    def __init__(self, keep: set[str]) -> None:
        self.keep = keep
        self.asked: set[str] = set()

    def __contains__(self, entity: object) -> bool:
        self.asked.add(str(entity))
        return entity in self.keep


_ENTITY_LINE = st.lists(
    st.sampled_from(
        ["src/app/main.py", "ValueError", "KeyError", "parse_row", "fetchData", "1,234", "42",
         "https://example.com/a", "job_id", "a.py", "the", "x", "MyException", "/tmp/out.log"]
    ),
    max_size=6,
).map(" ".join)  # fmt: skip


class TestFillShortcuts:
    @settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(
        plain=st.lists(st.one_of(_ENTITY_LINE, _LINE), min_size=1, max_size=40),
        data=st.data(),
        budget=st.integers(0, 400),
        chars=st.floats(1.0, 6.0),
    )
    def test_fill_by_entities_as_before(
        self, plain: list[str], data: st.DataObject, budget: int, chars: float
    ) -> None:
        """The same lines are chosen, and `keep` is asked nothing the greedy loop did not ask."""
        indices = st.integers(0, len(plain) - 1)
        kept = data.draw(st.sets(indices, max_size=4))
        candidates = data.draw(st.none() | st.lists(indices, max_size=40))
        pool = sorted({e for line in plain for e in critical_entities(line)})
        keep = data.draw(st.sets(st.sampled_from(pool), max_size=5)) if pool else set()
        old, new = _Asked(keep), _Asked(keep)
        answers = []
        for asked, fill in ((old, _reference_fill), (new, fill_by_entities)):
            doc = Doc(tuple(plain), tuple(plain), "medium", budget, Costs(chars), asked)
            answers.append(fill(doc, set(kept), budget, candidates=candidates))
        assert answers[0] == answers[1]
        assert new.asked <= old.asked
