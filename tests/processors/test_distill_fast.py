"""The distiller's shortcuts give what the straightforward logic they replace gives.

Each `_reference_*` function below is the code a shortcut replaced, kept verbatim; the
property tests compare both on random bodies built from the shapes the detectors and
rules look for (test output, tracebacks, grep hits, listings, logs, source, gutters).
"""

from __future__ import annotations

import ast
import heapq
import itertools
import json
import math
import re
import textwrap
from collections.abc import Callable, Container, Iterable, Sequence
from dataclasses import replace

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from context_graph.entities import critical_entities
from processors.distill import (
    CONTENT_TYPES,
    ContentType,
    Level,
    code,
    distiller,
    listings,
    logs,
    testruns,
    tracebacks,
)
from processors.distill import (
    detect as detect_module,
)
from processors.distill import (
    text as text_module,
)
from processors.distill.common import (
    _COLON_GUTTER,
    _GUTTER,
    Costs,
    Doc,
    _added_marker,
    _marker_cost,
    at_least,
    fill_by_entities,
    has_gutter,
    is_error_line,
    remembered_entities,
    scan_range,
    scan_text,
    select,
    split_gutter,
    strip_gutter,
)
from processors.distill.light import _squeeze_blanks, collapse_repeats, light, minify_json
from processors.distill.reserve import with_reserve

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
_RULER = re.compile(r"([=\-_~*#\u2500\u2501\u2550\u254c\u2504\u2508\u23af\u2015])\1{9,}")


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


#: Rulers of every ruler character around ten long, some in lines that hold a newline.
_RULERS = st.lists(
    st.one_of(
        _LINE,
        st.tuples(st.sampled_from("=-_~*#\u2500\u2550\u23af"), st.integers(8, 14), _LINE).map(
            lambda t: t[0] * t[1] + t[2]
        ),
        st.sampled_from(["a\n" + "=" * 12, "-" * 11 + "\n", "x\ny", "\n"]),
    ),
    max_size=20,
)


class TestLightShortcuts:
    @settings(max_examples=300, deadline=None)
    @given(
        lines=st.one_of(_LINES, _COLOURED, _RULERS),
        content_type=st.sampled_from(["text", "python", "log", "json"]),
    )
    @example(lines=["a\n" + "=" * 12, "=" * 10], content_type="text")  # split, they would repeat
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


_PY = st.sampled_from(
    ["def f(x):", "    return x", "class A(B):", "    def g(self) -> int:", "        pass",
     "import os", "from a.b import c", "import numpy as np", "x = 1", "if x:", "    y = (1,",
     "         2)", "@dec", '    """Doc.', '    """', "for i in range(3):", "    print(i)",
     "else:", "try:", "except ValueError:", "return 1", "async def h():", "x = 1; import sys",
     "    raise KeyError(k)", "}", "", "   "]
)  # fmt: skip
_PYTHONISH = st.tuples(
    st.lists(st.one_of(_PY, _PY, _LINE), max_size=30), st.sampled_from(["", "  ", "\t"])
).map(lambda t: [t[1] + line if line.strip() else line for line in t[0]])
_SOURCE = """\
import os
from app.config import load


class Store(Base):
    \"\"\"Rows on disk.\"\"\"

    def read(self, path: str) -> list[str]:
        if not os.path.exists(path):
            raise FileNotFoundError(path)
        with open(path) as handle:
            rows = [
                line.strip()
                for line in handle
            ]
        return rows


def main() -> int:
    import sys
    return Store().read(sys.argv[1])
""".split("\n")
#: Windows cut out of a module: they start inside blocks and end inside statements.
_WINDOW = st.tuples(st.integers(0, len(_SOURCE)), st.integers(0, len(_SOURCE))).map(
    lambda t: _SOURCE[min(t) : max(t)]
)


def _mixed(shapes: list[str], fillers: list[str], order: list[int]) -> list[str]:
    lines = [*shapes, *fillers]
    return [lines[i] for i in order if i < len(lines)]


#: Lines of one shape among a few others, in counts around the detectors' thresholds.
_MIXED = st.builds(
    _mixed,
    st.sampled_from(_SHAPES).flatmap(lambda shape: st.lists(st.just(shape), max_size=12)),
    st.lists(st.sampled_from(_SHAPES), max_size=4),
    st.permutations(range(16)),
)
#: `(hits, misses, share)`: lines each detector counts, lines it does not, its threshold.
_COUNTED = [
    (["src/a.py:12:x = 1", "b/c.ts-3-  y", "7:z"], ["plain words", "--", "a b: c"], 0.8),
    (["src/a.py:12:x = 1", "README.md:3:the"], ["plain words here"], 0.5),
    (["./src/a.py", "docs/", "main.py  b.py", "├── src", "src:"], ["see below", "a b c"], 0.85),
    (["2024-05-20 10:00:01 INFO up", "[debug] x", "WARN y"], ["plain words", "z"], 0.3),
    (["}", "x = f(y);", "return a => b"], ["plain words", "more words"], 0.4),
    (["import os", "def f(x):", "class A:"], ["x = 1", "print(x)", "    y = 2"], 0.15),
    (["tests/a.py::t PASSED", "FAIL: t (m.C)"], ["plain", "collected 3 items"], 0.5),
]


def _around(counted: int, size: int, offset: int, order: list[int], first_miss: bool) -> list[str]:
    hits, misses, share = _COUNTED[counted]
    wanted = max(0, min(size, math.ceil(share * size) + offset))
    lines = [hits[i % len(hits)] for i in range(wanted)]
    others = [misses[i % len(misses)] for i in range(size - wanted)]
    mixed = [[*lines, *others][i] for i in order if i < size]
    if first_miss and others:  # a miss first, then as many hits as the threshold allows
        mixed = [others[0], *lines, *others[1:]]
    return mixed


#: Bodies whose count of detected lines sits at a detector's threshold, or one off it.
_AT_THRESHOLD = st.builds(
    _around,
    st.integers(0, len(_COUNTED) - 1),
    st.integers(2, 14),
    st.integers(-1, 1),
    st.permutations(range(14)),
    st.booleans(),
)
_BODIES = st.one_of(_LINES, _PYTHONISH, _WINDOW, _MIXED, _AT_THRESHOLD)
_HINTS = st.sampled_from([None, "grep", "glob", "ls", "find", "log", "json", "py", "md", "txt"])


def _reference_looks_like_tests(lines: Sequence[str]) -> bool:
    window = [*lines[:500], *lines[-500:]] if len(lines) > 1_000 else lines
    if any(p.match(line) for line in window for p in testruns._STRONG):
        return True
    per_test = (testruns._PYTEST_LIVE, testruns._UNITTEST_HEAD)
    return sum(1 for line in window if any(p.match(line) for p in per_test)) >= 2


def _reference_looks_like_log(lines: Sequence[str]) -> bool:
    filled = [line for line in lines[:2_000] if line.strip()]
    if len(filled) < 3:
        return False
    hits = sum(1 for line in filled if logs._STAMP.match(line) or logs._level(line))
    return hits >= 0.3 * len(filled)


def _reference_looks_like_grep(lines: Sequence[str], *, hint: str | None = None) -> bool:
    filled = [line for line in lines[:2_000] if line.strip() and line.strip() != "--"]
    if len(filled) < 2:
        return False
    hits = sum(1 for line in filled if listings.grep_match(line))
    return hits >= (0.5 if hint == "grep" else 0.8) * len(filled)


def _reference_looks_like_listing(lines: Sequence[str], *, hint: str | None = None) -> bool:
    total = listings._TOTAL
    filled = [line for line in lines[:2_000] if line.strip() and not total.match(line.strip())]
    if len(filled) < 3 and hint not in {"glob", "ls", "find"}:
        return False
    shown = [names for names in map(listings._entries, filled) if names is not None]
    entries = [name for names in shown for name in names]
    headers = sum(1 for line in filled if listings._is_section(line))
    if not entries or len(shown) + headers < 0.85 * len(filled):
        return False
    return sum(1 for e in entries if listings._pathish(e)) >= 0.4 * len(entries) or hint == "glob"


def _reference_looks_like_code(lines: Sequence[str]) -> bool:
    filled = [line for line in lines[:2_000] if line.strip()]
    if len(filled) < 3:
        return False
    return sum(1 for line in filled if code._CODE_LINE.search(line)) >= 0.4 * len(filled)


def _reference_parse_python(source: str) -> ast.Module | None:
    for attempt in dict.fromkeys((source, textwrap.dedent(source))):
        parsed = code._parse(attempt)
        if isinstance(parsed, ast.Module):
            return parsed
    return None


def _reference_python(plain: Sequence[str]) -> bool:
    tree = _reference_parse_python("\n".join(plain))
    if tree is not None:
        return any(
            hasattr(node, "body") or isinstance(node, ast.Import | ast.ImportFrom)
            for node in tree.body
        )
    filled = [line for line in plain if line.strip()]
    keyword_lines = sum(1 for line in filled if detect_module._PY_KEYWORDS.match(line))
    if keyword_lines >= max(2, 0.15 * len(filled)):
        return True
    return keyword_lines >= 1 and code.looks_like_python_window(plain)


def _reference_detect(plain: Sequence[str], hint: str | None = None) -> str:
    text = "\n".join(plain)
    if not text.strip():
        return "text"
    is_json = detect_module._json(text)
    if hint == "json" or is_json:
        return "json" if is_json else "text"
    language = detect_module.LANGUAGES.get(hint or "")
    if language is not None:
        return "python" if language == "python" else "code"
    if hint in detect_module._TEXT_EXTENSIONS:
        return "text"
    if _reference_looks_like_tests(plain):
        return "test_output"
    if tracebacks.find_tracebacks(plain) and (
        tracebacks.traceback_share(plain) >= 0.3 or not _reference_looks_like_log(plain)
    ):
        return "traceback"
    if _reference_looks_like_grep(plain, hint=hint):
        return "grep"
    if _reference_looks_like_listing(plain, hint=hint):
        return "listing"
    if _reference_looks_like_log(plain) or hint == "log":
        return "log"
    if detect_module._DIFF.search(text):
        return "text"
    if _reference_python(plain):
        return "python"
    if code.looks_like_code(plain):
        return "code"
    return "text"


@settings(max_examples=300, deadline=None)
@given(
    flags=st.lists(st.booleans(), max_size=30),
    needed=st.one_of(st.integers(-1, 32), st.floats(-1, 32, allow_nan=False)),
)
def test_at_least_counts_as_a_full_count_does(flags: list[bool], needed: float) -> None:
    """The early-stopping count answers as counting every item would."""
    items = ["x" if flag else "" for flag in flags]
    assert at_least(items, bool, needed) == (sum(flags) >= needed)


class TestDetectionShortcuts:
    @settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(lines=_BODIES, hint=_HINTS)
    @example(lines=["    return x", "import os"], hint=None)  # a window: only its prefix parses
    @example(lines=["plain", "./a.py", "./b.py", "./c.py", "./d.py", "./e.py", "./f.py"], hint=None)
    def test_each_detector_as_before(self, lines: list[str], hint: str | None) -> None:
        """Every detector that stops early or matches once per line answers as before."""
        assert testruns.looks_like_tests(lines) == _reference_looks_like_tests(lines)
        assert logs.looks_like_log(lines) == _reference_looks_like_log(lines)
        assert listings.looks_like_grep(lines, hint=hint) == _reference_looks_like_grep(
            lines, hint=hint
        )
        assert listings.looks_like_listing(lines, hint=hint) == _reference_looks_like_listing(
            lines, hint=hint
        )
        assert code.looks_like_code(lines) == _reference_looks_like_code(lines)
        assert detect_module._python(lines) == _reference_python(lines)
        share = tracebacks.share_of(lines, tracebacks.find_tracebacks(lines))
        assert share == tracebacks.traceback_share(lines)

    @settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(lines=_BODIES, hint=_HINTS)
    def test_detect_as_before(self, lines: list[str], hint: str | None) -> None:
        """`detect` gives the content type the detectors gave one after the other."""
        assert detect_module.detect(lines, hint) == _reference_detect(lines, hint)

    @settings(max_examples=200, deadline=None)
    @given(lines=st.one_of(_PYTHONISH, _WINDOW))
    def test_parse_python_as_before(self, lines: list[str]) -> None:
        """`parse_python` finds the same module (or none), and the as-is parse is the first."""
        source = "\n".join(lines)
        tree, as_is = code.parse_python_as_is(source)
        reference = _reference_parse_python(source)
        assert (tree is None) == (reference is None)
        if tree is not None and reference is not None:
            assert ast.dump(tree, include_attributes=True) == ast.dump(
                reference, include_attributes=True
            )
        first = code._parse(source)
        assert type(as_is) is type(first)
        if not isinstance(first, ast.Module):
            assert as_is == first


def _reference_render(doc: Doc, kept: set[int]) -> str:
    # The rendering itself did not change; the gutter was found again at every render.
    return code._render(doc, kept, has_gutter(doc.lines))


def _reference_distill_python(doc: Doc) -> str | None:
    tree = _reference_parse_python(doc.text)
    if tree is None:
        return None
    tiers = code._python_tiers(tree, doc.plain, heavy=doc.heavy)
    if not any(tiers):
        return None
    return _reference_render(doc, code._fill(doc, code._pick(doc, tiers)))


def _reference_distill_code(doc: Doc) -> str | None:
    tiers = code._outline_tiers(doc.plain, heavy=doc.heavy)
    if not any(tiers):
        return None
    return _reference_render(doc, code._fill(doc, code._pick(doc, tiers)))


def _reference_distill_plain(doc: Doc) -> str:
    filled = [i for i, line in enumerate(doc.plain) if line.strip()]
    must = set(filled[:1])
    must.update(i for i in scan_range(len(doc.plain)) if is_error_line(doc.plain[i]))
    room = doc.budget // 4 - doc.cost(must)
    for index in filled:
        if text_module._HEADING.match(doc.plain[index]):
            cost = doc.costs.of(doc.lines[index])
            if cost > room:
                break
            must.add(index)
            room -= cost
    return select(doc, must)


_REFERENCE_RULES: dict[str, Callable[[Doc], str | None]] = {
    **distiller._RULES,
    "python": _reference_distill_python,
    "code": _reference_distill_code,
    "text": _reference_distill_plain,
}


def _reference_body(lines: list[str], content_type: str, doc: Doc) -> str:
    plain = [strip_gutter(line) for line in lines] if has_gutter(lines) else lines
    if content_type == "json":
        lines = plain = [light(plain, content_type="json")]
    doc = replace(doc, lines=tuple(lines), plain=tuple(plain))
    distilled = _REFERENCE_RULES[content_type](doc)
    if distilled is None and content_type == "python":
        distilled = _reference_distill_code(doc)
    return distilled if distilled is not None else _reference_distill_plain(doc)


def _reference_distill_body(lines: list[str], content_type: str, doc: Doc) -> str:
    if content_type == "json":
        return _reference_body(lines, content_type, doc)
    plain = [strip_gutter(line) for line in lines] if has_gutter(lines) else lines
    entities = critical_entities(scan_text(plain))
    return with_reserve(doc, lambda d: _reference_body(lines, content_type, d), entities, doc.keep)


_JSON_LINES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=6) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=20,
).map(lambda value: json.dumps(value, indent=2).split("\n"))


#: Markdown headings of many lengths among lines of text (plain text keeps what fits).
_HEADINGS = st.lists(
    st.one_of(
        st.integers(1, 40).map(lambda size: "# " + "heading " * size),
        st.sampled_from(["## Setup the service and its database", "text /a/b.py", "plain", ""]),
    ),
    max_size=20,
)


class TestRulesShortcuts:
    @settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(
        lines=st.one_of(_BODIES, _GUTTERED, _HEADINGS),
        content_type=st.sampled_from(CONTENT_TYPES),
        level=st.sampled_from(["medium", "heavy"]),
        budget=st.integers(1, 300),
        chars=st.floats(1.0, 6.0),
        data=st.data(),
    )
    def test_distill_body_as_before(
        self,
        lines: list[str],
        content_type: ContentType,
        level: Level,
        budget: int,
        chars: float,
        data: st.DataObject,
    ) -> None:
        """The rules prepared once for both reserve passes give the body and reserve as before.

        Every content type's rule runs on every shape of body (a rule meets bodies of other
        shapes through its fallbacks), and `keep` is asked the same questions.
        """
        pool = sorted({e for line in lines for e in critical_entities(line)})
        keep = data.draw(st.sets(st.sampled_from(pool), max_size=5)) if pool else set()
        old, new = _Asked(keep), _Asked(keep)
        outs = []
        for asked, run in ((old, _reference_distill_body), (new, distiller._distill_body)):
            doc = Doc((), (), level, budget, Costs(chars), asked, remembered_entities())
            outs.append(run(list(lines), content_type, doc))
        assert outs[0] == outs[1]
        assert new.asked == old.asked

    @settings(max_examples=100, deadline=None)
    @given(lines=_JSON_LINES, level=st.sampled_from(["medium", "heavy"]), budget=st.integers(1, 80))
    def test_json_body_as_before(self, lines: list[str], level: Level, budget: int) -> None:
        """JSON bodies are minified and shaped as before."""
        outs = [
            run(list(lines), "json", Doc((), (), level, budget, Costs(3.0)))
            for run in (_reference_distill_body, distiller._distill_body)
        ]
        assert outs[0] == outs[1]

    @settings(max_examples=200, deadline=None)
    @given(lines=_HEADINGS, budget=st.integers(1, 300), chars=st.floats(1.0, 6.0))
    def test_plain_text_headings_as_before(
        self, lines: list[str], budget: int, chars: float
    ) -> None:
        """Plain text keeps the headings that fit in a quarter of the budget, as before."""
        doc = Doc(tuple(lines), tuple(lines), "medium", budget, Costs(chars))
        assert text_module.distill_plain(doc) == _reference_distill_plain(doc)
