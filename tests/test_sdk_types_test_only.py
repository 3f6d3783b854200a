"""The SDK request-type checks are the tests' own: out of the wheel, imported by no library code.

`benchmarks.sdk_types` walks a body against the SDKs' TypedDicts with `typing_extensions`,
which the library itself never needs, so the runtime dependencies do not name it.
"""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("context_graph", "processors", "orchestrator")
TEST_ONLY = ("benchmarks", "typing_extensions")


def _project() -> dict[str, Any]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _imports(path: Path) -> set[str]:
    """The top-level names `path` imports anywhere (in functions and TYPE_CHECKING too)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names.add(node.module.split(".")[0])
    return names


def _names(requirements: list[str]) -> set[str]:
    return {re.split(r"[<>=!~\[; ]", r, maxsplit=1)[0].lower() for r in requirements}


class TestSdkTypesAreTestOnly:
    def test_no_library_module_imports_them(self) -> None:
        """No module the wheel ships imports `benchmarks` or `typing_extensions`."""
        found = sorted(
            f"{path.relative_to(ROOT)}: {name}"
            for package in PACKAGES
            for path in (ROOT / package).rglob("*.py")
            for name in _imports(path) & set(TEST_ONLY)
        )
        assert found == []

    def test_the_wheel_ships_only_the_library(self) -> None:
        """The wheel's packages are the three library packages; benchmarks/ is not one."""
        wheel = _project()["tool"]["hatch"]["build"]["targets"]["wheel"]
        assert sorted(wheel["packages"]) == sorted(PACKAGES)

    def test_typing_extensions_is_a_test_dependency_only(self) -> None:
        """`typing-extensions` is declared for the tests, not for the library's users."""
        project = _project()["project"]
        assert "typing-extensions" not in _names(project["dependencies"])
        test_extra = project["optional-dependencies"]["test"]
        assert "typing-extensions" in _names(test_extra)

    def test_the_checker_module_is_the_one_that_needs_it(self) -> None:
        """`benchmarks/sdk_types.py` is where the SDK checks live, and it imports it."""
        assert "typing_extensions" in _imports(ROOT / "benchmarks" / "sdk_types.py")
