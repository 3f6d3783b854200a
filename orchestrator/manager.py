"""`ContextManager`: the one object a user holds.

It keeps the pristine record (`raw`), the working projection the model is shown
(`working`), the trigger state and one renderer per format (so the render cache works
across calls). On every ingest and before each render it evaluates the triggers; when
one fires, or the request would not fit the budget, it runs the pipeline, cheapest stage
first, until the rendered request fits.

```python
manager = ContextManager(format="anthropic", budget=50_000, profile="coding")
manager.add_system("You are a careful coding agent.")
manager.add_user("Fix the failing test in tests/test_io.py.")
result = await manager.render()  # or manager.render_sync() outside an event loop
client.messages.create(model=..., max_tokens=..., **result.payload)
manager.report_usage(response.usage.input_tokens)
```

Inside `async with manager:` compaction that is due but not yet needed (a soft trigger:
the request still fits) runs in the background, with a time limit, while the agent goes
on ingesting and rendering; a request that does not fit waits for it (see `render`).
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from typing import Any

import anyio
from anyio.abc import TaskGroup
from pydantic import BaseModel, ConfigDict

import orchestrator._own  # noqa: F401  (checks the packages when __init__.py was replaced)
from context_graph.errors import (
    ConfigurationError,
    IngestError,
    SourceLocation,
)
from context_graph.graph.context_graph import ContextGraph
from context_graph.graph.events import AgentEvent
from context_graph.graph.nodes import Node
from context_graph.render import Renderer, RenderResult
from context_graph.tokens.calibration import Calibrator
from context_graph.tokens.counting import ProviderFormat, TokenCounter
from orchestrator._manager_ingest import IngestMethods
from orchestrator.bus import EventBus
from orchestrator.compaction.background import BackgroundMethods
from orchestrator.compaction.floor_methods import FloorMethods
from orchestrator.compaction.guards import GuardConfig, GuardState
from orchestrator.compaction.pipeline import PipelineRun
from orchestrator.compaction.triggers import Firing, TriggerConfig, TriggerState
from orchestrator.options import (
    check_budget,
    check_cache_breakpoints,
    check_format,
    check_options,
    check_pipelines,
    check_ratio,
    check_redactor,
    check_timeout,
    default_pipeline,
    profile_defaults,
    resolve_profile,
)
from orchestrator.persistence.protocol import SessionStore
from orchestrator.persistence.sqlite_store import SQLiteStore
from orchestrator.profiles import Profile
from orchestrator.working.buffer import WorkingGraph
from processors.base import Processor, Summarizer
from processors.redact import SecretRedactor

__all__ = ["ContextManager", "ManagerStats", "default_pipeline"]


class ManagerStats(BaseModel):
    """A manager's figures at one moment."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    raw_tokens: int
    """Content tokens of the pristine record's transcript."""
    working_tokens: int
    """Content tokens of the working view."""
    units: int
    """Interaction units in the working view."""
    proposals_applied: int
    """Proposals applied since the manager was made."""
    proposals_rejected: int
    """Proposals refused, plus processor runs that failed."""
    last_render_tokens: int | None
    """Tokens of the last rendered request (`None` before the first render)."""
    last_render_timed_out: bool
    """`compaction_timeout` cut short the compaction the last render ran; it rendered
    what fit without it."""


class ContextManager(IngestMethods, BackgroundMethods, FloorMethods):
    """Feeds agent events into a context graph and renders a request that fits.

    Args:
        format: The default provider format: `openai`, `anthropic` or `gemini`.
        budget: The default token budget of a render; `None` for no limit.
        profile: A `Profile`, a built-in profile's name (`coding`, `service`, `chat`) or
            the path of a TOML profile: its triggers, stages and `compact_to`. Options
            given explicitly (`triggers=`, `pipeline=`, `compact_to=`) override it.
        counter: The token counter; the offline tiktoken counter by default.
        triggers: When compaction runs; `TriggerConfig()` by default.
        pipeline: The default pipeline: processors run in order (cheapest first);
            `default_pipeline()` when `None`.
        pipelines: More pipelines by name, for the triggers that name them (in
            `TriggerConfig.pipelines` or a node's `TriggerSpec.pipeline`). A node trigger's
            pipeline runs on the nodes that fired; a graph-level one on the whole view.
        summarizer: Given to processors (the history summarizer writes with it); the
            deterministic extractive brief when `None`.
        compact_to: When compaction runs to make a request fit, it goes on until the
            request is at most this share of the budget (default 0.7). The headroom lets
            the next turns render without compacting again, so the rendered prefix stays
            byte-stable between compactions and the provider's prompt cache keeps
            working; 1.0 compacts only just enough, every turn.
        guards: Loop guards (minimum progress, failure limit, re-summarize cap, and a
            floor below which trigger-driven compaction does not run); `GuardConfig()`
            by default. The floor does not apply when a request does not fit its budget
            at all; manual `compact()` bypasses every guard.
        background_timeout: Seconds a background compaction may run before it is
            cancelled (nothing of an unfinished stage is applied); `None` for no limit.
        compaction_timeout: Seconds a compaction in the foreground (the pipeline run of
            a render or of `compact()`, and the floor's truncation after it) may run
            before it is cancelled in the same way; the render then goes on with what
            fits, and the bus reports `compaction_timed_out`. `None` for no limit.
        redact_secrets: Replace credentials (API keys, tokens, private keys, passwords)
            with typed placeholders in what the model is shown: `True` for a
            `SecretRedactor()` with its defaults, or a configured `SecretRedactor`. Every
            new node is scanned before a render and in every view a processor is given,
            also mid-run (so a model summarizer never sees a secret either); the
            pristine record keeps the original. Off by default: a redacted value the
            agent needs (a test fixture's key) is lost to it, so turn it on where
            secrets may appear.
        cache_breakpoints: Mark Anthropic prompt-cache breakpoints (`cache_control` on
            the system prompt, the end of the part unchanged since the previous render,
            and the last message; at most 4 marks), as `Renderer(cache_breakpoints=True)`
            does. Anthropic only, like the `Renderer`: refused with another `format`,
            and a `render(format=...)` in another format raises `ConfigurationError`.
        clock: Seconds since the epoch, for the audit log; injectable for tests.

    Raises:
        ConfigurationError: an option is invalid.
    """

    def __init__(
        self,
        *,
        format: ProviderFormat = "openai",
        budget: int | None = None,
        profile: Profile | str | None = None,
        counter: TokenCounter | None = None,
        triggers: TriggerConfig | None = None,
        pipeline: Sequence[Processor] | None = None,
        pipelines: Mapping[str, Sequence[Processor]] | None = None,
        summarizer: Summarizer | None = None,
        compact_to: float | None = None,
        guards: GuardConfig | None = None,
        background_timeout: float | None = 120.0,
        compaction_timeout: float | None = 60.0,
        redact_secrets: bool | SecretRedactor = False,
        cache_breakpoints: bool = False,
        clock: Callable[[], float] = time.time,
    ) -> None:
        chosen = profile_defaults(
            resolve_profile(profile),
            {
                "triggers": triggers,
                "pipeline": pipeline,
                "pipelines": pipelines,
                "compact_to": compact_to,
            },
        )
        ratio = chosen.get("compact_to")
        self._compact_to = check_ratio(0.7 if ratio is None else ratio, "compact_to")
        self._format = check_format(format, "ContextManager")
        self._budget = check_budget(budget, "ContextManager")
        self._cache_breakpoints = check_cache_breakpoints(cache_breakpoints, self._format)
        check_options(counter, chosen.get("triggers"), summarizer, clock)
        config = chosen.get("triggers")
        self._config: TriggerConfig = config if config is not None else TriggerConfig()
        self._pipelines = check_pipelines(
            chosen.get("pipeline"), chosen.get("pipelines"), self._config
        )
        self._summarizer = summarizer
        self._clock = clock
        self._background_timeout = check_timeout(background_timeout, "background_timeout")
        self._compaction_timeout = check_timeout(compaction_timeout, "compaction_timeout")
        self._redactor = check_redactor(redact_secrets)
        self._scanned: set[str] = set()
        self._store: SessionStore | None = None
        self._saved: dict[str, str] = {}
        self._raw = ContextGraph(counter=counter)
        self._working = WorkingGraph(self._raw, clock=clock)
        self._bus = EventBus(sender=self)
        self._state = TriggerState()
        if guards is not None and not isinstance(guards, GuardConfig):
            msg = f"ContextManager: guards must be a GuardConfig, got {type(guards).__name__}"
            raise ConfigurationError(msg)
        self._guards = guards if guards is not None else GuardConfig()
        self._guard_state = GuardState()
        self._calibrator = Calibrator()
        self._renderers: dict[ProviderFormat, Renderer] = {}
        self._applied = 0
        self._rejected = 0
        self._last: RenderResult | None = None
        self._last_timed_out = False
        # Nodes ingested since the last request was rendered: the model has not seen them.
        self._unsent: set[str] = set()
        # Firings seen on ingest that no pipeline run has handled yet.
        self._pending: list[Firing] = []
        # One pipeline run at a time: a render that must compact waits for the run in
        # progress instead of racing it over the same nodes. The event is made inside
        # the running loop, so the manager works under asyncio and trio alike.
        self._busy: anyio.Event | None = None
        self._exit_stack: AsyncExitStack | None = None
        self._group: TaskGroup | None = None
        self._failure: Exception | None = None

    @classmethod
    def open(
        cls, path: str | os.PathLike[str], *, durable: bool = True, **options: Any
    ) -> ContextManager:
        """A manager whose session lives in the SQLite file `path`, resumed if it exists.

        The file keeps the pristine record, every applied edit with its audit entry, and
        the manager's state (triggers, guards, counters, calibration), so a restarted
        process continues exactly where the last one stopped. One process writes a
        session file at a time: a second `open` of the same file is refused.

        Args:
            path: The session file (created when missing; its directory must exist).
            durable: Sync every write to disk; `False` survives a crash of the process
                but may lose the last writes on a power cut.
            **options: The constructor's options. The processors, triggers and budget
                are not stored: pass the same ones when you reopen.

        Raises:
            StoreLockedError: another manager or process has the file open.
            StoreFormatError: the file is not a session file this version reads.
            StoreCorruptError: the journal or the state does not load (nothing is
                changed in the file).
            StoreError: the directory is missing, or the counter differs from the one
                the session was recorded with.
            ConfigurationError: an option is invalid.
        """
        manager = cls(**options)
        store = SQLiteStore.open(path, counter=options.get("counter"), durable=durable)
        try:
            session = store.restore(clock=manager._clock)
            manager._raw, manager._working = session.raw, session.working
            manager._load_state(store, session.state)
        except BaseException:
            store.close()
            raise
        manager._store = store
        return manager

    # -- what the user reads -------------------------------------------------------------

    @property
    def raw(self) -> ContextGraph:
        """The pristine record (append-only; read it, do not edit it)."""
        return self._raw

    @property
    def working(self) -> WorkingGraph:
        """The working projection the model is shown."""
        return self._working

    @property
    def bus(self) -> EventBus:
        """The signals to observe the manager with (`bus.connect(name, receiver)`)."""
        return self._bus

    def expand(self, node_id: str) -> tuple[Node, ...]:
        """The original pristine nodes behind any node (a summary, a masked copy)."""
        return self._working.expand(node_id)

    def stats(self) -> ManagerStats:
        """The manager's figures now."""
        return ManagerStats(
            raw_tokens=self._raw.total_tokens,
            working_tokens=self._working.total_tokens,
            units=len(self._working.units()),
            proposals_applied=self._applied,
            proposals_rejected=self._rejected,
            last_render_tokens=None if self._last is None else self._last.tokens,
            last_render_timed_out=self._last_timed_out,
        )

    # -- ingest (the add_* methods come from IngestMethods) ----------------------------

    def _check_batch(self, batch: Sequence[AgentEvent]) -> None:
        """Refuse a batch whose node triggers name a pipeline this manager lacks.

        Raises:
            IngestError: naming the event's index, the trigger and the pipelines there are.
        """
        for index, event in enumerate(batch):
            for spec in getattr(event, "triggers", ()):
                if spec.pipeline is not None and spec.pipeline not in self._pipelines:
                    names = ", ".join(map(repr, self._pipelines))
                    msg = (
                        f"trigger `{spec.kind}` names pipeline {spec.pipeline!r}, which this "
                        f"manager does not have (it has {names})"
                    )
                    raise IngestError(msg, SourceLocation(index=index))

    def _on_ingest(self) -> None:
        """Evaluate the triggers against the default budget after every ingest.

        What fires is handled at once in the background when the manager runs inside
        `async with`, and by the next render otherwise.
        """
        before = self._state
        firings = self._fire(self._budget)
        if firings:
            self._pending.extend(firings)
            if self._group is not None:
                self._start_background()
        if firings or (self._state is not before and self._state != before):
            self._save_state()

    def mark_boundary(self, label: str) -> None:
        """Mark the end of a task; the `boundary` trigger fires at once.

        Inside `async with` the pipeline runs in the background; otherwise at the next
        render.
        """
        self._state = self._state.mark_boundary(label)
        self._on_ingest()

    # -- render --------------------------------------------------------------------------

    async def render(
        self, *, format: ProviderFormat | None = None, budget: int | None = None
    ) -> RenderResult:
        """Compact when due, then render the working view as a request body.

        Compaction a trigger asked for runs first, in the foreground; inside
        `async with manager:` it runs in the background instead and the request is
        rendered at once, unless the request does not fit: then the render waits for
        the compaction in progress and compacts further itself if still needed.

        Compaction the render runs itself stops after `compaction_timeout` seconds;
        the request is then rendered from what the finished stages left (dropping old
        units to fit), and `stats().last_render_timed_out` says so.

        Args:
            format: The provider format; the manager's own by default.
            budget: The token budget; the manager's own by default.

        Raises:
            BudgetExceededError: even compacted, the floor (system, pinned nodes, first
                request, latest turn and after) does not fit.
            ConfigurationError: an unknown format or a budget that is not positive.
        """
        fmt, limit = self._render_options(format, budget)
        if self._failure is not None:
            failure, self._failure = self._failure, None
            raise failure
        await self._redact_new()
        renderer = self._renderer(fmt)
        due = self._due(limit)
        timed_out = False
        if limit is not None and not self._fits(renderer, limit):
            if self._busy is not None:
                await self._busy.wait()  # the background run may make it fit
            if not self._fits(renderer, limit):
                timed_out = (await self._run(limit, None, renderer, overflow=True)).timed_out
            if not self._fits(renderer, limit):
                timed_out = await self._shrink_floor(renderer, limit) or timed_out
        elif due and self._group is not None:
            self._start_background()
        elif due:
            timed_out = (await self._run(limit, None, renderer)).timed_out
        await self._redact_new()  # what the compaction wrote, too
        return self._finish(renderer, fmt, limit, timed_out=timed_out)

    def _render_options(
        self, format: ProviderFormat | None, budget: int | None
    ) -> tuple[ProviderFormat, int | None]:
        fmt = self._format if format is None else check_format(format, "render")
        return fmt, self._budget if budget is None else check_budget(budget, "render")

    def _due(self, limit: int | None) -> bool:
        """Evaluate the triggers for this render; whether any firing waits to be handled."""
        self._pending.extend(self._fire(limit))
        return bool(self._pending)

    def _finish(
        self,
        renderer: Renderer,
        fmt: ProviderFormat,
        limit: int | None,
        *,
        timed_out: bool = False,
    ) -> RenderResult:
        result = renderer.render(self._working, budget=limit)
        self._last, self._last_timed_out = result, timed_out
        self._unsent.clear()
        self._bus.emit("render_done", format=fmt, tokens=result.tokens, budget=limit)
        self._save_state()
        return result

    def render_sync(
        self, *, format: ProviderFormat | None = None, budget: int | None = None
    ) -> RenderResult:
        """The blocking twin of `render`, for code that runs no event loop.

        Raises:
            RuntimeError: called from inside a running event loop (use `await render()`).
        """
        try:
            anyio.get_current_task()
        except anyio.NoEventLoopError:
            return self._render_blocking(format, budget)
        msg = (
            "render_sync() was called inside a running event loop; "
            "use `await manager.render(...)` there instead"
        )
        raise RuntimeError(msg)

    def _render_blocking(self, format: ProviderFormat | None, budget: int | None) -> RenderResult:
        """Render without an event loop when nothing has to run; else `anyio.run`.

        Most calls compact nothing, and starting an event loop costs about a
        millisecond, more than the render itself.
        """
        if self._failure is None and self._redactor is None:
            fmt, limit = self._render_options(format, budget)
            renderer = self._renderer(fmt)
            if not self._due(limit) and (limit is None or self._fits(renderer, limit)):
                return self._finish(renderer, fmt, limit)
        return anyio.run(functools.partial(self.render, format=format, budget=budget))

    async def compact(self, instructions: str | None = None) -> PipelineRun:
        """Run the whole pipeline now, whatever the triggers say.

        A run in progress (a background compaction) ends first. The run stops after
        `compaction_timeout` seconds (`PipelineRun.timed_out`).

        Args:
            instructions: Guidance for the summarizer (`"keep the DB schema"`).

        Returns:
            What the run did: stages run, proposals applied and rejected.
        """
        self._state = self._state.request_manual()
        self._fire(self._budget)
        return await self._run(self._budget, instructions, None, manual=True)

    def report_usage(self, prompt_tokens: int) -> float:
        """Report the provider's prompt tokens for the last render; return the new factor.

        The calibrator learns how the provider counts, and later renders fit the budget
        by the provider's count.

        Raises:
            ConfigurationError: nothing was rendered yet, or `prompt_tokens` is not a
                positive int.
        """
        if isinstance(prompt_tokens, bool) or not isinstance(prompt_tokens, int):
            msg = f"report_usage: `prompt_tokens` must be an int, got {prompt_tokens!r}"
            raise ConfigurationError(msg)
        if self._last is None:
            msg = "report_usage: nothing was rendered yet; call render() before reporting"
            raise ConfigurationError(msg)
        factor = self._calibrator.observe(self._last.tokens, prompt_tokens)
        usage = {"prompt_tokens": prompt_tokens, "estimated": self._last.tokens}
        self._bus.emit("usage_reported", usage=usage, factor=factor)
        self._save_state()
        return factor
