"""`processors.clear_caches`: the process-wide memos are emptied, and no answer changes."""

from __future__ import annotations

from context_graph import entities
from context_graph.entities import critical_entities
from context_graph.nodes import TextPart, ToolResultNode
from processors import clear_caches
from processors.distill import _references
from processors.summarize import _facts

TEXT = "Traceback: KeyError in src/app/main.py line 1234\nbooking ABC-1234 for user_id 99812"


def _filled() -> None:
    critical_entities(TEXT)
    _facts._shell_paths("cat src/app/main.py > out/log.txt")
    _facts._outcome("exit code 1\nKeyError: 'x'", False)
    _references._named("Now open src/app/main.py", call=False)


def test_every_memo_is_empty_after_clearing() -> None:
    _filled()
    assert entities._entities.cache_info().currsize > 0
    assert entities._LINES
    clear_caches()
    assert entities._entities.cache_info().currsize == 0
    assert not entities._LINES
    assert _facts._shell_paths.cache_info().currsize == 0
    assert _facts._outcome.cache_info().currsize == 0
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
