"""Where the names a user asks of `context_graph` but that live in another package are.

`from context_graph import ContextManager` is a natural first guess: the distribution is
context-graph. The manager is `orchestrator`'s, and `context_graph` may not import it
(the layers go `orchestrator -> processors -> context_graph`), so the package's
`__getattr__` answers such a name with the import that works. The table is written out,
not read from the other packages, for the same reason; a test holds it to their
`__all__`s.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from context_graph.errors import WrongPackageError

__all__ = ["HOMES", "elsewhere"]

_ORCHESTRATOR = (
    "INVARIANT_RULES POLICIES SIGNALS AuditEntry CallReport ContextManager EventBus Firing "
    "GuardConfig ManagerStats PipelineRun Policy RecordedEvent Recorder ReplayReport "
    "RestoredSession SQLiteStore SessionStore StageConfig SummarizerConfig TriggerConfig "
    "WorkingGraph WorkingView default_pipeline get_policy replay"
)
_PROCESSORS = (
    "Abstract AnthropicSummarizer Distiller Drop Edit ExtractiveSummarizer GraphView "
    "HistorySummarizer ObservationMasker OpenAISummarizer PreambleTreeTrimmer Processor "
    "ProcessorContext Proposal "
    "Redactor Replace Resizable Restore Scope SecretRedactor Summarizer ThinkingClearer "
    "ToolInputClearer ToolOutputTruncator UrlShortener "
    "available_processors clear_caches create_processor get_processor register_processor "
    "replace_each replacement_for run_processor scope_of unregister_processor"
)
_INTEGRATIONS = {
    "ContextHistory": "orchestrator.integrations.pydantic_ai",
    "ContextMiddleware": "orchestrator.integrations.langchain",
    "ContextSession": "orchestrator.integrations.openai_agents",
}

#: The module to import each name from.
HOMES: Mapping[str, str] = MappingProxyType(
    {
        **dict.fromkeys(_ORCHESTRATOR.split(), "orchestrator"),
        **dict.fromkeys(_PROCESSORS.split(), "processors"),
        **_INTEGRATIONS,
    }
)


def elsewhere(name: str) -> Exception:
    """The error for `name` asked of `context_graph`: where it lives, if it is known.

    A `WrongPackageError` naming the import that works, else the `AttributeError` any
    module raises for a name it does not have.
    """
    home = HOMES.get(name)
    if home is None:
        return AttributeError(f"module 'context_graph' has no attribute {name!r}")
    msg = (
        f"`{name}` is not part of `context_graph` (the data layer); it lives in `{home}`: "
        f"use `from {home} import {name}`"
    )
    return WrongPackageError(msg, name=name)
