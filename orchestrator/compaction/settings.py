"""What a compaction reads of the manager's settings, declared here rather than imported.

The manager hands its options to the compactor and the background runner; they read them
through these protocols, so compaction/ does not import the module that holds the
options (which imports compaction/'s trigger and guard configs): the two folders would
import each other (issue 32). Any object with these read-only attributes will do.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol

from context_graph.tokens.counting import ProviderFormat
from orchestrator.compaction.guards import GuardConfig
from orchestrator.compaction.triggers import TriggerConfig
from processors.base import Processor, Summarizer

__all__ = ["BackgroundSettings", "CompactionSettings"]


class BackgroundSettings(Protocol):
    """The request a background run compacts for when it is given none."""

    @property
    def format(self) -> ProviderFormat:
        """The wire format of the manager's requests."""

    @property
    def budget(self) -> int | None:
        """The manager's token budget (`None`: no budget)."""


class CompactionSettings(Protocol):
    """What the compactor reads: triggers, pipelines, guards, target, timeouts, clock."""

    @property
    def triggers(self) -> TriggerConfig:
        """When a run starts, and which pipeline each trigger runs."""

    @property
    def pipelines(self) -> Mapping[str, tuple[Processor, ...]]:
        """The stages of each named pipeline."""

    @property
    def default_stages(self) -> tuple[Processor, ...]:
        """The stages of the triggers' default pipeline."""

    @property
    def summarizer(self) -> Summarizer | None:
        """The model summarizer the stages are given, if any."""

    @property
    def compact_to(self) -> float:
        """The share of the budget a run compacts down to."""

    @property
    def guards(self) -> GuardConfig:
        """The guards that stop a run that costs more than it saves."""

    @property
    def background_timeout(self) -> float | None:
        """Seconds a background run may take (`None`: no limit)."""

    @property
    def compaction_timeout(self) -> float | None:
        """Seconds a foreground run may take (`None`: no limit)."""

    @property
    def clock(self) -> Callable[[], float]:
        """The time source of timeouts and guards."""

    @property
    def expand_hints(self) -> bool:
        """Whether what a run writes names the id to pass `context_expand`."""
