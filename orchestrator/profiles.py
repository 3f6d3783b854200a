"""Profiles: declarative pipelines (triggers, stages cheapest first), loadable from TOML.

A `Profile` names the triggers, the processor stages (by registry name, with the options
given to each processor's constructor) and the compaction target, and hands them to a
`ContextManager`:

```python
profile = load_profile("agent.toml")  # or get_profile("coding")
manager = ContextManager(format="anthropic", budget=50_000, **profile.manager_options())
```

Every mistake raises `ConfigurationError` naming its place: the TOML key path
(`stages[1].options`) for a bad value, the stage index and processor for a processor that
is unknown or refuses its options.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from context_graph.errors import ConfigurationError
from orchestrator.compaction.triggers import TriggerConfig
from processors import registry
from processors.base import Processor

__all__ = ["PROFILES", "Profile", "StageConfig", "get_profile", "load_profile"]

_FROZEN = ConfigDict(frozen=True, extra="forbid")


def _key_path(loc: tuple[int | str, ...]) -> str:
    """A pydantic location as a TOML key path: `stages[1].options`."""
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path or "profile"


def _problems(exc: ValidationError) -> str:
    return "; ".join(f"`{_key_path(e['loc'])}`: {e['msg']}" for e in exc.errors())


class _TriggerFields(TriggerConfig):
    """`TriggerConfig` validated the plain pydantic way, so its errors keep their location."""

    __init__ = BaseModel.__init__  # plain pydantic errors, not the reworded ones


def _problems_at(prefix: str, exc: ValidationError) -> str:
    return "; ".join(f"`{_key_path((prefix, *e['loc']))}`: {e['msg']}" for e in exc.errors())


class StageConfig(BaseModel):
    """One pipeline stage: a processor by registry name, and its constructor options."""

    model_config = _FROZEN

    processor: str = Field(min_length=1)
    """The registry name: a built-in (`mask`, `truncate`, `distill`, `summarize`,
    `redact`, `shorten_urls`, `clear_tool_inputs`, `clear_thinking`), a class passed to
    `processors.register_processor`, an entry point."""
    options: Mapping[str, Any] = Field(default_factory=dict)
    """Keyword arguments for the processor's constructor; its defaults when empty."""

    def build(self) -> Processor:
        """A new processor made through the registry with `options`.

        Raises:
            ConfigurationError: no processor has that name, or it refuses the options.
        """
        try:
            processor: Processor = registry.create_processor(self.processor, **self.options)
        except ConfigurationError:
            raise
        except (TypeError, ValueError) as exc:  # an unknown keyword, a bad value
            msg = f"{type(exc).__name__}: {exc}"
            raise ConfigurationError(msg) from exc
        return processor


class Profile(BaseModel):
    """A named configuration: when compaction runs, which stages, and how far it goes.

    Invalid fields raise `ConfigurationError` naming the key path.
    """

    model_config = _FROZEN

    name: str = Field(min_length=1)
    """The profile's name (`coding`, `service`, `chat`, or your own)."""
    description: str = ""
    """One or two sentences: the kind of agent the profile is for."""
    triggers: TriggerConfig = Field(default_factory=TriggerConfig)
    """The graph-level triggers (budget ratios, counts); `TriggerConfig()` by default."""
    stages: tuple[StageConfig, ...] = Field(min_length=1)
    """The default pipeline's stages, cheapest first: clear_thinking, clear_tool_inputs,
    mask, truncate, distill, summarize."""
    pipelines: Mapping[str, tuple[StageConfig, ...]] = Field(default_factory=dict)
    """More pipelines by name (`[[pipelines.light]]` tables in TOML), for the triggers
    that name them in `triggers.pipelines` or in a node's trigger."""
    compact_to: float = Field(0.7, gt=0, le=1)
    """A compaction goes on until the request is at most this share of the budget."""

    def __init__(self, **data: Any) -> None:
        table = data.get("triggers")
        if isinstance(table, Mapping):
            # A nested TriggerConfig would hide the key path inside its own message.
            try:
                fields = _TriggerFields.model_validate(table)
            except ValidationError as exc:
                msg = f"Profile: {_problems_at('triggers', exc)}"
                raise ConfigurationError(msg) from None
            data = {**data, "triggers": TriggerConfig(**dict(fields))}
        try:
            super().__init__(**data)
        except ValidationError as exc:
            msg = f"Profile: {_problems(exc)}"
            raise ConfigurationError(msg) from None

    @model_validator(mode="after")
    def _check_pipeline_names(self) -> Profile:
        known = {self.triggers.default_pipeline, *self.pipelines}
        if self.triggers.default_pipeline in self.pipelines:
            msg = (
                f"`pipelines.{self.triggers.default_pipeline}` is the default pipeline; "
                "its stages go in `stages`"
            )
            raise ValueError(msg)
        for trigger, name in self.triggers.pipelines.items():
            if name not in known:
                msg = (
                    f"`triggers.pipelines.{trigger}` names pipeline {name!r}, which the "
                    f"profile does not define (it has {', '.join(sorted(known))})"
                )
                raise ValueError(msg)
        return self

    def build_pipeline(self, name: str | None = None) -> tuple[Processor, ...]:
        """New processors for every stage of the default pipeline (or of `name`), in order.

        Raises:
            ConfigurationError: a stage names an unknown processor or gives it bad options
                (the message names the stage index and the processor).
        """
        stages = self.stages if name is None else self.pipelines[name]
        where = "stages" if name is None else f"pipelines.{name}"
        pipeline: list[Processor] = []
        for index, stage in enumerate(stages):
            try:
                pipeline.append(stage.build())
            except ConfigurationError as exc:
                msg = (
                    f"profile {self.name!r}: `{where}[{index}]` (processor {stage.processor!r}): "
                    f"{exc}"
                )
                raise ConfigurationError(msg) from exc
        return tuple(pipeline)

    def manager_options(self) -> dict[str, Any]:
        """The keyword arguments for `ContextManager` (new processor instances each time)."""
        return {
            "triggers": self.triggers,
            "pipeline": self.build_pipeline(),
            "pipelines": {name: self.build_pipeline(name) for name in self.pipelines},
            "compact_to": self.compact_to,
        }

    @classmethod
    def from_toml(cls, source: str | os.PathLike[str]) -> Profile:
        """Parse a profile from TOML text (a `str`) or a file (a `Path`).

        The stages are built once, so an unknown processor or a bad option fails here.

        Raises:
            ConfigurationError: invalid TOML, an unknown or invalid key (named by its key
                path), or a stage that cannot be built.
        """
        if isinstance(source, str):
            where, text = "profile TOML", source
        else:
            where = os.fspath(source)
            try:
                text = Path(source).read_text(encoding="utf-8")
            except OSError as exc:
                msg = f"{where}: cannot read the profile: {exc.strerror or exc}"
                raise ConfigurationError(msg) from exc
            except UnicodeDecodeError as exc:
                msg = f"{where}: not valid UTF-8 (byte {exc.start}); TOML files are UTF-8"
                raise ConfigurationError(msg) from None
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            msg = f"{where}: invalid TOML: {exc}"
            raise ConfigurationError(msg) from exc
        except RecursionError:
            msg = f"{where}: invalid profile: arrays or tables nested too deeply to read"
            raise ConfigurationError(msg) from None
        try:
            profile = cls(**data)
            profile.manager_options()  # builds every stage of every pipeline
        except ConfigurationError as exc:
            msg = f"{where}: {exc}"
            raise ConfigurationError(msg) from exc
        return profile


def load_profile(path: str | os.PathLike[str]) -> Profile:
    """Read the profile in the TOML file at `path` (see `Profile.from_toml`)."""
    return Profile.from_toml(Path(path))


# Test and build tools whose failures matter more than their first and last lines.
_ERRORS_FIRST = (
    "bash",
    "shell",
    "execute_bash",
    "run_tests",
    "pytest",
    "make",
    "*test*",
    "*build*",
)

_CODING_OUTPUT_STAGES = (
    # Cheapest first: leaving out what the model no longer reads (old thinking, the
    # content of old file writes) costs nothing it may need; the original stays expandable.
    StageConfig(processor="clear_thinking", options={"keep_turns": 1}),
    StageConfig(processor="clear_tool_inputs", options={"keep_turns": 3, "min_tokens": 200}),
    StageConfig(
        processor="mask",
        options={"keep_turns": 3, "mask_superseded": True, "min_tokens": 200},
    ),
    StageConfig(
        processor="truncate",
        options={
            "max_tokens": 1_500,
            "default_policy": "head_tail",
            "policies": dict.fromkeys(_ERRORS_FIRST, "errors_first"),
            "context_lines": 3,
        },
    ),
    StageConfig(processor="distill", options={"min_tokens": 200}),
)

_SERVICE_OUTPUT_STAGES = (
    StageConfig(
        processor="mask",
        options={"keep_turns": 2, "mask_superseded": False, "min_tokens": 50},
    ),
    StageConfig(processor="truncate", options={"max_tokens": 800, "default_policy": "head"}),
)

#: The built-in profiles by name (read-only: a profile of one's own is a `Profile` or a TOML file).
PROFILES: Mapping[str, Profile] = MappingProxyType(
    {
        "coding": Profile(
            name="coding",
            description=(
                "A coding agent (SWE-agent, mini-swe-agent, Claude Code): large shell, test and "
                "file outputs; the first request and its constraints stay in the floor."
            ),
            # No soft trigger: every compaction rewrites the cached prompt prefix, and
            # shrinking outputs early bought no retention on the shared sessions (see
            # docs/configuration.md). `pipelines.outputs` is there to opt in to it.
            triggers=TriggerConfig(soft_ratio=None, hard_ratio=0.95, hysteresis=0.1),
            stages=(
                *_CODING_OUTPUT_STAGES,
                StageConfig(processor="summarize", options={"timeout": 120.0}),
            ),
            pipelines={"outputs": _CODING_OUTPUT_STAGES},
            compact_to=0.7,
        ),
        "service": Profile(
            name="service",
            description=(
                "A tool-using service agent (tau-bench): many short JSON lookups between user "
                "turns; results stay valid JSON and the conversation is summarized rarely."
            ),
            triggers=TriggerConfig(soft_ratio=None, hard_ratio=0.95, hysteresis=0.1),
            stages=(
                *_SERVICE_OUTPUT_STAGES,
                StageConfig(processor="summarize", options={"timeout": 60.0}),
            ),
            pipelines={"outputs": _SERVICE_OUTPUT_STAGES},
            compact_to=0.7,
        ),
        "chat": Profile(
            name="chat",
            description=(
                "A chat assistant, with at most a few tools (a web search): old turns are "
                "summarized, and a tool result too long for the chat is cut first."
            ),
            triggers=TriggerConfig(soft_ratio=None, hard_ratio=0.95, hysteresis=0.1),
            stages=(
                # Without a stage that can cut new material, a large tool result could only be
                # made room for by summarizing turns the provider has cached already.
                StageConfig(processor="truncate", options={"max_tokens": 1_000}),
                StageConfig(processor="summarize", options={"timeout": 60.0}),
            ),
            compact_to=0.7,
        ),
    }
)
"""The built-in profiles by name (see docs/configuration.md for the reasons)."""


def get_profile(name: str) -> Profile:
    """The built-in profile called `name`.

    Raises:
        ConfigurationError: no built-in profile has that name (the message lists them).
    """
    try:
        return PROFILES[name]
    except KeyError:
        names = ", ".join(sorted(PROFILES))
        msg = f"no built-in profile named {name!r}; use one of {names}, or load_profile(path)"
        raise ConfigurationError(msg) from None
