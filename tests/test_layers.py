"""The import direction `orchestrator -> processors -> context_graph` holds, never back."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ["context_graph", "processors", "orchestrator"]  # lowest first


def _imported_packages(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "import_module":
            arg = node.args[0] if node.args else None
            if isinstance(arg, ast.JoinedStr | ast.Constant):
                text = ast.unparse(arg).strip("f'\"")
                found.add(text.split(".")[0])
    return found


@pytest.mark.parametrize("layer", LAYERS)
def test_layer_imports_only_itself_and_lower_layers(layer: str) -> None:
    """No module of a layer imports a layer above it."""
    higher = set(LAYERS[LAYERS.index(layer) + 1 :])
    offenders = []
    for path in sorted((ROOT / layer).rglob("*.py")):
        bad = _imported_packages(path) & higher
        if bad:
            offenders.append(f"{path.relative_to(ROOT)} imports {sorted(bad)}")
    assert offenders == []


def test_checker_sees_a_violation(tmp_path: Path) -> None:
    """The scan recognizes upward imports in every spelling the code base uses."""
    module = tmp_path / "m.py"
    module.write_text(
        "import orchestrator.cli\nfrom processors import x\n"
        "importlib.import_module(f'orchestrator.{name}')\n",
        encoding="utf-8",
    )
    assert {"orchestrator", "processors"} <= _imported_packages(module)
