"""`python -m benchmarks.format_spread`: where each wire format's name is spoken.

Issue 32 asks for one home per wire format (`context_graph/formats/<folder>/`). This
counts, for each format name, the library files (`context_graph`, `processors`,
`orchestrator`) outside that home and the registry that still mention it, two ways:

- `keys`: the name as a Python string constant used as the format's name, the way code
  picks a format; a namesake (a vendor's name typed `...Vendor`, a recording's word in
  `Names(...)`) is not one, by the rule `benchmarks.house` states. The target, held by
  the tests, is none: elsewhere a format is named by its constant (`RESPONSES_FORMAT`).
- `words`: the name as a word anywhere in the file, comments and docstrings included
  (`openai_responses` is neither `openai` nor `responses`; case is ignored, so prose
  about "OpenAI" counts for chat's name).

    python -m benchmarks.format_spread              # the counts
    python -m benchmarks.format_spread --files      # and the files, per format
    python -m benchmarks.format_spread --root DIR   # another checkout (e.g. an old commit)
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from benchmarks.house import REGISTRY, format_homes, format_literals

__all__ = ["LIBRARY", "Spread", "main", "spread"]

ROOT = Path(__file__).resolve().parents[1]

#: The library packages counted (tests, docs and benchmarks may name formats freely).
LIBRARY: tuple[str, ...] = ("context_graph", "processors", "orchestrator")


@dataclass(frozen=True)
class Spread:
    """The files outside a format's home and the registry that name it."""

    name: str
    keys: tuple[str, ...]
    """Files with the name as a string constant naming the format (namesakes left out)."""
    words: tuple[str, ...]
    """Files with the name as a word anywhere."""


def _library_files(root: Path) -> Iterator[tuple[str, str]]:
    for package in LIBRARY:
        for path in sorted((root / package).rglob("*.py")):
            yield path.relative_to(root).as_posix(), path.read_text(encoding="utf-8")


def spread(root: Path = ROOT) -> list[Spread]:
    """For each format, the library files outside its home and the registry naming it."""
    homes = format_homes()
    files = [
        (path, text, format_literals(ast.parse(text), list(homes))[0])
        for path, text in _library_files(root)
    ]
    found = []
    for name, home in homes.items():
        word = re.compile(rf"(?<![A-Za-z0-9_]){name}(?![A-Za-z0-9_])", re.IGNORECASE)
        outside = [(path, text, keyed) for path, text, keyed in files if not _home(path, home)]
        keys = tuple(path for path, _, keyed in outside if name in keyed)
        words = tuple(path for path, text, _ in outside if word.search(text))
        found.append(Spread(name, keys, words))
    return found


def _home(path: str, home: str) -> bool:
    return path.startswith(home) or path in REGISTRY


def main(argv: Sequence[str] | None = None) -> int:
    """Print the counts (and with `--files` the files); 1 if a format is keyed outside its home."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.format_spread")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout to count")
    parser.add_argument("--files", action="store_true", help="list the files too")
    args = parser.parse_args(argv)
    found = spread(args.root)
    for item in found:
        print(f"{item.name:10} keys {len(item.keys):3}  words {len(item.words):3}")
        if args.files:
            for path in item.keys:
                print(f"    {path}")
    return 1 if any(item.keys for item in found) else 0


if __name__ == "__main__":
    sys.exit(main())
