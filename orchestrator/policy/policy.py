"""`Policy`: everything that decides how a manager compacts, as one frozen value.

A policy is what `ContextManager(policy=...)` takes: a built-in one by name (`coding`,
`service`, `chat`), a `Policy`, or the path of a TOML file. It holds the triggers, the
pipelines, the guards, the compaction target, the time limits, redaction, the summarizer,
cache marks, the expand pins and auto-continue. Derive one with `replace`, whose keywords
are typed:

```python
policy = get_policy("coding").replace(compact_to=0.5, redact_secrets=True)
manager = ContextManager("anthropic", 50_000, policy=policy)
```

A pipeline's stages are processor instances or `StageConfig`s. A `StageConfig` builds a
new processor for every manager, so a policy of stages (every named policy, every TOML
policy) used by two managers shares no processor state; an instance is used as given, by
every manager the policy is handed to.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TypeAlias, TypedDict, Unpack

from context_graph.errors import ConfigurationError
from orchestrator.compaction.guards import GuardConfig
from orchestrator.compaction.triggers import TriggerConfig
from orchestrator.policy.stages import StageConfig, SummarizerConfig
from orchestrator.policy.table import read_table, write_table
from processors.base import Processor, Redactor, Summarizer

__all__ = ["Policy", "PolicyChanges", "Stage"]

Stage: TypeAlias = Processor | StageConfig
"""One stage of a pipeline: a processor instance, or a `StageConfig` built per manager."""


Pipeline: TypeAlias = tuple[Processor, ...]


class PolicyChanges(TypedDict, total=False):
    """The fields `Policy.replace` may change, typed (a misspelled one fails mypy)."""

    name: str
    description: str
    triggers: TriggerConfig
    pipeline: Sequence[Stage] | None
    pipelines: Mapping[str, Sequence[Stage]]
    summarizer: Summarizer | SummarizerConfig | None
    compact_to: float
    guards: GuardConfig
    background_timeout: float | None
    compaction_timeout: float | None
    redact_secrets: bool | Redactor | StageConfig
    cache_breakpoints: bool
    expand_pin_turns: int
    auto_continue: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class Policy:
    """How a manager compacts: one frozen value (see the module's docstring).

    `Policy()` is the general mechanics, the same for every agent: a soft trigger at 0.7
    of the budget and a hard one at 0.9 (`TriggerConfig()`), `default_pipeline()`, and
    compaction down to 0.7. The named policies (`get_policy`) are tuned per kind of
    agent; `ContextManager` runs `coding` unless told otherwise. Values are checked when
    a manager is made with the policy; a bad one raises `ConfigurationError` naming it.
    """

    name: str = "custom"
    """The policy's name (`coding`, `service`, `chat`, or your own)."""
    description: str = ""
    """One or two sentences: the kind of agent the policy is for."""
    triggers: TriggerConfig = field(default_factory=TriggerConfig)
    """When compaction runs."""
    pipeline: Sequence[Stage] | None = None
    """The default pipeline's stages, cheapest first; `default_pipeline()` when `None`."""
    pipelines: Mapping[str, Sequence[Stage]] = field(default_factory=lambda: MappingProxyType({}))
    """More pipelines by name, for the triggers that name them (in
    `TriggerConfig.pipelines` or a node's `TriggerSpec.pipeline`)."""
    summarizer: Summarizer | SummarizerConfig | None = None
    """Given to the processors (the history summarizer writes with it); the
    deterministic extractive brief when `None`. A `SummarizerConfig` builds a new one
    for every manager."""
    compact_to: float = 0.7
    """A compaction that makes a request fit goes on until the request is at most this
    share of the budget."""
    guards: GuardConfig = field(default_factory=GuardConfig)
    """The loop guards."""
    background_timeout: float | None = 120.0
    """Seconds a background compaction may run; `None` for no limit."""
    compaction_timeout: float | None = 60.0
    """Seconds a foreground compaction may run; `None` for no limit."""
    redact_secrets: bool | Redactor | StageConfig = False
    """Replace credentials with placeholders: `True` (a default `SecretRedactor`), a
    configured `Redactor` (a `SecretRedactor` with options, or one's own), or a
    `StageConfig` that builds one for every manager."""
    cache_breakpoints: bool = False
    """Mark prompt-cache breakpoints, for a format that takes them
    (`context_graph.formats.registry.CACHE_MARKING_FORMATS`; any other refuses)."""
    expand_pin_turns: int = 3
    """User turns for which compaction leaves what `context_expand` restored alone."""
    auto_continue: bool = False
    """End the request after an automatic summary with the auto-continue line."""

    def replace(self, **changes: Unpack[PolicyChanges]) -> Policy:
        """This policy with `changes` (typed keywords); the rest stays as it is."""
        return dataclasses.replace(self, **changes)

    def build_pipelines(
        self,
    ) -> tuple[tuple[Processor, ...] | None, dict[str, tuple[Processor, ...]]]:
        """The default pipeline (`None`: the built-in one) and the named ones, as processors.

        Every `StageConfig` builds a new processor, so two managers share none of them.

        Raises:
            ConfigurationError: a stage cannot be built (named by its place).
        """
        default = None if self.pipeline is None else self._build("stages", self.pipeline)
        if not isinstance(self.pipelines, Mapping):
            return default, self.pipelines  # refused by check_pipelines, naming the option
        named = {
            name: self._build(f"pipelines.{name}", stages)
            for name, stages in self.pipelines.items()
        }
        return default, named

    def build_summarizer(self) -> Summarizer | None:
        """The summarizer, a new one when it is a `SummarizerConfig`.

        Raises:
            ConfigurationError: the config's summarizer refuses its options.
        """
        if not isinstance(self.summarizer, SummarizerConfig):
            return self.summarizer
        try:
            return self.summarizer.build()
        except ConfigurationError as exc:
            msg = f"policy {self.name!r}: `summarizer`: {exc}"
            raise ConfigurationError(msg) from exc

    def build_redactor(self) -> object:
        """`redact_secrets`, with a `StageConfig` built (checked by the manager).

        Raises:
            ConfigurationError: the stage cannot be built.
        """
        if not isinstance(self.redact_secrets, StageConfig):
            return self.redact_secrets
        return self._build("redact_secrets", (self.redact_secrets,))[0]

    def _build(self, where: str, stages: Sequence[Stage]) -> tuple[Processor, ...]:
        if isinstance(stages, str | bytes) or not isinstance(stages, Sequence):
            return stages  # refused by check_pipeline, naming the option
        built: list[Processor] = []
        for index, stage in enumerate(stages):
            if not isinstance(stage, StageConfig):
                built.append(stage)
                continue
            try:
                built.append(stage.build())
            except ConfigurationError as exc:
                msg = (
                    f"policy {self.name!r}: `{where}[{index}]` "
                    f"(processor {stage.processor!r}): {exc}"
                )
                raise ConfigurationError(msg) from exc
        return tuple(built)

    @classmethod
    def from_toml(cls, source: str | os.PathLike[str]) -> Policy:
        """A policy from TOML text (a `str`) or a file (a `Path`).

        Every field has its key (`[[stages]]` is `pipeline`, each a `processor` and its
        `options`; `[[pipelines.<name>]]`; `[triggers]`; `[guards]`; `[summarizer]` a
        `kind` and its `options`; `redact_secrets` true or a stage table); `false`
        stands for `None` (docs/configuration.md). The stages are built once, so an
        unknown processor or a bad option fails here.

        Raises:
            ConfigurationError: invalid TOML, an unknown or invalid key (named by its key
                path, and its line), or a stage that cannot be built.
        """
        table = read_table(source)
        return cls(
            name=table.name,
            description=table.description,
            triggers=table.triggers,
            pipeline=table.stages,
            pipelines=MappingProxyType(dict(table.pipelines)),
            summarizer=table.summarizer,
            compact_to=table.compact_to,
            guards=table.guards,
            background_timeout=table.background_timeout,
            compaction_timeout=table.compaction_timeout,
            redact_secrets=table.redact_secrets,
            cache_breakpoints=table.cache_breakpoints,
            expand_pin_turns=table.expand_pin_turns,
            auto_continue=table.auto_continue,
        )

    def to_toml(self) -> str:
        """This policy as TOML text; `Policy.from_toml` reads it back to an equal policy.

        Raises:
            ConfigurationError: a field holds an instance TOML cannot name (a processor,
                summarizer or redactor object rather than its `StageConfig` or
                `SummarizerConfig`), named by its field.
        """
        return write_table({f.name: getattr(self, f.name) for f in dataclasses.fields(self)})

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Policy:
        """The policy in the TOML file at `path` (see `from_toml`)."""
        return cls.from_toml(Path(path))
