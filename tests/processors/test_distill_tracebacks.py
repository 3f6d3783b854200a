from __future__ import annotations

from context_graph.testing import WordCounter
from processors.distill import distill_text
from processors.distill.tracebacks import find_tracebacks, is_library_path

FRAMES = [
    ("/testbed/app/cli.py", 21, "main", "run(settings)"),
    ("/testbed/app/runner.py", 88, "run", "return execute(job)"),
    (
        "/opt/conda/lib/python3.11/importlib/__init__.py",
        126,
        "import_module",
        "return _bootstrap._gcd_import(name)",
    ),
    ("<frozen importlib._bootstrap>", 1204, "_gcd_import", None),
    ("/testbed/app/jobs.py", 40, "execute", "return handler(job.payload)"),
    (
        "/usr/lib/python3/dist-packages/yaml/__init__.py",
        81,
        "load",
        "return loader.get_single_data()",
    ),
    (
        "/venv/lib/python3.11/site-packages/yaml/constructor.py",
        51,
        "get_single_data",
        "node = self.get_single_node()",
    ),
]


def _traceback(frames: list[tuple[str, int, str, str | None]], error: str) -> list[str]:
    lines = ["Traceback (most recent call last):"]
    for path, line, func, code in frames:
        lines.append(f'  File "{path}", line {line}, in {func}')
        if code:
            lines.append(f"    {code}")
            lines.append("    " + "^" * len(code))
    lines.append(error)
    return lines


def _distill(lines: list[str], level: str) -> str:
    return distill_text("\n".join(lines), level, count=WordCounter().count).text  # type: ignore[arg-type]


class TestTracebacks:
    def test_exception_project_frames_and_last_frame(self) -> None:
        """The exception, project frames and the last frame stay; other library frames go."""
        lines = _traceback(FRAMES, "yaml.scanner.ScannerError: mapping values are not allowed here")
        out = _distill(lines, "medium")
        assert out.startswith("[distilled traceback, medium: ")
        assert "yaml.scanner.ScannerError: mapping values are not allowed here" in out
        for path, line, func, _ in FRAMES:
            frame = f'  File "{path}", line {line}, in {func}'
            expected = not is_library_path(path) or path == FRAMES[-1][0]
            assert (frame in out) == expected, frame
        assert "^^^" not in out

    def test_heavy_keeps_first_and_last_project_frames(self) -> None:
        """Heavy keeps the first and last project frames and the code of the last frame only."""
        lines = _traceback(FRAMES, "KeyError: 'payload'")
        out = _distill(lines, "heavy")
        assert 'File "/testbed/app/cli.py", line 21' in out
        assert 'File "/testbed/app/jobs.py", line 40' in out
        assert 'File "/testbed/app/runner.py", line 88' not in out
        assert "node = self.get_single_node()" in out
        assert "run(settings)" not in out
        assert "KeyError: 'payload'" in out

    def test_chained_tracebacks_keep_both_exceptions(self) -> None:
        """Both exceptions of a chain and the sentence joining them stay."""
        first = _traceback(
            FRAMES[:2], "sqlite3.OperationalError: no such table: django_content_type"
        )
        second = _traceback(
            FRAMES[4:], "django.db.utils.OperationalError: no such table: django_content_type"
        )
        joint = "The above exception was the direct cause of the following exception:"
        lines = [*first, "", joint, "", *second]
        assert len(find_tracebacks(lines)) == 2
        out = _distill(lines, "heavy")
        assert "sqlite3.OperationalError: no such table: django_content_type" in out
        assert "django.db.utils.OperationalError: no such table: django_content_type" in out
        assert joint in out

    def test_javascript_stack_keeps_project_frames(self) -> None:
        """`at ...` frames inside node_modules or node internals go, project frames stay."""
        lines = [
            "TypeError: Cannot read properties of undefined (reading 'id')",
            "    at render (/app/src/components/List.js:14:22)",
            "    at renderWithHooks (/app/node_modules/react-dom/cjs/react-dom.js:14985:18)",
            "    at mountComponent (/app/node_modules/react-dom/cjs/react-dom.js:17811:13)",
            "    at processTicksAndRejections (node:internal/process/task_queues:95:5)",
            "    at main (/app/src/index.js:3:1)",
        ] * 3
        out = _distill(lines, "heavy")
        assert "TypeError: Cannot read properties of undefined (reading 'id')" in out
        assert "at render (/app/src/components/List.js:14:22)" in out
        assert "at renderWithHooks" not in out

    def test_lines_around_keep_their_errors(self) -> None:
        """Error lines outside the traceback stay too."""
        lines = [
            "Creating tables...",
            "WARNING: pip is out of date",
            *[f"step {i}" for i in range(30)],
        ]
        lines += _traceback(FRAMES[:2], "ValueError: bad value 42")
        out = _distill(lines, "heavy")
        assert "WARNING: pip is out of date" in out
        assert "ValueError: bad value 42" in out
