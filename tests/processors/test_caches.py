"""`processors.clear_caches`: the process-wide memos are emptied, and no answer changes."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable

import context_graph
import processors
from context_graph import entities
from context_graph.entities import critical_entities
from context_graph.graph.content import TextPart
from context_graph.graph.nodes import ToolResultNode
from processors import clear_caches
from processors.distill import _references
from processors.summarize import _facts

TEXT = "Traceback: KeyError in src/app/main.py line 1234\nbooking ABC-1234 for user_id 99812"


def _filled() -> None:
    critical_entities(TEXT)
    _facts._shell_paths("cat src/app/main.py > out/log.txt")
    _facts._outcome("exit code 1\nKeyError: 'x'", False)
    _facts._shows_content("cd src && grep -n main app.py")
    _references._named("Now open src/app/main.py", call=False)


# Memos keyed by something other than session text: the SDK's request types.
NOT_SESSION_MEMOS = frozenset({"context_graph.validate.sdk_types._fields"})


def _lru_caches() -> dict[str, Callable[..., object]]:
    """Every `functools.lru_cache` defined in the library's context_graph and processors."""
    found: dict[str, Callable[..., object]] = {}
    for package in (context_graph, processors):
        for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
            module = importlib.import_module(info.name)
            for name, value in vars(module).items():
                if hasattr(value, "cache_clear") and value.__module__ == module.__name__:
                    found[f"{module.__name__}.{name}"] = value
    return found


def test_clear_caches_knows_every_memo() -> None:
    """A new process-wide memo of session text must be cleared too (and filled below)."""
    assert set(_lru_caches()) - NOT_SESSION_MEMOS == {
        "context_graph.entities._entities",
        "processors.summarize._facts._shell_paths",
        "processors.summarize._facts._outcome",
        "processors.summarize._facts._shows_content",
        "processors.distill._references._named",
    }


def test_every_memo_is_empty_after_clearing() -> None:
    _filled()
    assert entities._entities.cache_info().currsize > 0
    assert entities._LINES
    clear_caches()
    assert entities._entities.cache_info().currsize == 0
    assert not entities._LINES
    assert _facts._shell_paths.cache_info().currsize == 0
    assert _facts._outcome.cache_info().currsize == 0
    assert _facts._shows_content.cache_info().currsize == 0
    assert _references._named.cache_info().currsize == 0


def test_answers_are_the_same_before_and_after() -> None:
    clear_caches()
    first = critical_entities(TEXT)
    node = ToolResultNode(id="r", tool_call_id="c", content=(TextPart(text=TEXT),), is_error=True)
    outcome = _facts.outcome_of(node)
    clear_caches()
    assert critical_entities(TEXT) == first
    assert _facts.outcome_of(node) == outcome
    assert "ABC-1234" in first
    assert "src/app/main.py" in first
