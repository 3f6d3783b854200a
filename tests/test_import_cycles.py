"""No module of a package imports itself back through other modules of the package.

The graph has an edge `a -> b` when module `a` imports module `b` at module level:
`import b`, `from b import name`, and `from pkg import b` when `pkg.b` is a module (a
package's `__init__` importing its submodules counts too). Imports under
`if TYPE_CHECKING:` and inside functions run later or never, so the first check leaves
them out; the second counts them as well, since a circle closed only for the type checker
still ties the modules into one idea (issue 16: `Overlay` living in `buffer.py`).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("context_graph", "processors", "orchestrator")

Graph = dict[str, set[str]]

#: Circles that exist only through imports deferred to type checking. There were three at
#: the start of issue 16 (b7b30dd); none is left, and the check below keeps it so.
KNOWN_DEFERRED_CYCLES: frozenset[frozenset[str]] = frozenset()


def _module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(test: ast.expr) -> bool:
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


def _module_level(body: Sequence[ast.stmt]) -> Iterator[ast.Import | ast.ImportFrom]:
    """The imports that run when the module is imported (class bodies run too)."""
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If):
            if not _is_type_checking(node.test):
                yield from _module_level(node.body)
            yield from _module_level(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody):
                yield from _module_level(block)
            for handler in node.handlers:
                yield from _module_level(handler.body)
        elif isinstance(node, ast.With | ast.ClassDef):
            yield from _module_level(node.body)


def _everywhere(body: Sequence[ast.stmt]) -> Iterator[ast.Import | ast.ImportFrom]:
    for statement in body:
        for node in ast.walk(statement):
            if isinstance(node, ast.Import | ast.ImportFrom):
                yield node


def import_graph(root: Path, packages: Sequence[str], *, deferred: bool = False) -> Graph:
    """Module -> the modules of `packages` it imports (at module level, or anywhere)."""
    paths = {
        _module_name(root, path): path
        for package in packages
        for path in sorted((root / package).rglob("*.py"))
    }
    graph: Graph = {}
    for name, path in paths.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        body = ast.parse(path.read_text(encoding="utf-8")).body
        imported: set[str] = set()
        for node in (_everywhere if deferred else _module_level)(body):
            if isinstance(node, ast.Import):
                imported.update(alias.name for alias in node.names)
                continue
            base = node.module or ""
            if node.level:  # relative: `from . import x`, `from ..y import z`
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                imported.add(submodule if submodule in paths else base)
        graph[name] = {target for target in imported if target in paths and target != name}
    return graph


def cycles(graph: Graph) -> set[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: set[frozenset[str]] = set()
    for start in sorted(graph):
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, targets = work[-1]
            target = next(targets, None)
            if target is not None:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph[target]))))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.add(frozenset(component))
    return found


def _shown(found: set[frozenset[str]]) -> list[list[str]]:
    return sorted(sorted(component) for component in found)


class TestNoImportCycles:
    def test_no_module_level_cycle(self) -> None:
        """No package has a circle of imports that run when its modules are imported."""
        assert _shown(cycles(import_graph(ROOT, PACKAGES))) == []

    def test_deferred_cycles_are_only_the_known_ones(self) -> None:
        """Counting `TYPE_CHECKING` and in-function imports, only the listed circles remain."""
        found = cycles(import_graph(ROOT, PACKAGES, deferred=True))
        assert _shown(found) == _shown(set(KNOWN_DEFERRED_CYCLES))

    def test_every_package_is_scanned(self) -> None:
        """The graph holds each package and its subsystem modules, with their edges."""
        graph = import_graph(ROOT, PACKAGES)
        assert set(PACKAGES) <= set(graph)
        assert "orchestrator.working.buffer" in graph["orchestrator.working"]
        assert "processors.base" in graph["processors.mask"]


class TestTheChecker:
    @pytest.fixture(name="package")
    def package_fixture(self, tmp_path: Path) -> Path:
        """A small package `pkg`: `a -> b -> c -> a` at module level, `d` alone."""
        package = tmp_path / "pkg"
        (package / "sub").mkdir(parents=True)
        (package / "__init__.py").write_text("from pkg import a\n", encoding="utf-8")
        (package / "a.py").write_text("from pkg.sub import b\n", encoding="utf-8")
        (package / "sub" / "__init__.py").write_text("", encoding="utf-8")
        (package / "sub" / "b.py").write_text("from ..c import thing\n", encoding="utf-8")
        (package / "c.py").write_text(
            "import pkg.a\nthing = 1\n\ndef later():\n    from pkg import d\n",
            encoding="utf-8",
        )
        (package / "d.py").write_text(
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import c\n",
            encoding="utf-8",
        )
        return tmp_path

    def test_a_cycle_is_seen(self, package: Path) -> None:
        """A circle through `from pkg.sub import b`, a relative import and `import pkg.a`."""
        assert _shown(cycles(import_graph(package, ["pkg"]))) == [["pkg.a", "pkg.c", "pkg.sub.b"]]

    def test_deferred_imports_are_left_out_then_counted(self, package: Path) -> None:
        """`c -> d` (in a function) and `d -> c` (type checking) close a circle only if counted."""
        graph = import_graph(package, ["pkg"])
        assert graph["pkg.c"] == {"pkg.a"}
        assert graph["pkg.d"] == set()
        deferred = cycles(import_graph(package, ["pkg"], deferred=True))
        assert _shown(deferred) == [["pkg.a", "pkg.c", "pkg.d", "pkg.sub.b"]]

    def test_an_init_importing_its_submodule_is_an_edge(self, package: Path) -> None:
        """`from pkg import a` in `pkg/__init__.py` is an edge to the module `pkg.a`."""
        assert import_graph(package, ["pkg"])["pkg"] == {"pkg.a"}

    def test_no_cycle_when_the_circle_is_broken(self, package: Path) -> None:
        """With `c` no longer importing `a`, nothing is reported."""
        (package / "pkg" / "c.py").write_text("thing = 1\n", encoding="utf-8")
        assert cycles(import_graph(package, ["pkg"])) == set()
