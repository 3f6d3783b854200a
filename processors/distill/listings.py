"""Directory listings and grep output: counts, a summary by kind, the first entries.

A listing (`ls`, `ls -l`, `ls -R`, `find`, `tree`, a glob's paths) becomes a summary line
(entries, directories, counts by extension, the biggest subdirectories under the common
prefix) and its first entries (medium 20, heavy 5, more while the budget allows): bare
names (`ls`, `ls -l`, `tree`) as compact `name, dir/, ...` lines, one per `ls -R`
section, with each file's size at medium (`ls -l`) but no permissions or dates; paths
(`find`, a glob) line by line. Grep output becomes its matches per file, then the first
lines of each file (medium 3, heavy 1) while the budget allows, then the hits richest in
identifiers not kept yet. Lines that are neither (a tool's own error) always stay.
"""

from __future__ import annotations

import os.path
import re
from collections import Counter
from collections.abc import Sequence

from processors.distill.common import (
    Doc,
    at_least,
    fill_by_entities,
    is_error_line,
    plural,
    render_lines,
    scan_range,
)

__all__ = ["distill_grep", "distill_listing", "grep_match", "looks_like_grep", "looks_like_listing"]

_LONG = re.compile(
    r"^[dlcbps-][rwxsStT-]{9}[@+.]?\s+\d+\s+\S+\s+\S+\s+(?P<size>[\d.,]+[KMGTP]?)\s+"
    r"(?:\w{3}\s+\d{1,2}|\d{4}-\d{2}-\d{2})\s+(?:\d{1,2}:\d{2}|\d{4})\s+(?P<name>.+)$"
)
_TREE = re.compile(r"^[│├└|`\s]*(?:├──|└──|\|--|`--)\s*(.+)$")
_TOTAL = re.compile(r"^total \d+$|^Found \d+ files?$|^\d+ director(?:y|ies), \d+ files?$")
_NAME = re.compile(r"^[\w./~@+#%,=\[\]{}()-]*[\w./~@+#%=\]})*-]$")
_COLUMNS = re.compile(r"\t+ *| {2,}")
_GREP = re.compile(r"^(?P<path>[^\s:][^:\n]*?)(?:(?P<sep>[:-])(?P<line>\d+))?[:-](?P<text>.*)$")
_NUMBERED = re.compile(r"^\d+[:-](?!\d)(.*)$")
_FIRST = {"medium": 20, "heavy": 5}
_PER_FILE = {"medium": 3, "heavy": 1}


def _pathish(token: str) -> bool:
    return "/" in token or bool(re.search(r"\.\w{1,8}$", token))


def _entries(line: str) -> list[str] | None:
    """The names a listing line shows, or None when the line is not a listing line."""
    stripped = line.strip()
    long = _LONG.match(stripped)
    if long:
        return [long.group("name")]
    tree = _TREE.match(line)
    if tree:
        return [tree.group(1).strip()]
    if not stripped or (stripped.endswith(":") and " " not in stripped):
        return None  # blank, or an `ls -R` section header
    names = _COLUMNS.split(stripped)
    if all(" " not in name and _NAME.match(name) for name in names):
        return names
    return None


def _is_section(line: str) -> bool:
    stripped = line.strip()
    return stripped.endswith(":") and " " not in stripped and len(stripped) > 1


def looks_like_listing(lines: Sequence[str], *, hint: str | None = None) -> bool:
    """Whether the lines are a listing: mostly entries, a good share of them path-like."""
    filled = [line for line in lines[:2_000] if line.strip() and not _TOTAL.match(line.strip())]
    if len(filled) < 3 and hint not in {"glob", "ls", "find"}:
        return False
    headers = sum(1 for line in filled if _is_section(line))
    needed = 0.85 * len(filled)
    shown: list[list[str]] = []
    for index, line in enumerate(filled):
        names = _entries(line)
        if names is not None:
            shown.append(names)
        elif len(shown) + headers + len(filled) - index - 1 < needed:
            return False  # even if every line left shows entries
    entries = [name for names in shown for name in names]
    if not entries or len(shown) + headers < needed:
        return False
    return sum(1 for e in entries if _pathish(e)) >= 0.4 * len(entries) or hint == "glob"


def grep_match(line: str) -> tuple[str, str] | None:
    """`(path, text)` when `line` is a grep hit (`path:12:text`, `path:text`, `12:text`).

    The path is empty for the hits of a single file (`grep -n pattern file`).
    """
    numbered = _NUMBERED.match(line)
    if numbered:
        return "", numbered.group(1)
    match = _GREP.match(line)
    if not match or not _pathish(match.group("path")) or " " in match.group("path"):
        return None
    if match.group("sep") is None and line[len(match.group("path"))] == "-":
        return None  # `path-text` is only a context line when it has a line number
    return match.group("path"), match.group("text")


def looks_like_grep(lines: Sequence[str], *, hint: str | None = None) -> bool:
    """Whether most non-blank lines are grep hits (`--` separators aside)."""
    filled = [line for line in lines[:2_000] if line.strip() and line.strip() != "--"]
    if len(filled) < 2:
        return False
    return at_least(filled, grep_match, (0.5 if hint == "grep" else 0.8) * len(filled))


def _summary_listing(entries: Sequence[tuple[str, bool]]) -> str:
    names = [name for name, _ in entries]
    dirs = sum(1 for name, is_dir in entries if is_dir)
    exts = Counter(
        os.path.splitext(name.rstrip("/"))[1] or "(none)" for name, is_dir in entries if not is_dir
    )
    parts = [plural(len(entries), "entry", "entries")]
    if dirs:
        parts.append(plural(dirs, "directory", "directories"))
    if exts:
        parts.append("by extension: " + ", ".join(f"{e} {n:,}" for e, n in exts.most_common(8)))
    pathed = [n.split("/") for n in names if "/" in n.strip("/")]
    if len(pathed) >= 2:
        common = _common_dirs(pathed)
        if common:
            parts.append(f"under {'/'.join(common)}/")
        subdirs = Counter(p[len(common)] + "/" for p in pathed if len(p) > len(common) + 1)
        if len(subdirs) > 1:
            parts.append("most in: " + ", ".join(f"{d} {n:,}" for d, n in subdirs.most_common(6)))
    return f"[listing: {'; '.join(parts)}]"


def _common_dirs(paths: Sequence[list[str]]) -> list[str]:
    """The leading directories every path shares (never a path's own name)."""
    common: list[str] = []
    for parts in zip(*(p[:-1] for p in paths), strict=False):
        if len(set(parts)) != 1:
            break
        common.append(parts[0])
    return common if any(common) else []


def _head_fill(doc: Doc, must: set[int], order: Sequence[int], budget: int) -> set[int]:
    kept = set(must)
    spent = doc.cost(kept)
    for index in order:
        cost = doc.costs.of(doc.lines[index])
        if spent + cost > budget:
            break
        kept.add(index)
        spent += cost
    return kept


def _compact(doc: Doc, rows: Sequence[tuple[int, str, bool]], budget: int) -> list[str]:
    """Bare names as `name, dir/, ...` lines, one per `ls -R` section, while they fit."""
    out: list[str] = []
    spent = 0
    shown = 0
    line = ""
    for index, name, is_dir in rows:
        section = doc.plain[index] if name == "" else None
        if section is not None:
            if line:
                out.append(line)
            line, spent = section, spent + doc.costs.of(section)
            continue
        item = name if not is_dir or name.endswith("/") else f"{name}/"
        size = _LONG.match(doc.plain[index].strip())
        if size and not is_dir and not doc.heavy:
            item = f"{item} ({size.group('size')})"
        cost = doc.costs.of(item) + 1
        if shown >= _FIRST[doc.level] and spent + cost > budget:
            rest = sum(1 for _, n, _ in rows if n) - shown
            out.append(f"{line}, ..." if line else "...")
            out.append(f"[... {plural(rest, 'more entry', 'more entries')}]")
            return out
        line = f"{line}{', ' if line and not line.endswith(':') else ' ' if line else ''}{item}"
        spent += cost
        shown += 1
    if line:
        out.append(line)
    return out


def distill_listing(doc: Doc) -> str:
    """Distill a directory listing."""
    rows: list[tuple[int, str, bool]] = []
    other: list[int] = []
    for index, line in enumerate(doc.plain):
        stripped = line.strip()
        names = _entries(line)
        if names is not None:
            is_dir = stripped.startswith("d") and _LONG.match(stripped) is not None
            rows.extend(
                (index, name, is_dir or name.endswith("/"))
                for name in names
                if name not in {".", "..", "./", "../"}
            )
        elif _is_section(line):
            rows.append((index, "", True))
        elif stripped and not _TOTAL.match(stripped):
            other.append(index)
    # a few other lines (the command, the working directory) stay; many, only errors
    must = set(other) if len(other) <= 5 else {i for i in other if is_error_line(doc.plain[i])}
    entries = [(name, is_dir) for _, name, is_dir in rows if name]
    summary = _summary_listing(entries)
    budget = doc.budget - doc.costs.of(summary) - doc.cost(must)
    if sum(1 for name, _ in entries if "/" in name.strip("/")) < len(entries) / 2:
        others = [doc.lines[i] for i in sorted(must)]
        return "\n".join([summary, *others, *_compact(doc, rows, budget)])
    order = list(dict.fromkeys(index for index, name, _ in rows if name))
    first = set(order[: _FIRST[doc.level]])
    kept = _head_fill(
        doc, must | first, order[_FIRST[doc.level] :], doc.budget - doc.costs.of(summary)
    )
    return f"{summary}\n{render_lines(doc.lines, kept)}"


def _files(doc: Doc) -> tuple[dict[str, list[int]], set[int]]:
    by_file: dict[str, list[int]] = {}
    other: set[int] = set()
    for index, line in enumerate(doc.plain):
        hit = grep_match(line)
        if hit:
            by_file.setdefault(hit[0], []).append(index)
        elif line.strip() and line.strip() != "--":
            other.add(index)
    return by_file, other


def _summary_grep(doc: Doc, by_file: dict[str, list[int]], budget: int) -> str:
    total = sum(len(rows) for rows in by_file.values())
    if list(by_file) == [""]:
        return f"[grep: {plural(total, 'line')}]"
    head = f"[grep: {plural(total, 'match', 'matches')} in "
    head += f"{plural(len(by_file), 'file')}: "
    items: list[str] = []
    spent = doc.costs.of(head)
    for path, rows in by_file.items():
        item = f"{path} {len(rows):,}"
        if spent + doc.costs.of(item) > budget and items:
            items.append(f"+{len(by_file) - len(items):,} more files")
            break
        items.append(item)
        spent += doc.costs.of(item)
    return head + ", ".join(items) + "]"


def distill_grep(doc: Doc) -> str:
    """Distill grep output."""
    by_file, other = _files(doc)
    summary = _summary_grep(doc, by_file, doc.budget)
    must = {i for i in other if is_error_line(doc.plain[i])}
    first = [rows[: _PER_FILE[doc.level]] for rows in by_file.values()]
    order = [row for rows in first for row in rows]
    budget = doc.budget - doc.costs.of(summary)
    kept = _head_fill(doc, must | set(order[:1]), order[1:], budget)
    kept = fill_by_entities(doc, kept, budget, candidates=scan_range(len(doc.lines)))
    return f"{summary}\n{render_lines(doc.lines, kept)}"
