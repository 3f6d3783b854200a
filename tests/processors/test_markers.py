"""The processors' marker lines are read past: a distilled error's line is its error.

A distilled traceback keeps its frames' heads and its exception line, with a
`[... 1 line ...]` marker for each left-out run. The brief read its outcome from that
text, and the marker after the first frame was taken for the exception: the brief said
the run failed with `[... 1 line ...]` (django-12908's `ModuleNotFoundError: No module
named 'sqlparse'`, distilled at medium before the summary took it).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from processors.distill.common import omitted
from processors.distill.distiller import distill_text
from processors.distill.reserve import RESERVE_LABEL
from processors.markers import is_marker, without_markers
from processors.summarize.outcomes import error_gist, read_outcome
from processors.truncate.units import marker

_FRAMES = "".join(
    f'  File "/testbed/app/module_{n}.py", line {10 + n}, in handler_{n}\n'
    f"    result = handler_{n + 1}(request, context, settings.OPTION_{n})\n"
    f"             {'^' * 40}\n"
    for n in range(14)
)
TRACEBACK = (
    "<returncode>1</returncode>\n<output>\nTraceback (most recent call last):\n"
    f"{_FRAMES}ModuleNotFoundError: No module named 'sqlparse'\n</output>"
)


class TestMarkers:
    def test_every_processor_s_marker_is_one(self) -> None:
        text = "a\nb\nc\nd\n"
        assert is_marker(omitted(1)) and is_marker(omitted(1_204))
        assert is_marker(marker(text, 2, 6, 3))
        assert is_marker(marker("x" * 900, 10, 800, 200, breaks=0))
        assert is_marker(f"{RESERVE_LABEL}KeyError, app.py, +3 more]")
        header = distill_text(TRACEBACK, "medium").text.split("\n")[0]
        assert is_marker(header)

    def test_output_lines_are_not_markers(self) -> None:
        for line in (
            "[1, 2, 3]",
            "[... this is a list ...]",
            "ModuleNotFoundError: No module named 'sqlparse'",
            "[INFO] 12 lines read",
            "  [... 3 lines ...] and more text",
        ):
            assert not is_marker(line)

    @settings(max_examples=80, deadline=None)
    @given(st.lists(st.text(alphabet="ab[]. 12\n", max_size=30), max_size=8))
    def test_without_markers_keeps_every_other_line_in_order(self, lines: list[str]) -> None:
        text = "\n".join([*lines, omitted(2), *lines])
        kept = [line for line in text.split("\n") if not is_marker(line)]
        assert without_markers(text) == "\n".join(kept)
        assert without_markers(without_markers(text)) == without_markers(text)


class TestDistilledOutcomes:
    def test_a_distilled_traceback_fails_with_its_exception(self) -> None:
        for level in ("medium", "heavy"):
            distilled = distill_text(TRACEBACK, level).text
            assert "[... " in distilled  # it did leave lines out
            outcome = read_outcome(distilled, is_error=True, code=None, content=False)
            assert outcome.line == "ModuleNotFoundError: No module named 'sqlparse'"
            assert error_gist(distilled) == outcome.line

    def test_a_truncated_output_fails_with_its_error_not_the_marker(self) -> None:
        cut = f"<returncode>2</returncode>\n{marker('x' * 500, 0, 400, 120)}\nerror: no such table"
        outcome = read_outcome(cut, is_error=True, code=None, content=False)
        assert outcome.line == "error: no such table"
