"""The manager's public signatures, counted: few parameters, every one typed by name.

Options that decide how a manager compacts live in one `Policy`; the constructor takes
the request's own settings and the policy. A `**options: Any` would let any keyword
through mypy and fail deep inside, so none may come back.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pytest

from orchestrator import ContextManager

MAX_CONSTRUCTOR_PARAMETERS = 9

PUBLIC: dict[str, Callable[..., Any]] = {
    "__init__": ContextManager.__init__,
    "open": ContextManager.open,
    "fork": ContextManager.fork,
}


def _parameters(function: Callable[..., Any]) -> list[inspect.Parameter]:
    signature = inspect.signature(function)  # follows __wrapped__ (the lock's decorator)
    return [p for p in signature.parameters.values() if p.name not in {"self", "cls"}]


def test_the_constructor_has_at_most_nine_parameters() -> None:
    parameters = _parameters(ContextManager.__init__)
    assert len(parameters) <= MAX_CONSTRUCTOR_PARAMETERS, [p.name for p in parameters]


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_no_catch_all_keywords_in_a_public_signature(name: str) -> None:
    kinds = {p.name: p.kind for p in _parameters(PUBLIC[name])}
    catch_all = [n for n, kind in kinds.items() if kind is inspect.Parameter.VAR_KEYWORD]
    assert catch_all == [], f"ContextManager.{name} takes **{catch_all[0]}"
    assert inspect.Parameter.VAR_POSITIONAL not in kinds.values()


@pytest.mark.parametrize("name", ["open", "fork"])
def test_open_and_fork_take_the_constructors_options_by_name(name: str) -> None:
    """Every constructor option but the store is a keyword of `open` and `fork`."""
    options = {p.name for p in _parameters(ContextManager.__init__)} - {"store"}
    assert options <= {p.name for p in _parameters(PUBLIC[name])}
