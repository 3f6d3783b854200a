"""`context_graph.caches.clear_caches`: the data layer's process-wide memos, emptied."""

from __future__ import annotations

import importlib
import pkgutil

import context_graph
from context_graph import entities
from context_graph.caches import clear_caches
from context_graph.entities import critical_entities

TEXT = "Traceback: KeyError in src/app/main.py line 1234\nbooking ABC-1234 for user_id 99812"

# Memos of something fixed for the process, kept on purpose (see `context_graph.caches`).
KEPT = frozenset({"benchmarks.sdk_types._fields"})


def _memos() -> set[str]:
    """Every `functools` memo defined in a module of `context_graph`."""
    found: set[str] = set()
    for info in pkgutil.walk_packages(context_graph.__path__, "context_graph."):
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if hasattr(value, "cache_clear") and value.__module__ == module.__name__:
                found.add(f"{module.__name__}.{name}")
    return found


class TestClearCaches:
    def test_knows_every_memo_of_session_text(self) -> None:
        """A new process-wide memo in the package must be cleared here, or kept on purpose."""
        assert _memos() - KEPT == {"context_graph.entities._entities"}

    def test_empties_the_entity_memos(self) -> None:
        """After clearing, neither the text memo nor the line table holds anything."""
        critical_entities(TEXT)
        assert entities._entities.cache_info().currsize > 0
        assert entities._LINES
        clear_caches()
        assert entities._entities.cache_info().currsize == 0
        assert not entities._LINES

    def test_changes_no_answer(self) -> None:
        """The entities of a text are the same before and after clearing."""
        clear_caches()
        first = critical_entities(TEXT)
        clear_caches()
        assert critical_entities(TEXT) == first
        assert {"ABC-1234", "src/app/main.py", "KeyError"} <= set(first)
