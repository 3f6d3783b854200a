"""Refuse to run on a `processors` or `orchestrator` package that is not context-graph's.

Both are common names. A user's own `processors.py` earlier on `sys.path` shadows our
package, and an unrelated distribution with a top-level package of the same name installs
into the same folder as ours and overwrites its files. Either way the failure would surface
far from its cause ("'processors' is not a package", a missing name); this check, run when
`orchestrator` is imported and before anything imports `processors`, names the cause and
the fix instead.

Each of the two packages defines `__distribution__ = "context-graph"` in its
`__init__.py`: a package whose `__init__.py` lacks it was replaced by another
distribution's.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from importlib.metadata import packages_distributions
from pathlib import Path
from types import ModuleType

__all__ = ["require_own_packages"]

_DISTRIBUTION = "context-graph"
_HOME = Path(__file__).resolve().parent.parent  # the folder our three packages live in


def require_own_packages() -> None:
    """Raise `ImportError` unless `orchestrator` and `processors` are context-graph's.

    Raises:
        ImportError: naming the module that shadows ours or the distribution that
            overwrote it, and what to do.
    """
    _require_marker(sys.modules["orchestrator"], "orchestrator")
    _require_location("processors")
    _require_marker(importlib.import_module("processors"), "processors")


def _require_location(name: str) -> None:
    """`name` must resolve to the package beside `context_graph`, not an earlier module."""
    expected = _HOME / name / "__init__.py"
    spec = importlib.util.find_spec(name)
    origin = None if spec is None else spec.origin
    if origin is not None and Path(origin).resolve() == expected:
        return
    found = "nothing" if origin is None else f"`{origin}`"
    msg = (
        f"context-graph: `import {name}` finds {found}, not context-graph's `{name}` package "
        f"({expected.parent}). A module or package of that name earlier on sys.path shadows "
        f"it (often a file of your own called `{name}.py` next to your script, or a "
        f"`{name}/` folder in the working directory): rename yours, or run from another "
        "directory."
    )
    raise ImportError(msg, name=name, path=origin)


def _require_marker(module: ModuleType, name: str) -> None:
    """The package's `__init__.py` must be ours: another distribution may have replaced it."""
    if getattr(module, "__distribution__", None) == _DISTRIBUTION:
        return
    others = sorted(set(packages_distributions().get(name, ())) - {_DISTRIBUTION})
    who = (
        "the distribution " + ", ".join(f"`{o}`" for o in others)
        if others
        else "another distribution"
    )
    uninstall = f"`pip uninstall {' '.join(others)}`" if others else "uninstall it"
    msg = (
        f"context-graph: the `{name}` package at `{module.__file__}` is not context-graph's: "
        f"{who} installed a top-level `{name}` package into the same folder and replaced "
        f"context-graph's files. {uninstall}, then reinstall context-graph "
        "(`pip install --force-reinstall .` in its checkout), or keep the two in separate "
        "virtual environments."
    )
    raise ImportError(msg, name=name, path=module.__file__)


# On import: `orchestrator/__init__.py` imports this module before anything that uses
# `processors`, and so does `orchestrator.manager` (which a replaced `__init__.py` skips).
require_own_packages()
