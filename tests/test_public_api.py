"""Every package re-exports its public names explicitly, in a sorted `__all__`."""

from __future__ import annotations

import importlib
import inspect

import pytest

MODULES = [
    "context_graph",
    "context_graph.graph.call_ids",
    "context_graph.entities",
    "context_graph.errors",
    "context_graph.graph.events",
    "context_graph.graph.context_graph",
    "context_graph.importers",
    "context_graph.graph.nodes",
    "context_graph.render",
    "context_graph.validate.sdk_types",
    "context_graph.validate.request",
    "context_graph.graph.stats",
    "context_graph.testing",
    "context_graph.tokens.counting",
    "orchestrator",
    "orchestrator.working.buffer",
    "orchestrator.bus",
    "orchestrator.compaction.triggers",
    "orchestrator.cli",
    "orchestrator.compaction.guards",
    "orchestrator.working.invariants",
    "orchestrator.manager",
    "orchestrator.profiles",
    "orchestrator.replay",
    "orchestrator.persistence.sqlite_store",
    "processors",
    "processors.base",
    "processors.caches",
    "processors.registry",
    "processors.distill",
    "processors.mask",
    "processors.redact",
    "processors.summarize",
    "processors.summarize.checks",
    "processors.summarize.extractive",
    "processors.summarize.history",
    "processors.summarize.adapters",
    "processors.truncate",
    "processors.urls",
]


def _isort_key(name: str) -> tuple[int, str]:
    """Constants first, then classes, then functions: the order ruff's RUF022 keeps."""
    if name.isupper():
        return (0, name)
    return (1, name) if name[0].isupper() else (2, name)


@pytest.mark.parametrize("name", MODULES)
def test_all_is_sorted_and_resolves(name: str) -> None:
    """`__all__` is sorted, has no duplicates, and every name in it exists."""
    module = importlib.import_module(name)
    exported = list(module.__all__)
    assert exported == sorted(exported, key=_isort_key)
    assert len(set(exported)) == len(exported)
    missing = [n for n in exported if not hasattr(module, n)]
    assert missing == []


@pytest.mark.parametrize("name", [m for m in MODULES if m.count(".") == 1])
def test_all_lists_every_public_definition(name: str) -> None:
    """Every public class and function defined in a module is in its `__all__`."""
    module = importlib.import_module(name)
    defined = {
        n
        for n, obj in vars(module).items()
        if not n.startswith("_")
        and (inspect.isclass(obj) or inspect.isfunction(obj))
        and getattr(obj, "__module__", None) == module.__name__
    }
    assert defined - set(module.__all__) == set()


def test_package_reexports_every_submodule_name() -> None:
    """`context_graph` re-exports the public names of its core modules."""
    import context_graph

    for sub in ("graph.anchors", "errors", "graph.events", "graph.context_graph", "graph.nodes"):
        module = importlib.import_module(f"context_graph.{sub}")
        assert set(module.__all__) <= set(context_graph.__all__), sub
