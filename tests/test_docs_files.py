"""The docs name only files that exist.

A page that names a module which was renamed or never written sends a reader looking for
nothing (docs/architecture.md named a `report/cost.py`, docs/rendering.md a `_fit.py`).
Two checks: every backticked `*.py` path of README.md and docs/ that points into the
repository exists, and every module named in the layout tree of docs/architecture.md
exists in one of the three packages.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("context_graph", "processors", "orchestrator")
#: Top folders of the repository: a backticked path that starts with one points into it.
TOP = (*PACKAGES, "tests", "benchmarks", "docs")
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])

_BACKTICKED = re.compile(r"`([\w./-]+\.py)`")
_TREE_MODULE = re.compile(r"(?<![\w*])([a-z_][\w]*\.py)\b")


def _repo_modules() -> list[str]:
    return [
        str(p.relative_to(ROOT))
        for top in TOP
        if (ROOT / top).is_dir()
        for p in (ROOT / top).rglob("*.py")
    ]


def _package_folders() -> set[str]:
    """The sub-folder names of the packages (`render`, `report`, ...): a path may start there."""
    return {d.name for top in PACKAGES for d in (ROOT / top).rglob("*") if d.is_dir()} - {
        "__pycache__"
    }


def _layout_tree() -> str:
    page = (ROOT / "docs" / "architecture.md").read_text()
    start = page.index("## Layout")
    fence = page.index("```", start)
    return page[fence + 3 : page.index("```", fence + 3)]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_backticked_repository_paths_exist(page: Path) -> None:
    """A backticked `*.py` path into the repository or a package's sub-folder names a file."""
    modules = _repo_modules()
    folders = _package_folders()
    missing = []
    for ref in _BACKTICKED.findall(page.read_text()):
        if ref.split("/", 1)[0] not in (*TOP, *folders):
            continue
        if not any(m == ref or m.endswith("/" + ref) for m in modules):
            missing.append(ref)
    assert not missing, f"{page.relative_to(ROOT)} names files that do not exist: {missing}"


def test_the_layout_tree_names_only_existing_modules() -> None:
    """Every module named in docs/architecture.md's layout tree is a file of the packages."""
    names = {m.rsplit("/", 1)[-1] for m in _repo_modules() if m.split("/", 1)[0] in PACKAGES}
    named = set(_TREE_MODULE.findall(_layout_tree()))
    assert named, "the layout tree names no module: has its fence moved?"
    assert not named - names, (
        f"the layout tree names modules that do not exist: {sorted(named - names)}"
    )
