"""Checking `ContextManager`'s options.

A mistake fails at construction with a message that names the option, instead of deep
inside the first render.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from context_graph.errors import ConfigurationError
from context_graph.render import FORMATS
from context_graph.tokens.counting import ProviderFormat
from orchestrator.compaction.triggers import TriggerConfig
from orchestrator.profiles import Profile, get_profile, load_profile
from processors.base import Processor
from processors.distill import Distiller
from processors.mask import ObservationMasker
from processors.redact import SecretRedactor
from processors.summarize import HistorySummarizer
from processors.truncate import ToolOutputTruncator

__all__ = [
    "check_budget",
    "check_cache_breakpoints",
    "check_format",
    "check_options",
    "check_pipeline",
    "check_pipelines",
    "check_ratio",
    "check_redactor",
    "check_timeout",
    "default_pipeline",
    "profile_defaults",
    "resolve_profile",
]


def default_pipeline() -> tuple[Processor, ...]:
    """The built-in stages, cheapest first: mask, truncate, distill, summarize."""
    return (ObservationMasker(), ToolOutputTruncator(), Distiller(), HistorySummarizer())


def check_format(format: object, where: str) -> ProviderFormat:
    """`format` if it is a provider format; otherwise a `ConfigurationError` at `where`."""
    if format not in FORMATS:
        msg = f"{where}: unknown format {format!r}; use one of {', '.join(FORMATS)}"
        raise ConfigurationError(msg)
    return format


def check_budget(budget: object, where: str) -> int | None:
    """`budget` if it is `None` or a positive int; otherwise a `ConfigurationError`."""
    if budget is None:
        return None
    if isinstance(budget, bool) or not isinstance(budget, int) or budget <= 0:
        msg = f"{where}: `budget` must be a positive int of tokens or None, got {budget!r}"
        raise ConfigurationError(msg)
    return budget


def check_cache_breakpoints(value: object, format: ProviderFormat) -> bool:
    """`cache_breakpoints`: a bool, and `True` only with the Anthropic format (as `Renderer`)."""
    if not isinstance(value, bool):
        msg = f"ContextManager: `cache_breakpoints` must be True or False, got {value!r}"
        raise ConfigurationError(msg)
    if value and format != "anthropic":
        msg = (
            "ContextManager: `cache_breakpoints` is an Anthropic feature (prompt-cache "
            f"`cache_control` marks); use format='anthropic', not {format!r}"
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


def check_redactor(value: object) -> SecretRedactor | None:
    """`redact_secrets`: a bool, or a configured `SecretRedactor`."""
    if isinstance(value, SecretRedactor):
        return value
    if value is True:
        return SecretRedactor()
    if value is False:
        return None
    msg = f"ContextManager: `redact_secrets` must be True, False or a SecretRedactor, got {value!r}"
    raise ConfigurationError(msg)


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


def resolve_profile(profile: object) -> Profile | None:
    """A `Profile`, a built-in profile's name, or a path to a TOML profile file."""
    if profile is None or isinstance(profile, Profile):
        return profile
    if isinstance(profile, Path) or (isinstance(profile, str) and profile.endswith(".toml")):
        return load_profile(profile)
    if isinstance(profile, str):
        return get_profile(profile)
    msg = (
        "ContextManager: `profile` must be a Profile, a built-in profile's name "
        f"(coding, service, chat) or the path of a .toml file, got {profile!r}"
    )
    raise ConfigurationError(msg)


def profile_defaults(profile: Profile | None, given: dict[str, Any]) -> dict[str, Any]:
    """The profile's manager options, overridden by the options given explicitly."""
    if profile is None:
        return given
    chosen = profile.manager_options()
    chosen.update({key: value for key, value in given.items() if value is not None})
    return chosen
