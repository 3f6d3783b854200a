"""The distribution's own packages: the version, and a clear error when a name is not ours.

`processors` and `orchestrator` are common top-level names. Each case runs a fresh
interpreter, as a user's script would, in a folder laid out like the user's.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

import context_graph

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("context_graph", "processors", "orchestrator")


def _python(code: str, cwd: Path, *, path: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if path is not None:
        env["PYTHONPATH"] = str(path)
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _site_with_foreign(tmp_path: Path, name: str) -> Path:
    """A site folder holding our packages, whose `name/__init__.py` another dist replaced."""
    site = tmp_path / "site"
    for package in PACKAGES:
        shutil.copytree(
            ROOT / package, site / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    (site / name / "__init__.py").write_text('"""An unrelated package."""\nVALUE = 1\n')
    info = site / f"foreign_{name}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: foreign-{name}\nVersion: 1.0\n")
    (info / "top_level.txt").write_text(f"{name}\n")
    return site


class TestVersion:
    def test_version_comes_from_the_package_metadata(self) -> None:
        """`context_graph.__version__` is the installed distribution's version."""
        assert context_graph.__version__ == version("context-graph")


class TestShadowedPackages:
    def test_a_users_processors_module_is_named(self, tmp_path: Path) -> None:
        """A `processors.py` beside the user's script makes `import orchestrator` say so."""
        (tmp_path / "processors.py").write_text("PIPELINE = []\n")
        done = _python("import orchestrator", tmp_path)
        assert done.returncode == 1
        last = done.stderr.strip().splitlines()[-1]
        assert last.startswith("ImportError: context-graph: `import processors` finds")
        assert str(tmp_path / "processors.py") in last
        assert "rename yours" in last
        assert "is not a package" not in done.stderr

    def test_a_users_processors_folder_is_named(self, tmp_path: Path) -> None:
        """A `processors/` package of the user's in the working directory is named too."""
        (tmp_path / "processors").mkdir()
        (tmp_path / "processors" / "__init__.py").write_text("")
        done = _python("from orchestrator import ContextManager", tmp_path)
        assert done.returncode == 1
        assert str(tmp_path / "processors" / "__init__.py") in done.stderr

    @pytest.mark.parametrize(
        ("name", "code"),
        [
            ("processors", "import orchestrator"),
            ("orchestrator", "from orchestrator.manager import ContextManager"),
            ("orchestrator", "from orchestrator.cli import main"),
        ],
    )
    def test_a_package_replaced_by_another_distribution_is_named(
        self, tmp_path: Path, name: str, code: str
    ) -> None:
        """An unrelated distribution that overwrote `name/__init__.py` is named, with the fix."""
        site = _site_with_foreign(tmp_path, name)
        done = _python(code, tmp_path, path=site)
        assert done.returncode == 1, done.stderr
        last = done.stderr.strip().splitlines()[-1]
        assert last.startswith(f"ImportError: context-graph: the `{name}` package at")
        assert f"`foreign-{name}`" in last
        assert f"pip uninstall foreign-{name}" in last

    def test_our_own_packages_import_cleanly_from_a_copy(self, tmp_path: Path) -> None:
        """The same copied layout with nothing replaced imports: the check is not a false alarm."""
        site = tmp_path / "site"
        for package in PACKAGES:
            shutil.copytree(
                ROOT / package, site / package, ignore=shutil.ignore_patterns("__pycache__")
            )
        done = _python(
            "import orchestrator, processors; print(orchestrator.__file__)", tmp_path, path=site
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == str(site / "orchestrator" / "__init__.py")


class TestRuntimeDependencies:
    def test_every_module_level_import_is_declared(self) -> None:
        """What the packages import at module level is ours, the stdlib or a declared dependency."""
        import ast
        import re
        import tomllib
        from importlib.metadata import packages_distributions

        project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
        declared = {
            _dist_name(re.split(r"[<>=!~\[; ]", d, maxsplit=1)[0]) for d in project["dependencies"]
        }
        owners = packages_distributions()
        undeclared = set()
        for package in PACKAGES:
            for path in (ROOT / package).rglob("*.py"):
                for node in ast.parse(path.read_text(encoding="utf-8")).body:
                    if isinstance(node, ast.Import):
                        names = [alias.name for alias in node.names]
                    elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                        names = [node.module]
                    else:
                        continue
                    for top in {name.split(".")[0] for name in names}:
                        if top in PACKAGES or top in sys.stdlib_module_names or top == "__future__":
                            continue
                        if not {_dist_name(d) for d in owners.get(top, [top])} & declared:
                            undeclared.add(f"{top} ({path.relative_to(ROOT)})")
        assert not undeclared, f"imported but not in [project].dependencies: {sorted(undeclared)}"

    def test_the_manager_renders_without_sniffio(self, tmp_path: Path) -> None:
        """`render_sync` needs no sniffio (anyio 4.16 no longer brings it)."""
        code = (
            "import sys; sys.modules['sniffio'] = None\n"
            "from orchestrator import ContextManager\n"
            "manager = ContextManager(budget=1000)\n"
            "manager.add_user('Fix the failing test.')\n"
            "print(manager.render_sync().tokens > 0)\n"
        )
        done = _python(code, tmp_path)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "True"


def _dist_name(name: str) -> str:
    return name.strip().lower().replace("_", "-")


# The extras' top-level packages (pyproject.toml [project.optional-dependencies]).
EXTRA_PACKAGES = (
    "aiohttp",
    "psycopg",
    "psycopg_pool",
    "openai",
    "anthropic",
    "google",
    "agents",
    "langchain",
    "langchain_core",
    "langgraph",
    "pydantic_ai",
    "litellm",
    "autogen_core",
    "trio",
    "websockets",
)


class TestBareInstall:
    @pytest.mark.parametrize(
        "argv",
        [["inspect"], ["render", "--budget", "4000"], ["--version"], ["proxy", "--help"]],
        ids=["inspect", "render", "version", "proxy-help"],
    )
    def test_the_cli_runs_with_no_extra_installed(self, tmp_path: Path, argv: list[str]) -> None:
        """The README's first command runs on `pip install .` alone: no extra is imported.

        Each extra is made unimportable (`sys.modules[name] = None`), as on a bare install:
        the CLI's `proxy` command imports the gateway's store readers, and the package
        once imported aiohttp with them (CI's bare install failed on `context-graph inspect`).
        """
        code = (
            "import sys\n"
            f"for name in {EXTRA_PACKAGES!r}:\n"
            "    sys.modules[name] = None\n"
            "from orchestrator.cli import main\n"
            f"sys.exit(main({argv!r}))\n"
        )
        done = _python(code, tmp_path)
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr
