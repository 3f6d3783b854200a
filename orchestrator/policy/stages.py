"""A policy's declarative parts: stages by registry name, and a summarizer by kind.

A `StageConfig` names a processor and its constructor options; it builds a new processor
each time, so a policy made of stages hands every manager processors of its own. A
`SummarizerConfig` does the same for the summarizer. Both have a TOML form
(`orchestrator.policy.table`).

Every mistake raises `ConfigurationError` naming its place: the stage index and processor
for a processor that is unknown or refuses its options.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from context_graph.errors import ConfigurationError
from processors import registry
from processors.base import Processor, Summarizer
from processors.summarize import AnthropicSummarizer, ExtractiveSummarizer, OpenAISummarizer
from processors.summarize.adapters.options import SummarizerVendor

__all__ = ["StageConfig", "SummarizerConfig", "build_stages", "key_path"]

_FROZEN = ConfigDict(frozen=True, extra="forbid")


def key_path(loc: Sequence[int | str]) -> str:
    """A pydantic location as a TOML key path: `stages[1].options`."""
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path or "policy"


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


class SummarizerConfig(BaseModel):
    """A summarizer by kind and its constructor options, built anew for every manager.

    `extractive` is the deterministic offline brief (`ExtractiveSummarizer`);
    `anthropic` and `openai` call a model (`AnthropicSummarizer`, `OpenAISummarizer`,
    with the `model` option; their SDKs are optional extras).
    """

    model_config = _FROZEN

    kind: Literal["extractive", SummarizerVendor]
    """Which summarizer: the extractive one, or the SDK summarizer of a vendor."""
    options: Mapping[str, Any] = Field(default_factory=dict)
    """Keyword arguments for its constructor (`model`, `max_tokens`, ...)."""

    def build(self) -> Summarizer:
        """A new summarizer of this kind with `options`.

        Raises:
            ConfigurationError: it refuses the options (an unknown keyword, a bad value,
                a missing SDK).
        """
        kinds: dict[str, Callable[..., Summarizer]] = {
            "extractive": ExtractiveSummarizer,
            **{sdk.provider: sdk for sdk in (AnthropicSummarizer, OpenAISummarizer)},
        }
        try:
            return kinds[self.kind](**self.options)
        except ConfigurationError as exc:
            msg = f"summarizer {self.kind!r}: {exc}"
            raise ConfigurationError(msg) from exc
        except (TypeError, ValueError, ImportError) as exc:
            msg = f"summarizer {self.kind!r}: {type(exc).__name__}: {exc}"
            raise ConfigurationError(msg) from exc


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
