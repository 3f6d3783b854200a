"""`BackgroundRunner`: compaction in a task of the manager's own, inside `async with`.

Compaction that a trigger asked for while the request still fits runs in a task of the
runner's task group, under `background_timeout`; a failure there is kept and raised by
the next render, never lost and never thrown into the caller's block from a task it did
not await.

The task group belongs to the event loop that entered it: a run is started only from
that loop's thread. A call from another thread (a `render_sync()` that a coroutine of
that loop makes runs on a helper thread; another thread's own loop) leaves what is due
to a foreground run of its own, and a run holds the manager's lock (`ManagerLock`), so
the other thread waits for it instead of racing it.
"""

from __future__ import annotations

import logging
import threading
from contextlib import AsyncExitStack

import anyio
from anyio.abc import TaskGroup

from orchestrator.compaction.compactor import Compactor
from orchestrator.compaction.plan import RunMode
from orchestrator.compaction.renderers import RendererCache
from orchestrator.policy.resolved import ManagerOptions
from orchestrator.sync_bridge import ManagerLock

__all__ = ["BackgroundRunner"]

logger = logging.getLogger("context_graph")


class BackgroundRunner:
    """Starts background runs of a compactor while it is entered.

    Args:
        compactor: Runs the compaction (in `RunMode.BACKGROUND`).
        renderers: The default format's renderer says when a run may stop.
        options: The default format and budget.
        lock: The manager's lock; a run holds it while it works.
    """

    def __init__(
        self,
        compactor: Compactor,
        renderers: RendererCache,
        options: ManagerOptions,
        lock: ManagerLock,
    ) -> None:
        self._compactor = compactor
        self._renderers = renderers
        self._options = options
        self._lock = lock
        self._exit_stack: AsyncExitStack | None = None
        self._group: TaskGroup | None = None
        self._thread: int | None = None
        self._scheduled = False
        self._failure: Exception | None = None

    @property
    def active(self) -> bool:
        """Whether it is entered (due compaction goes to the background)."""
        return self._group is not None

    @property
    def here(self) -> bool:
        """Whether it is entered by the event loop of the calling thread (`start` works)."""
        return self._group is not None and self._thread == threading.get_ident()

    @property
    def failed(self) -> bool:
        """Whether a background run failed since `raise_failure` last raised."""
        return self._failure is not None

    def raise_failure(self) -> None:
        """Raise the exception a background run failed with, once; nothing if none did."""
        failure, self._failure = self._failure, None
        if failure is not None:
            raise failure

    async def enter(self) -> None:
        """Open the task group; start a run at once when firings wait.

        Raises:
            RuntimeError: it is entered already.
        """
        if self._exit_stack is not None:
            msg = "ContextManager: already entered; use one `async with manager:` at a time"
            raise RuntimeError(msg)
        stack = AsyncExitStack()
        self._group = await stack.enter_async_context(anyio.create_task_group())
        self._exit_stack = stack
        self._thread = threading.get_ident()
        if self._compactor.due:
            self.start()

    async def stop(self) -> None:
        """Cancel the run in progress and wait until it stopped; it is left then.

        A stage cut short applies nothing (proposals are applied whole, never while a
        processor runs), so the graph stays as the last applied proposal left it.

        Raises:
            RuntimeError: called from another thread than the loop that entered it.
        """
        if self._group is not None and not self.here:
            msg = (
                "ContextManager: `async with manager:` is left (or `aclose()` awaited) "
                "in another thread than the event loop that entered it; leave it there"
            )
            raise RuntimeError(msg)
        stack, self._exit_stack = self._exit_stack, None
        group, self._group = self._group, None
        self._scheduled = False  # a run cancelled before it began
        if stack is not None and group is not None:
            group.cancel_scope.cancel()
            await stack.aclose()

    def start(self) -> None:
        """Start a background run, unless it is not entered here or a run is in progress.

        From another thread it starts nothing: the task group is not that thread's to
        use, and what is due waits for the next run (that thread's render runs it).
        """
        group = self._group
        if group is None or not self.here or self._scheduled or self._compactor.slot.busy:
            return  # the run in progress re-evaluates when it ends
        self._scheduled = True
        group.start_soon(self._run)

    async def _run(self) -> None:
        renderer = self._renderers.get(self._options.format)
        try:
            # Under the lock: a run that waits for another thread's call must not let
            # `start` schedule a second one meanwhile (`_scheduled`).
            async with self._lock.hold_async():
                self._scheduled = False
                await self._compactor.run(RunMode.BACKGROUND, self._options.budget, renderer)
        except Exception as exc:
            # Not raised here: it would tear down the caller's `async with` from a task
            # they never awaited. The next render raises it instead, so it is not lost.
            logger.exception("background compaction failed")
            self._failure = exc
            return
        if self._compactor.due and self._group is not None:
            self.start()  # fired while this run worked
