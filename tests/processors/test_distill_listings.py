from __future__ import annotations

import os.path
from collections import Counter

from context_graph.testing import WordCounter
from processors.distill import distill_text
from processors.distill.listings import grep_match

NAMES = [f"module_{i}.py" for i in range(60)] + [f"notes_{i}.md" for i in range(10)]
DIRS = ["docs", "src", "tests"]


def _ls_long() -> str:
    rows = ["total 280"]
    rows += [f"drwxr-xr-x  4 root root  4096 Oct 24  2024 {d}" for d in DIRS]
    rows += [f"-rw-r--r--  1 root root {1000 + i:5d} Oct 24  2024 {n}" for i, n in enumerate(NAMES)]
    return "\n".join(rows)


def _find() -> list[str]:
    return [f"./pkg/{'core' if i % 3 else 'io'}/{name}" for i, name in enumerate(NAMES)]


def _distill(text: str, level: str, **hints: str) -> str:
    return distill_text(text, level, count=WordCounter().count, **hints).text  # type: ignore[arg-type]


class TestListing:
    def test_summary_counts_entries_directories_and_extensions(self) -> None:
        """The summary's counts match a count made by hand."""
        out = _distill(_ls_long(), "heavy").split("\n")
        assert out[0].startswith("[distilled directory listing, heavy: ")
        exts = Counter(os.path.splitext(n)[1] for n in NAMES)
        assert out[1].startswith(
            f"[listing: {len(NAMES) + len(DIRS)} entries; {len(DIRS)} directories; "
        )
        for ext, count in exts.items():
            assert f"{ext} {count}" in out[1]

    def test_long_listing_becomes_compact_names(self) -> None:
        """`ls -l` rows become `name, dir/` items: sizes at medium, no permissions or dates."""
        medium, heavy = _distill(_ls_long(), "medium"), _distill(_ls_long(), "heavy")
        assert "docs/, src/, tests/, module_0.py (1000), module_1.py (1001)" in medium
        assert "docs/, src/, tests/, module_0.py, module_1.py" in heavy
        assert "rw-r--r--" not in medium and "Oct 24" not in medium
        assert "more entries]" in heavy

    def test_paths_stay_line_by_line_with_the_first_ones_first(self) -> None:
        """`find` output keeps its first paths verbatim and counts the rest."""
        paths = _find()
        out = _distill("\n".join(paths), "heavy")
        kept = [line for line in out.split("\n") if line in paths]
        assert kept == paths[: len(kept)] and len(kept) >= 5
        dirs = Counter(path.split("/")[2] for path in paths)
        assert f"most in: core/ {dirs['core']}, io/ {dirs['io']}" in out
        assert "under ./pkg/" in out

    def test_tool_errors_stay(self) -> None:
        """A tool's own error line in a listing is kept."""
        text = "\n".join([*_find(), "find: './secret': Permission denied"])
        for level in ("medium", "heavy"):
            assert "find: './secret': Permission denied" in _distill(text, level)


def _grep() -> list[str]:
    rows = []
    for f in range(6):
        rows += [
            f"app/views/v{f}.py:{10 + 7 * i}:    raise PermissionDenied(user_{i}, 'no access')"
            for i in range(8 * f + 10)
        ]
    return rows


class TestGrep:
    def test_matches_per_file(self) -> None:
        """The summary gives each file's number of matches, as counted by hand."""
        rows = _grep()
        counts = Counter(row.split(":", 1)[0] for row in rows)
        out = _distill("\n".join(rows), "heavy").split("\n")
        assert out[0].startswith("[distilled grep output, heavy: ")
        assert out[1].startswith(f"[grep: {len(rows)} matches in {len(counts)} files: ")
        for path, count in counts.items():
            assert f"{path} {count}" in out[1]

    def test_first_line_of_each_file_first(self) -> None:
        """Each file's first hit is kept before any second hit."""
        rows = _grep()
        out = _distill("\n".join(rows), "medium")
        firsts = [next(r for r in rows if r.startswith(f"app/views/v{f}.py:")) for f in range(6)]
        assert all(row in out for row in firsts)

    def test_single_file_hits(self) -> None:
        """`grep -n` over one file (no path) is grep output too."""
        assert grep_match("132:        self.proxy = False") == ("", "        self.proxy = False")
        assert grep_match("133-        # context line") == ("", "        # context line")
        assert grep_match("21:41:05.928 [info] not grep") is None
        rows = [f"{100 + 3 * i}:    proxy_{i} = True" for i in range(40)]
        out = _distill("\n".join(rows), "heavy").split("\n")
        assert out[1] == "[grep: 40 lines]"
        assert rows[0] in out

    def test_context_lines_and_separators(self) -> None:
        """`path-12-text` context lines and `--` separators are read as grep output."""
        assert grep_match("src/a.py-12-    context") == ("src/a.py", "    context")
        assert grep_match("src/a.py-context") is None
