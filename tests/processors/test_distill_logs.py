from __future__ import annotations

import re
from collections import Counter

from context_graph.testing import WordCounter
from processors.distill import distill_text
from processors.distill.logs import level_counts


def _log() -> list[str]:
    lines = []
    for i in range(300):
        if i in (40, 41, 200):
            level, message = "ERROR", f"payment {9000 + i} failed: CardDeclinedError code=51"
        elif i % 50 == 7:
            level, message = "WARN", f"slow query took {1200 + i} ms on orders_by_user"
        else:
            level, message = "INFO", f"served GET /api/orders/{i} in {i % 9} ms"
        lines.append(f"2024-05-20T10:{i // 60:02d}:{i % 60:02d}Z {level} {message}")
    return lines


def _distill(lines: list[str], level: str) -> str:
    return distill_text("\n".join(lines), level, count=WordCounter().count).text  # type: ignore[arg-type]


class TestLogs:
    def test_detected_and_counted_per_level(self) -> None:
        """The summary counts the lines of each level, as counted by hand."""
        lines = _log()
        expected = Counter(line.split()[1] for line in lines)
        out = _distill(lines, "medium")
        assert out.startswith("[distilled log, medium: ")
        summary = out.split("\n")[1]
        for level, count in expected.items():
            assert f"{level} {count:,}" in summary
        assert level_counts(lines) == expected

    def test_error_and_warning_lines_stay_with_context(self) -> None:
        """Every ERROR / WARN line stays, with the line before and after it."""
        lines = _log()
        for level in ("medium", "heavy"):
            out = _distill(lines, level)
            for index, line in enumerate(lines):
                if " ERROR " in line or " WARN " in line:
                    assert line in out
                    assert lines[index - 1] in out and lines[index + 1] in out

    def test_first_lines_and_tail_stay(self) -> None:
        """The first lines and the last ones stay (medium 5 / 5, heavy 2 / 3)."""
        lines = _log()
        medium, heavy = _distill(lines, "medium"), _distill(lines, "heavy")
        assert all(line in medium for line in lines[:5] + lines[-5:])
        assert all(line in heavy for line in lines[:2] + lines[-3:])

    def test_gaps_are_marked_and_heavy_is_shorter(self) -> None:
        """Left-out runs are marked with their size; heavy is shorter than medium."""
        lines = _log()
        medium, heavy = _distill(lines, "medium"), _distill(lines, "heavy")
        gaps = [
            int(n.replace(",", "")) for n in re.findall(r"\[\.\.\. ([\d,]+) lines? \.\.\.\]", heavy)
        ]
        kept = sum(1 for line in heavy.split("\n") if line in lines)
        assert kept + sum(gaps) == len(lines)
        assert len(heavy) < len(medium) < len("\n".join(lines))

    def test_repeated_errors_are_counted_not_repeated(self) -> None:
        """The same error message at many timestamps is kept once and counted."""
        lines = [f"10:00:{i:02d}.000 [error] connection refused: db:5432" for i in range(50)]
        lines += [f"10:01:{i:02d}.000 [info] retry {i}" for i in range(50)]
        out = _distill(lines, "heavy")
        assert out.count("connection refused: db:5432") <= 3
        assert "50 error/warning lines (1 distinct)" in out
