"""A manager's policy and options: checked once, then frozen in a `ManagerOptions`.

A mistake fails at construction with a message that names the option, instead of deep
inside the first render. The collaborators read the `ManagerOptions`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from context_graph.errors import ConfigurationError, IngestError, SourceLocation
from context_graph.formats.registry import CACHE_MARKING_FORMATS, DEFAULT_FORMAT
from context_graph.graph.events import AgentEvent
from context_graph.models import model_budget
from context_graph.render import FORMATS
from context_graph.render.tools import ToolSpec, read_tools
from context_graph.tokens.counting import ProviderFormat, TokenCounter
from orchestrator.agent_tools.specs import EXPAND_TOOL, agent_tool_specs, check_pin_turns
from orchestrator.compaction.guards import GuardConfig
from orchestrator.compaction.triggers import TriggerConfig
from orchestrator.policy.policy import Policy
from orchestrator.pricing import price_for
from processors.base import Processor, Redactor, Summarizer, as_redactor, scope_of, screen_of
from processors.distill import Distiller
from processors.mask import ObservationMasker
from processors.redact import SecretRedactor
from processors.summarize import HistorySummarizer
from processors.truncate import ToolOutputTruncator

__all__ = [
    "ManagerOptions",
    "check_batch",
    "check_budget",
    "check_cache_breakpoints",
    "check_flag",
    "check_format",
    "check_model",
    "check_options",
    "check_pipeline",
    "check_pipelines",
    "check_ratio",
    "check_redactor",
    "check_sent_beside",
    "check_timeout",
    "check_tools",
    "default_pipeline",
    "resolve_options",
    "session_redactor",
]


@dataclass(frozen=True, slots=True)
class ManagerOptions:
    """A manager's policy and options once checked, its pipelines built."""

    format: ProviderFormat
    """The default provider format."""
    budget: int | None
    """The default token budget of a render."""
    counter: TokenCounter | None
    """The token counter (`None`: the default one)."""
    triggers: TriggerConfig
    """When compaction runs."""
    pipelines: Mapping[str, tuple[Processor, ...]]
    """Every pipeline by name, the default one under `triggers.default_pipeline`."""
    summarizer: Summarizer | None
    """Given to the processors."""
    compact_to: float
    """The share of the budget a run that makes a request fit compacts down to."""
    guards: GuardConfig
    """The loop guards."""
    background_timeout: float | None
    """Seconds a background run may take."""
    compaction_timeout: float | None
    """Seconds a foreground run (and the floor's truncation) may take."""
    redactor: Redactor | None
    """What scans new nodes for secrets (`None`: no redaction)."""
    cache_breakpoints: bool
    """Mark prompt-cache breakpoints (a format of `CACHE_MARKING_FORMATS` only)."""
    clock: Callable[[], float]
    """Seconds since the epoch, for the audit log."""
    tools: tuple[ToolSpec, ...] = ()
    """The tool definitions every request carries, read once: the caller's, in order,
    then the agent tools."""
    agent_tools: tuple[str, ...] = ()
    """The names of the agent tools the manager adds and runs (`context_expand`, ...)."""
    expand_pin_turns: int = 3
    """User turns for which compaction leaves what `context_expand` restored alone."""
    model: str | None = None
    """The model the requests are for (`None`: not said); it sets the default budget."""
    auto_continue: bool = False
    """End the request after an automatic summary with the auto-continue line."""

    @property
    def expand_hints(self) -> bool:
        """Whether compacted pieces name the id to pass `context_expand`."""
        return EXPAND_TOOL in self.agent_tools

    @property
    def default_stages(self) -> tuple[Processor, ...]:
        """The default pipeline's processors."""
        return self.pipelines[self.triggers.default_pipeline]


def resolve_options(
    policy: Policy,
    *,
    format: ProviderFormat = DEFAULT_FORMAT,
    budget: int | None = None,
    counter: TokenCounter | None = None,
    clock: Callable[[], float] = time.time,
    tools: Sequence[Any] | None = None,
    agent_tools: object = False,
    model: str | None = None,
) -> ManagerOptions:
    """Check a manager's `policy` and its own options, and freeze them.

    The policy's pipelines are built here (new processors for its `StageConfig`s).
    Without a `budget`, a `model` sets it: the model's usable window
    (`context_graph.models.model_budget`).

    Raises:
        ConfigurationError: naming the first option that is invalid.
    """
    ratio = check_ratio(policy.compact_to, "compact_to")
    fmt = check_format(format, "ContextManager")
    limit = check_budget(budget, "ContextManager")
    chosen_model = check_model(model, "ContextManager")
    if limit is None and chosen_model is not None:
        limit = model_budget(chosen_model)
    marks = check_cache_breakpoints(policy.cache_breakpoints, fmt)
    summarizer = policy.build_summarizer()
    check_options(counter, policy.triggers, summarizer, clock)
    config = policy.triggers
    pipeline, named = policy.build_pipelines()
    stages = check_pipelines(pipeline, named or None, config)
    background = check_timeout(policy.background_timeout, "background_timeout")
    foreground = check_timeout(policy.compaction_timeout, "compaction_timeout")
    redactor = session_redactor(policy.build_redactor(), stages)
    specs = check_tools(tools, "ContextManager")
    agents = agent_tool_specs(agent_tools, specs)
    pin_turns = check_pin_turns(policy.expand_pin_turns)
    guards = policy.guards
    if not isinstance(guards, GuardConfig):
        msg = f"ContextManager: guards must be a GuardConfig, got {type(guards).__name__}"
        raise ConfigurationError(msg)
    if guards.cost_aware and guards.price is None:
        # The cost guard weighs with the prices of the provider the manager renders for.
        guards = guards.model_copy(update={"price": price_for(fmt)})
    return ManagerOptions(
        format=fmt,
        budget=limit,
        counter=counter,
        triggers=config,
        pipelines=MappingProxyType(stages),
        summarizer=summarizer,
        compact_to=ratio,
        guards=guards,
        background_timeout=background,
        compaction_timeout=foreground,
        redactor=redactor,
        cache_breakpoints=marks,
        clock=clock,
        tools=(*specs, *agents),
        agent_tools=tuple(spec.name for spec in agents),
        expand_pin_turns=pin_turns,
        model=chosen_model,
        auto_continue=check_flag(policy.auto_continue, "auto_continue"),
    )


def check_flag(value: object, name: str) -> bool:
    """A boolean option, refused when it is anything else (`1`, `"yes"`).

    Raises:
        ConfigurationError: naming the option and the value.
    """
    if not isinstance(value, bool):
        msg = f"ContextManager: {name} must be True or False, got {value!r}"
        raise ConfigurationError(msg)
    return value


def check_batch(batch: Sequence[AgentEvent], pipelines: Mapping[str, object]) -> None:
    """Refuse a batch whose node triggers name a pipeline not in `pipelines`.

    Raises:
        IngestError: naming the event's index, the trigger and the pipelines there are.
    """
    for index, event in enumerate(batch):
        for spec in getattr(event, "triggers", ()):
            if spec.pipeline is not None and spec.pipeline not in pipelines:
                names = ", ".join(map(repr, pipelines))
                msg = (
                    f"trigger `{spec.kind}` names pipeline {spec.pipeline!r}, which this "
                    f"manager does not have (it has {names})"
                )
                raise IngestError(msg, SourceLocation(index=index))


def default_pipeline() -> tuple[Processor, ...]:
    """The built-in stages, cheapest first: mask, truncate, distill, summarize."""
    return (ObservationMasker(), ToolOutputTruncator(), Distiller(), HistorySummarizer())


def check_format(format: object, where: str) -> ProviderFormat:
    """`format` if it is a provider format; otherwise a `ConfigurationError` at `where`."""
    if format not in FORMATS:
        msg = f"{where}: unknown format {format!r}; use one of {', '.join(FORMATS)}"
        raise ConfigurationError(msg)
    return format


def check_tools(tools: Sequence[Any] | None, where: str) -> tuple[ToolSpec, ...]:
    """`tools` read as neutral specs; a `ConfigurationError` at `where` if they do not read."""
    try:
        return read_tools(tools)
    except ConfigurationError as exc:
        msg = f"{where}: {exc}"
        raise ConfigurationError(msg) from exc


def check_budget(budget: object, where: str) -> int | None:
    """`budget` if it is `None` or a positive int; otherwise a `ConfigurationError`."""
    if budget is None:
        return None
    if isinstance(budget, bool) or not isinstance(budget, int) or budget <= 0:
        msg = f"{where}: `budget` must be a positive int of tokens or None, got {budget!r}"
        raise ConfigurationError(msg)
    return budget


def check_sent_beside(value: object, where: str) -> int:
    """`sent_beside` if it is a count of tokens (an int, 0 or more); else a `ConfigurationError`."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        msg = f"{where}: `sent_beside` must be an int of tokens, 0 or more, got {value!r}"
        raise ConfigurationError(msg)
    return value


def check_model(model: object, where: str) -> str | None:
    """`model` if it is `None` or a non-empty string; otherwise a `ConfigurationError`."""
    if model is None or (isinstance(model, str) and model.strip()):
        return model
    msg = f"{where}: `model` must be a model id such as 'claude-sonnet-5' or None, got {model!r}"
    raise ConfigurationError(msg)


def check_cache_breakpoints(value: object, format: ProviderFormat) -> bool:
    """`cache_breakpoints`: a bool, `True` only for a format taking cache marks (as `Renderer`)."""
    if not isinstance(value, bool):
        msg = f"ContextManager: `cache_breakpoints` must be True or False, got {value!r}"
        raise ConfigurationError(msg)
    if value and format not in CACHE_MARKING_FORMATS:
        msg = (
            "ContextManager: `cache_breakpoints` needs a format that takes prompt-cache "
            f"marks ({', '.join(CACHE_MARKING_FORMATS)}), not {format!r}"
        )
        raise ConfigurationError(msg)
    return value


def check_ratio(value: object, name: str) -> float:
    """A share in (0, 1]."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        msg = f"ContextManager: {name} must be a number in (0, 1], got {value!r}"
        raise ConfigurationError(msg)
    if not 0 < value <= 1:
        msg = f"ContextManager: {name} must be in (0, 1], got {value}"
        raise ConfigurationError(msg)
    return float(value)


def check_redactor(value: object) -> Redactor | None:
    """`redact_secrets`: a bool, or a configured `Redactor` (a `SecretRedactor`, or one's own).

    Raises:
        ConfigurationError: naming what the value is and, for an object that is no
            `Redactor`, the methods it lacks.
    """
    if value is True:
        return SecretRedactor()
    if value is False:
        return None
    if value is None or isinstance(value, int | float | str | bytes):
        msg = (
            "ContextManager: `redact_secrets` must be True, False or a Redactor such as "
            f"SecretRedactor(), got {value!r}"
        )
        raise ConfigurationError(msg)
    return as_redactor(value, "ContextManager: `redact_secrets`")


def session_redactor(
    value: object, pipelines: Mapping[str, Sequence[Processor]]
) -> Redactor | None:
    """The session's redactor: `redact_secrets`, else a stage that screens new nodes.

    Redaction is a property of the session, however it is switched on. A stage alone
    redacts only when a compaction runs, so a secret in a turn that came after the last
    one would reach the request: a stage that declares `screens_new_nodes` (a
    `SecretRedactor`, a policy's `redact` stage in TOML too, or one's own `Redactor`)
    screens every new node before each render as `redact_secrets=True` does, with that
    stage's options (the default pipeline's first, then the other pipelines' in order).
    The stage is found by its declaration, never by its class.

    Raises:
        ConfigurationError: `redact_secrets` is neither a bool nor a `Redactor`, or a
            stage declares `screens_new_nodes` without being a `Redactor`.
    """
    chosen = check_redactor(value)
    if chosen is not None:
        return chosen
    for stages in pipelines.values():
        for stage in stages:
            screen = screen_of(stage)
            if screen is not None:
                return screen
    return None


def check_timeout(value: object, name: str) -> float | None:
    """Seconds a compaction may take (option `name`), or `None` for no limit."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        msg = (
            f"ContextManager: `{name}` must be a positive number of seconds or None, got {value!r}"
        )
        raise ConfigurationError(msg)
    return float(value)


def check_pipeline(pipeline: Sequence[Processor] | None) -> tuple[Processor, ...]:
    """The pipeline as a tuple of processors (the default one for `None`)."""
    if pipeline is None:
        return default_pipeline()
    if isinstance(pipeline, str | bytes) or not isinstance(pipeline, Sequence):
        msg = "ContextManager: `pipeline` must be a sequence of processors, e.g. [Distiller()]"
        raise ConfigurationError(msg)
    for index, stage in enumerate(pipeline):
        if not callable(getattr(stage, "propose", None)):
            msg = (
                f"ContextManager: pipeline stage {index} ({stage!r}) has no `propose` method; "
                "pass processor instances such as ObservationMasker()"
            )
            raise ConfigurationError(msg)
        try:
            scope_of(stage)
        except ConfigurationError as error:
            raise ConfigurationError(f"ContextManager: pipeline stage {index}: {error}") from None
    return tuple(pipeline)


def check_pipelines(
    pipeline: Sequence[Processor] | None,
    pipelines: object,
    config: TriggerConfig,
) -> dict[str, tuple[Processor, ...]]:
    """The default pipeline and the named ones; every pipeline a trigger names exists."""
    chosen = {config.default_pipeline: check_pipeline(pipeline)}
    if pipelines is not None:
        if not isinstance(pipelines, Mapping):
            msg = (
                "ContextManager: `pipelines` must map names to sequences of processors, "
                f"got {type(pipelines).__name__}"
            )
            raise ConfigurationError(msg)
        for name, stages in pipelines.items():
            if not isinstance(name, str) or not name:
                msg = f"ContextManager: pipeline names must be non-empty strings, got {name!r}"
                raise ConfigurationError(msg)
            if name == config.default_pipeline:
                msg = (
                    f"ContextManager: `pipelines` names {name!r}, the default pipeline; "
                    "give it as `pipeline=` instead"
                )
                raise ConfigurationError(msg)
            try:
                chosen[name] = check_pipeline(stages)
            except ConfigurationError as exc:
                raise ConfigurationError(f"pipelines[{name!r}]: {exc}") from None
    for trigger, name in config.pipelines.items():
        if name not in chosen:
            msg = (
                f"ContextManager: trigger `{trigger}` runs pipeline {name!r}, which is not "
                f"given; the pipelines are {', '.join(map(repr, chosen))}"
            )
            raise ConfigurationError(msg)
    return chosen


def check_options(counter: object, triggers: object, summarizer: object, clock: object) -> None:
    """Refuse a counter, trigger config, summarizer or clock of the wrong type."""
    if counter is not None and not callable(getattr(counter, "count", None)):
        msg = "ContextManager: `counter` must be a TokenCounter (a `count(text)` method)"
        raise ConfigurationError(msg)
    if triggers is not None and not isinstance(triggers, TriggerConfig):
        msg = f"ContextManager: `triggers` must be a TriggerConfig or None, got {triggers!r}"
        raise ConfigurationError(msg)
    if summarizer is not None and not callable(getattr(summarizer, "summarize", None)):
        msg = "ContextManager: `summarizer` must have an async `summarize` method"
        raise ConfigurationError(msg)
    if not callable(clock):
        msg = "ContextManager: `clock` must be a callable returning seconds since the epoch"
        raise ConfigurationError(msg)
