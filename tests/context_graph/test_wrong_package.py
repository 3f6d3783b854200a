"""`from context_graph import ContextManager` says where the manager lives.

The layers keep `orchestrator` out of `context_graph`, so the name cannot be re-exported;
the package's `__getattr__` answers it, and any other name of `orchestrator` or
`processors`, with a `WrongPackageError` that gives the import to use.
"""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import context_graph
from context_graph import WrongPackageError
from context_graph._elsewhere import HOMES


class TestWrongPackage:
    """Names of the other packages, asked of `context_graph`."""

    def test_the_manager_names_its_import(self) -> None:
        """The error says `from orchestrator import ContextManager`, and is an ImportError."""
        with pytest.raises(ImportError, match=r"use `from orchestrator import ContextManager`"):
            from context_graph import ContextManager  # noqa: F401
        with pytest.raises(WrongPackageError) as caught:
            context_graph.ContextManager  # noqa: B018
        assert caught.value.name == "ContextManager"

    @pytest.mark.parametrize(
        ("name", "home"),
        [
            ("ContextHistory", "orchestrator.integrations.pydantic_ai"),
            ("ContextMiddleware", "orchestrator.integrations.langchain"),
            ("ContextSession", "orchestrator.integrations.openai_agents"),
            ("ObservationMasker", "processors"),
            ("get_policy", "orchestrator"),
        ],
    )
    def test_other_names_name_their_module(self, name: str, home: str) -> None:
        """An integration's class, a processor, a profile function: each says its module."""
        with pytest.raises(WrongPackageError, match=rf"use `from {home} import {name}`"):
            getattr(context_graph, name)

    def test_every_name_is_where_it_says(self) -> None:
        """The table holds every public name of `orchestrator` and `processors`, each at
        the module it names."""
        import orchestrator
        import processors

        assert set(orchestrator.__all__) | set(processors.__all__) <= set(HOMES)
        for name, home in HOMES.items():
            assert hasattr(importlib.import_module(home), name), f"{home}.{name}"
        assert set(HOMES).isdisjoint(context_graph.__all__)

    def test_an_unknown_name_is_a_plain_attribute_error(self) -> None:
        """A name no package has stays an `AttributeError` (`hasattr` is False)."""
        assert not hasattr(context_graph, "NoSuchThing")
        with pytest.raises(ImportError, match="cannot import name 'NoSuchThing'"):
            from context_graph import NoSuchThing  # type: ignore[attr-defined]  # noqa: F401

    def test_context_graph_alone_does_not_load_orchestrator(self) -> None:
        """Asking for the manager imports nothing of the upper layers."""
        code = (
            "import sys, context_graph\n"
            "try:\n"
            "    from context_graph import ContextManager\n"
            "except ImportError as exc:\n"
            "    print(type(exc).__name__)\n"
            "print(sorted(m for m in ('orchestrator', 'processors') if m in sys.modules))\n"
        )
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        ).stdout
        assert out.split() == ["WrongPackageError", "[]"]
