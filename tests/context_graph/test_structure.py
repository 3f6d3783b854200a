"""How `context_graph` is put together: no import cycle, tokens/ below graph/, read-only tables."""

from __future__ import annotations

import ast
from pathlib import Path
from types import MappingProxyType

import networkx as nx
import pytest

import context_graph
from context_graph.graph.call_ids import ID_RULES
from context_graph.graph.edges import EDGE_KINDS
from context_graph.tokens.calibration import FORMAT_OVERHEADS

ROOT = Path(context_graph.__file__).parent


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports_at_import_time(tree: ast.Module) -> list[ast.ImportFrom | ast.Import]:
    """The imports a module runs when it is imported (not under `TYPE_CHECKING`, not lazy)."""
    found: list[ast.ImportFrom | ast.Import] = []
    pending: list[ast.stmt] = list(tree.body)
    while pending:
        statement = pending.pop()
        if isinstance(statement, ast.Import | ast.ImportFrom):
            found.append(statement)
        elif isinstance(statement, ast.If):
            if "TYPE_CHECKING" not in ast.unparse(statement.test):
                pending.extend([*statement.body, *statement.orelse])
        elif isinstance(statement, ast.Try):
            pending.extend([*statement.body, *statement.orelse, *statement.finalbody])
    return found


def _import_graph() -> nx.DiGraph:
    """Module -> every module of the package that importing it imports first.

    Importing `a.b.c` runs `a/__init__` and `a/b/__init__` first; a module's own parent
    packages are left out, since Python has begun them before the module runs.
    """
    modules = {_module_name(path): path for path in ROOT.rglob("*.py")}
    graph = nx.DiGraph()
    for name, path in modules.items():
        graph.add_node(name)
        for statement in _imports_at_import_time(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(statement, ast.Import):
                targets = [alias.name for alias in statement.names]
            elif statement.module is None or statement.level:
                continue
            else:
                targets = [statement.module]
                targets += [f"{statement.module}.{alias.name}" for alias in statement.names]
            for target in targets:
                parts = target.split(".")
                for end in range(1, len(parts) + 1):
                    imported = ".".join(parts[:end])
                    if imported in modules and not name.startswith(imported + "."):
                        if imported != name:
                            graph.add_edge(name, imported)
    return graph


class TestImports:
    def test_no_module_level_import_cycle(self) -> None:
        """No module of `context_graph` imports, through others, a module that imports it."""
        cycles = [
            sorted(c) for c in nx.strongly_connected_components(_import_graph()) if len(c) > 1
        ]
        assert cycles == []

    def test_tokens_import_nothing_of_the_graph(self) -> None:
        """Token counting sits below the graph: `graph/` imports `tokens/`, never the reverse."""
        graph = _import_graph()
        tokens = [n for n in graph if n.startswith("context_graph.tokens")]
        reached = set().union(*(nx.descendants(graph, n) for n in tokens))
        assert not {n for n in reached if n.startswith("context_graph.graph")}

    def test_the_checker_sees_the_imports(self) -> None:
        """The import graph is real: `graph/` does import `tokens/`, so a way back would show."""
        graph = _import_graph()
        assert graph.has_edge("context_graph.graph.context_graph", "context_graph.tokens.counting")


class TestTables:
    @pytest.mark.parametrize("table", [ID_RULES, FORMAT_OVERHEADS], ids=["ID_RULES", "OVERHEADS"])
    def test_mappings_are_read_only(self, table: object) -> None:
        """A public table cannot be changed by whoever imports it."""
        assert isinstance(table, MappingProxyType)
        with pytest.raises(TypeError):
            table["openai"] = None  # type: ignore[index]

    def test_edge_kinds_are_a_tuple(self) -> None:
        """The edge kinds are an immutable sequence, in their documented order."""
        assert EDGE_KINDS == (
            "follows",
            "issued_by",
            "answers",
            "derived_from",
            "supersedes",
            "spawned_by",
        )
