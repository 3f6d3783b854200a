"""Hooks around a compaction run: a memory flush, instructions and deferral before, a report after.

A hook is user code the manager calls, sync or async (a coroutine function is awaited):

```python
@manager.hooks.before_compaction
def flush(plan: PreCompaction) -> None:
    plan.pin_note("The customer id is C-2291; never change it.")  # kept through every run
    plan.add_instructions("Keep the database schema decisions.")
    if plan.deferrable and plan.reasons == ("boundary",):
        plan.defer("the task is not over yet")


@manager.hooks.after_compaction
async def report(done: PostCompaction) -> None:
    print(done.tokens_before, "->", done.tokens_after, done.summaries)
```

Before a run the hooks see a `PreCompaction`: why it runs, the view's tokens, the budget
and the nodes it may compact. What they ask for is collected and applied only once every
hook returned: the notes are ingested as pinned `Note` nodes (so no processor removes
them, and the session store keeps them like any node), the instructions are added to the
summarizer's, and a deferral holds the run back. A hook that raises makes the call raise
`HookError` with nothing of any hook applied: the run does not happen, what fired stays
due, and the graph is as before. A deferral is honoured only for a run the request does
not need (`soft` and `background`): a `manual` run is the caller's explicit `compact()`,
and an `overflow` run is what lets the request fit its budget; the bus says so
(`compaction_hook_deferred` with `honoured=False`).

After a run the hooks see a `PostCompaction`: the run, the tokens before and after, the
nodes that left the view and those that entered it (the summaries among them). A hook
that raises there makes the call raise `HookError`; the run stays applied.

The hooks are code, not state: a reopened session has none until they are registered
again (the notes they pinned are in the record).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from context_graph.errors import ConfigurationError, HookError
from context_graph.graph.context_graph import ContextGraph
from context_graph.graph.events import Note, make_event
from orchestrator.bus import EventBus
from orchestrator.compaction.pipeline import PipelineRun
from orchestrator.compaction.plan import RunMode
from orchestrator.compaction.triggers import Firing
from orchestrator.working import WorkingGraph

__all__ = [
    "AfterHook",
    "BeforeHook",
    "CompactionHooks",
    "PostCompaction",
    "PreCompaction",
    "Prepared",
]

#: Runs the request does not need, which a hook may hold back.
_DEFERRABLE = frozenset({RunMode.SOFT, RunMode.BACKGROUND})


class PreCompaction:
    """What a compaction is about to do, and what the hooks ask of it.

    Read `trigger`, `reasons`, `tokens`, `budget`, `targets` and `node_ids`; call
    `pin_note`, `add_instructions` and `defer`. Nothing asked is applied until every
    hook has returned.
    """

    def __init__(
        self,
        mode: RunMode,
        firings: Sequence[Firing],
        tokens: int,
        budget: int | None,
        node_ids: tuple[str, ...],
    ) -> None:
        self._mode = mode
        self._reasons = tuple(dict.fromkeys(f.name for f in firings))
        aimed = [f for f in firings if f.targets]
        # Manual and overflow runs go on to the whole view, whatever aimed them.
        whole = not aimed or len(aimed) < len(firings) or mode not in _DEFERRABLE
        targets = None if whole else frozenset(t for f in aimed for t in f.targets)
        self._targets = targets
        self._tokens = tokens
        self._budget = budget
        self._node_ids = node_ids if targets is None else tuple(i for i in node_ids if i in targets)
        self.notes: list[str] = []
        """The notes asked for so far, in order."""
        self.instructions: list[str] = []
        """The summarizer instructions asked for so far, in order."""
        self.deferrals: list[str] = []
        """The reasons given by the hooks that deferred the run."""

    @property
    def trigger(self) -> str:
        """Why it runs: `manual`, `overflow`, `soft` or `background` (`RunMode`)."""
        return self._mode.value

    @property
    def automatic(self) -> bool:
        """Whether the engine started it (every trigger but the caller's `compact()`)."""
        return self._mode is not RunMode.MANUAL

    @property
    def deferrable(self) -> bool:
        """Whether `defer` holds it back: not for `manual` nor for `overflow` runs."""
        return self._mode in _DEFERRABLE

    @property
    def reasons(self) -> tuple[str, ...]:
        """The names of the triggers that fired for it (`budget_soft`, `boundary`, ...)."""
        return self._reasons

    @property
    def tokens(self) -> int:
        """The content tokens of the working view now."""
        return self._tokens

    @property
    def budget(self) -> int | None:
        """The budget the run works to (`None`: no limit)."""
        return self._budget

    @property
    def targets(self) -> frozenset[str] | None:
        """The node ids node triggers aimed it at; `None` when it runs on the whole view."""
        return self._targets

    @property
    def node_ids(self) -> tuple[str, ...]:
        """The ids of the view's nodes it may compact, in order (pinned ones it leaves)."""
        return self._node_ids

    def pin_note(self, text: str) -> None:
        """Keep `text` as a pinned note, added before the run (a memory flush).

        Raises:
            ConfigurationError: `text` is not a non-empty string; nothing was asked.
        """
        self.notes.append(_text(text, "pin_note"))

    def add_instructions(self, text: str) -> None:
        """Add `text` to what the summarizer is told in this run.

        Raises:
            ConfigurationError: `text` is not a non-empty string; nothing was asked.
        """
        self.instructions.append(_text(text, "add_instructions"))

    def defer(self, reason: str) -> None:
        """Hold the run back; what fired stays due and the next render asks again.

        Honoured only when `deferrable`; otherwise the run goes on and the bus says why.

        Raises:
            ConfigurationError: `reason` is not a non-empty string; nothing was asked.
        """
        self.deferrals.append(_text(reason, "defer"))


def _text(value: object, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        msg = f"PreCompaction.{where}: expected a non-empty string, got {value!r}"
        raise ConfigurationError(msg)
    return value


@dataclass(frozen=True)
class PostCompaction:
    """What a finished compaction changed."""

    trigger: str
    """Why it ran: `manual`, `overflow`, `soft` or `background`."""
    run: PipelineRun
    """What the run did: stages, proposals applied and refused, whether it timed out."""
    tokens_before: int
    """The working view's content tokens before the run (after the flushed notes)."""
    tokens_after: int
    """The working view's content tokens after it."""
    compacted: tuple[str, ...]
    """The ids of the nodes that left the view, in their old order."""
    added: tuple[str, ...]
    """The ids of the nodes that entered the view (summaries, masked copies), in order."""
    summaries: tuple[str, ...] = field(default=())
    """Those of `added` that are summaries."""


BeforeHook = Callable[[PreCompaction], Awaitable[None] | None]
AfterHook = Callable[[PostCompaction], Awaitable[None] | None]
_Hook = TypeVar("_Hook", bound=Callable[..., Any])


@dataclass(frozen=True)
class Prepared:
    """What the hooks decided for one run, and the view before it."""

    deferred: bool
    instructions: str | None
    tokens: int
    view_ids: tuple[str, ...]


class CompactionHooks:
    """The hooks of one manager, and their calls around each run (`manager.hooks`).

    Args:
        working: The working graph the runs compact.
        bus: Where each hook call, deferral and flush is reported.
        on_ingest: Told the ids of the notes a flush added (the manager counts them
            as unsent).
    """

    def __init__(
        self,
        working: WorkingGraph,
        bus: EventBus,
        on_ingest: Callable[[tuple[str, ...]], None] = lambda ids: None,
    ) -> None:
        self._working = working
        self._bus = bus
        self._on_ingest = on_ingest
        self._before: list[BeforeHook] = []
        self._after: list[AfterHook] = []

    # -- registration --------------------------------------------------------------------

    def before_compaction(self, hook: _Hook) -> _Hook:
        """Call `hook(PreCompaction)` before every run; return it (a decorator).

        Raises:
            ConfigurationError: `hook` is not callable.
        """
        self._before.append(_callable(hook, "before_compaction"))
        return hook

    def after_compaction(self, hook: _Hook) -> _Hook:
        """Call `hook(PostCompaction)` after every run that was not deferred; return it.

        Raises:
            ConfigurationError: `hook` is not callable.
        """
        self._after.append(_callable(hook, "after_compaction"))
        return hook

    def remove(self, hook: Callable[..., Any]) -> None:
        """Stop calling `hook` (no error if it was not registered)."""
        self._before = [h for h in self._before if h is not hook]
        self._after = [h for h in self._after if h is not hook]

    # -- calls around a run --------------------------------------------------------------

    async def before(
        self,
        mode: RunMode,
        firings: Sequence[Firing],
        budget: int | None,
        instructions: str | None,
    ) -> Prepared:
        """Call the before-hooks, then apply what they asked, all of it or nothing.

        Raises:
            HookError: a hook raised; nothing any hook asked was applied.
        """
        view_ids = self._working.current_ids()
        # Only a hook reads the movable nodes: without one, the scan of the view is moot.
        movable = self._movable(view_ids) if self._before else ()
        plan = PreCompaction(mode, firings, self._working.total_tokens, budget, movable)
        for hook in self._before:
            await _call(hook, plan, "before_compaction")
            self._bus.emit("compaction_hook_ran", hook=hook, stage="before", trigger=plan.trigger)
        deferred = self._deferred(plan)
        if not deferred and plan.notes:
            self._flush(plan.notes)
            view_ids = self._working.current_ids()
        told = [t for t in (instructions, *plan.instructions) if t]
        return Prepared(
            deferred=deferred,
            instructions="\n\n".join(told) if told else None,
            tokens=self._working.total_tokens,
            view_ids=view_ids,
        )

    def changes(self, mode: RunMode, prepared: Prepared, run: PipelineRun) -> PostCompaction:
        """What the run changed in the view."""
        now = self._working.current_ids()
        before, after = set(prepared.view_ids), set(now)
        added = tuple(i for i in now if i not in before)
        return PostCompaction(
            trigger=mode.value,
            run=run,
            tokens_before=prepared.tokens,
            tokens_after=self._working.total_tokens,
            compacted=tuple(i for i in prepared.view_ids if i not in after),
            added=added,
            summaries=tuple(i for i in added if self._working[i].kind == "summary"),
        )

    async def after(self, done: PostCompaction) -> None:
        """Call the after-hooks with what the run changed.

        Raises:
            HookError: a hook raised; the run stays applied.
        """
        for hook in self._after:
            await _call(hook, done, "after_compaction")
            self._bus.emit("compaction_hook_ran", hook=hook, stage="after", trigger=done.trigger)

    def _movable(self, view_ids: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(i for i in view_ids if not self._working[i].pinned)

    def _deferred(self, plan: PreCompaction) -> bool:
        if not plan.deferrals:
            return False
        reason = "; ".join(plan.deferrals)
        if plan.deferrable:
            self._bus.emit(
                "compaction_hook_deferred", trigger=plan.trigger, reason=reason, honoured=True
            )
            return True
        why = (
            "the request does not fit its budget without it"
            if plan.trigger == "overflow"
            else "compact() was called explicitly"
        )
        self._bus.emit(
            "compaction_hook_deferred",
            trigger=plan.trigger,
            reason=f"{reason} (not deferred: {why})",
            honoured=False,
        )
        return False

    def _flush(self, notes: Sequence[str]) -> None:
        """Ingest the notes as pinned nodes, in one batch, before the run."""
        events = [make_event(Note, content=text, meta={"source": "memory_flush"}) for text in notes]
        ids = self._pristine.ingest(events)
        self._on_ingest(ids)
        self._bus.emit("memory_flushed", node_ids=ids, notes=tuple(notes))

    @property
    def _pristine(self) -> ContextGraph:
        return self._working.pristine


def _callable(hook: _Hook, where: str) -> _Hook:
    if not callable(hook):
        msg = f"hooks.{where}: expected a function, got {hook!r}"
        raise ConfigurationError(msg)
    return hook


async def _call(hook: Callable[[Any], Any], argument: object, where: str) -> None:
    """Call a sync or async hook; its failure becomes a `HookError` naming it."""
    try:
        result = hook(argument)
        if inspect.isawaitable(result):
            await result
    except Exception as exc:
        name = getattr(hook, "__qualname__", repr(hook))
        raise HookError(where, name, f"{type(exc).__name__}: {exc}") from exc
