"""The option checks every framework integration makes before it builds any manager.

An integration keeps one `ContextManager` per thread or conversation, built either by
the user's `factory` or from manager options (with an optional `directory` of SQLite
files). The checks are the same for each: one way or the other, the OpenAI chat format
(the only one the message converters speak), an existing directory, and options that a
manager accepts, tried now rather than at the first model call.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from context_graph.errors import ConfigurationError
from orchestrator.manager import ContextManager

__all__ = ["check_manager_options"]


def check_manager_options(
    owner: str,
    budget: int | None,
    directory: str | os.PathLike[str] | None,
    factory: Callable[[str], ContextManager] | None,
    options: dict[str, Any],
) -> Path | None:
    """Check an integration's manager options (setting `format` to `openai` when absent).

    Returns:
        The directory as a `Path`, or `None` without one.

    Raises:
        ConfigurationError: naming `owner` and what is wrong.
    """
    if factory is not None and (options or directory is not None):
        msg = f"{owner}: pass either `factory` or manager options, not both"
        raise ConfigurationError(msg)
    if factory is None and options.setdefault("format", "openai") != "openai":
        msg = f"{owner} renders OpenAI chat messages; `format={options['format']!r}`"
        raise ConfigurationError(msg)
    folder = None if directory is None else Path(directory)
    if folder is not None and not folder.is_dir():
        msg = f"{owner}: `directory` {str(folder)!r} is not a directory"
        raise ConfigurationError(msg)
    if factory is None:
        ContextManager(budget=budget, **options)  # checks the options now, not at a call
    return folder
