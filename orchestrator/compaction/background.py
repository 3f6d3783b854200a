"""Background compaction for `ContextManager`: `async with manager:` and closing.

Inside `async with`, compaction that a trigger asked for while the request still fits
runs in a task of the manager's own task group, under `background_timeout`; a failure
there is kept and raised by the next render, never lost and never thrown into the
caller's block from a task it did not await.
"""

from __future__ import annotations

import logging
from contextlib import AsyncExitStack
from types import TracebackType
from typing import Self

import anyio
from anyio.abc import TaskGroup

from context_graph.tokens.counting import ProviderFormat
from orchestrator.compaction.compactor import CompactionMethods

__all__ = ["BackgroundMethods"]

logger = logging.getLogger("context_graph")


class BackgroundMethods(CompactionMethods):
    """Background runs and the manager's life cycle; mixed into `ContextManager`."""

    _format: ProviderFormat
    _budget: int | None
    _exit_stack: AsyncExitStack | None
    _group: TaskGroup | None
    _failure: Exception | None

    async def __aenter__(self) -> Self:
        """Start background compaction: soft triggers no longer delay a render.

        Raises:
            RuntimeError: the manager is already inside an `async with`.
        """
        if self._exit_stack is not None:
            msg = "ContextManager: already entered; use one `async with manager:` at a time"
            raise RuntimeError(msg)
        stack = AsyncExitStack()
        self._group = await stack.enter_async_context(anyio.create_task_group())
        self._exit_stack = stack
        if self._pending:
            self._start_background()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Cancel background compaction and wait until it stopped.

        A stage cut short applies nothing (proposals are applied whole, never while a
        processor runs), so the graph stays as the last applied proposal left it. An
        in-memory manager keeps working afterwards, compacting in the foreground again;
        a manager from `open` also closes its session file (see `close`).
        """
        stack, self._exit_stack = self._exit_stack, None
        group, self._group = self._group, None
        if stack is not None and group is not None:
            group.cancel_scope.cancel()
            await stack.aclose()
        self.close()

    def close(self) -> None:
        """Save the state and close the session file (a manager from `open`).

        Without a session file there is nothing to close; the manager keeps working.
        With one, later ingests and compactions are refused with `StoreError`. Closing
        twice is harmless.

        Raises:
            RuntimeError: background compaction is running (use `await aclose()`).
        """
        if self._group is not None:
            msg = "close() inside `async with manager:`; leave the block or `await aclose()`"
            raise RuntimeError(msg)
        store = self._store
        if store is None or store.closed:
            return
        self._save_state()
        store.close()

    def _start_background(self) -> None:
        group = self._group
        if group is None or self._busy is not None:
            return  # the run in progress re-evaluates when it ends
        group.start_soon(self._background_run)

    async def _background_run(self) -> None:
        renderer = self._renderer(self._format)
        try:
            await self._run(self._budget, None, renderer, background=True)
        except Exception as exc:
            # Not raised here: it would tear down the caller's `async with` from a task
            # they never awaited. The next render raises it instead, so it is not lost.
            logger.exception("background compaction failed")
            self._failure = exc
            return
        if self._pending and self._group is not None:
            self._start_background()  # fired while this run worked
