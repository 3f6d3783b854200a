"""The option checks every framework integration makes, and the format it renders in.

An integration keeps one `ContextManager` per thread or conversation, built either by
the user's `factory` or from manager options (with an optional `directory` of SQLite
files). The checks are the same for each: one way or the other, an existing directory,
and options that a manager accepts, tried now rather than at the first model call.

The format of a request is the wire format of the model the framework calls: each
integration reads the provider off the framework's model object (the formats' registry
maps what it read: `context_graph.formats.wires.provider_format`) and `choose_format`
settles it, the user's `format=` first. A provider the engine has no format for falls
back to the OpenAI chat format; the `FormatChoice` says so (`fallback`), and a warning is
logged once per integration and provider.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from context_graph.errors import ConfigurationError
from context_graph.formats.wires import DEFAULT_FORMAT
from context_graph.tokens.counting import ProviderFormat
from orchestrator.manager import ContextManager
from orchestrator.policy.resolved import check_format

__all__ = [
    "FALLBACK_FORMAT",
    "FormatChoice",
    "check_manager_options",
    "choose_format",
]

_LOG = logging.getLogger("orchestrator.integrations")

#: The format of a model whose provider the engine does not know: the engine's default.
FALLBACK_FORMAT: ProviderFormat = DEFAULT_FORMAT


@dataclass(frozen=True)
class FormatChoice:
    """The format a request was rendered in, and why.

    Attributes:
        format: The provider format rendered and counted.
        provider: What the framework's model said it is (`None`: it said nothing).
        source: `option` (the user's `format=`), `model` (read off the model) or
            `fallback` (an unknown provider: the OpenAI chat format).
        model: The model object's class name.
    """

    format: ProviderFormat
    provider: str | None
    source: Literal["option", "model", "fallback"]
    model: str

    @property
    def fallback(self) -> bool:
        """Whether the provider was unknown and the OpenAI chat format was used."""
        return self.source == "fallback"


def choose_format(
    explicit: ProviderFormat | None,
    detected: ProviderFormat | None,
    provider: str | None,
    model: str,
    warned: set[str],
) -> FormatChoice:
    """The format of one request: the user's, the model's, or the fallback (logged once).

    Args:
        explicit: The integration's `format=` option.
        detected: The format read off the model, if its provider is known.
        provider: The provider name read off the model.
        model: The model's class name.
        warned: The providers already warned about (updated).
    """
    if explicit is not None:
        return FormatChoice(explicit, provider, "option", model)
    if detected is not None:
        return FormatChoice(detected, provider, "model", model)
    key = f"{model}/{provider}"
    if key not in warned:
        warned.add(key)
        _LOG.warning(
            "context-graph: the provider of model %s (%r) has no format of its own; its "
            "requests are rendered and counted in the OpenAI chat format (pass format= "
            "to name one)",
            model,
            provider,
        )
    return FormatChoice(FALLBACK_FORMAT, provider, "fallback", model)


def check_manager_options(
    owner: str,
    budget: int | None,
    directory: str | os.PathLike[str] | None,
    factory: Callable[[str], ContextManager] | None,
    options: dict[str, Any],
    format: str | None = None,
) -> Path | None:
    """Check an integration's manager options (and its `format`, when named).

    Returns:
        The directory as a `Path`, or `None` without one.

    Raises:
        ConfigurationError: naming `owner` and what is wrong.
    """
    if factory is not None and (options or directory is not None):
        msg = f"{owner}: pass either `factory` or manager options, not both"
        raise ConfigurationError(msg)
    chosen = FALLBACK_FORMAT if format is None else check_format(format, owner)
    folder = None if directory is None else Path(directory)
    if folder is not None and not folder.is_dir():
        msg = f"{owner}: `directory` {str(folder)!r} is not a directory"
        raise ConfigurationError(msg)
    if factory is None:
        # Checks the options now, not at a call.
        ContextManager(chosen, budget, **options)
    return folder
