"""A policy's declarative parts: stages by registry name, and the TOML table of a policy.

A `StageConfig` names a processor and its constructor options; it builds a new processor
each time, so a policy made of stages hands every manager processors of its own. A
`PolicyTable` is the TOML form of a policy (the format profiles had): the triggers, the
stages, more pipelines by name and the compaction target. `Policy.from_toml` reads one.

Every mistake raises `ConfigurationError` naming its place: the TOML key path
(`stages[1].options`) for a bad value, the stage index and processor for a processor that
is unknown or refuses its options.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from context_graph.errors import ConfigurationError
from orchestrator.compaction.triggers import TriggerConfig
from processors import registry
from processors.base import Processor

__all__ = ["PolicyTable", "StageConfig", "build_stages", "read_table"]

_FROZEN = ConfigDict(frozen=True, extra="forbid")


def _key_path(loc: tuple[int | str, ...]) -> str:
    """A pydantic location as a TOML key path: `stages[1].options`."""
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path or "policy"


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


class PolicyTable(BaseModel):
    """A policy as TOML writes it: when compaction runs, which stages, and how far it goes.

    Invalid fields raise `ConfigurationError` naming the key path.
    """

    model_config = _FROZEN

    name: str = Field(min_length=1)
    """The policy's name (`coding`, `service`, `chat`, or your own)."""
    description: str = ""
    """One or two sentences: the kind of agent the policy is for."""
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
                msg = f"Policy: {_problems_at('triggers', exc)}"
                raise ConfigurationError(msg) from None
            data = {**data, "triggers": TriggerConfig(**dict(fields))}
        try:
            super().__init__(**data)
        except ValidationError as exc:
            msg = f"Policy: {_problems(exc)}"
            raise ConfigurationError(msg) from None

    @model_validator(mode="after")
    def _check_pipeline_names(self) -> PolicyTable:
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
                    f"policy does not define (it has {', '.join(sorted(known))})"
                )
                raise ValueError(msg)
        return self


def build_stages(owner: str, where: str, stages: Sequence[StageConfig]) -> tuple[Processor, ...]:
    """New processors for `stages`, in order.

    Raises:
        ConfigurationError: a stage names an unknown processor or gives it bad options
            (the message names the policy `owner`, the place `where`, the stage index and
            the processor).
    """
    pipeline: list[Processor] = []
    for index, stage in enumerate(stages):
        try:
            pipeline.append(stage.build())
        except ConfigurationError as exc:
            msg = f"policy {owner!r}: `{where}[{index}]` (processor {stage.processor!r}): {exc}"
            raise ConfigurationError(msg) from exc
    return tuple(pipeline)


def read_table(source: str | os.PathLike[str]) -> PolicyTable:
    """Parse a policy table from TOML text (a `str`) or a file (a `Path`).

    Raises:
        ConfigurationError: invalid TOML, or an unknown or invalid key (named by its key
            path); the message starts with where the TOML came from.
    """
    if isinstance(source, str):
        where, text = "policy TOML", source
    else:
        where = os.fspath(source)
        try:
            text = Path(source).read_text(encoding="utf-8")
        except OSError as exc:
            msg = f"{where}: cannot read the policy: {exc.strerror or exc}"
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
        msg = f"{where}: invalid policy: arrays or tables nested too deeply to read"
        raise ConfigurationError(msg) from None
    try:
        table = PolicyTable(**data)
        build_stages(table.name, "stages", table.stages)  # an unknown processor fails here
        for name, stages in table.pipelines.items():
            build_stages(table.name, f"pipelines.{name}", stages)
    except ConfigurationError as exc:
        msg = f"{where}: {exc}"
        raise ConfigurationError(msg) from exc
    return table
