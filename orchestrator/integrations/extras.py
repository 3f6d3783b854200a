"""The error an integration raises when its framework (an optional extra) is not installed.

Every integration module imports its framework at import time, so a user without the
extra learns at once which install brings it, from whichever module they imported.
"""

from __future__ import annotations

from context_graph.errors import ConfigurationError

__all__ = ["missing_extra"]


def missing_extra(module: str, needs: str, extra: str, packages: str) -> ConfigurationError:
    """The error for `module` when `needs` is not importable.

    `extra` is the context-graph extra that installs it, `packages` the plain pip
    packages for those who install the framework on their own.
    """
    return ConfigurationError(
        f"{module} needs {needs}: in the context-graph checkout, `pip install '.[{extra}]'` "
        f"(or `pip install {packages}`)"
    )
