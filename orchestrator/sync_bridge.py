"""How one `ContextManager` is used from several threads and from sync code in a loop.

Two pieces, both about who may run the manager's code at a given moment:

- `ManagerLock`: one thread at a time uses the manager. The tasks of that thread's
  event loop share it (they interleave only at `await`, as the background compaction
  of `async with manager:` always has); another thread, or another thread's event loop,
  waits until the holder is done. A thread waits blocking; an event loop waits in a
  worker thread, so its other tasks go on meanwhile.
- `call_blocking`: the body of every `*_sync` method. Without a running event loop in
  the calling thread the work runs right there, as it always did; inside one (a
  Jupyter notebook, a sync SDK client called from a coroutine) it runs on a helper
  thread with an event loop of its own, of the same backend, while the caller waits:
  a blocking call blocks, as any sync call made from a coroutine does.

The one thing that cannot work is a blocking call from a loop whose own tasks are using
the manager right now (a background compaction awaiting its summarizer, a bus receiver
of an `await render()`): that work can only go on once the caller returns, so the call
is refused at once with a `RuntimeError` instead of hanging.
"""

from __future__ import annotations

import functools
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from concurrent.futures import Future
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar
from typing import Any, Protocol, TypeVar, cast

import anyio
import anyio.to_thread

__all__ = ["Exclusive", "ManagerLock", "call_blocking", "exclusive", "exclusive_async", "run_async"]

_T = TypeVar("_T")
_F = TypeVar("_F", bound=Callable[..., Any])
_A = TypeVar("_A", bound=Callable[..., Awaitable[Any]])

#: The backend `run_async` starts (the caller's, on a helper thread).
_backend: ContextVar[str] = ContextVar("context_graph_backend", default="asyncio")


class ManagerLock:
    """One thread at a time uses the manager; the tasks of its event loop share it.

    Re-entrant per thread: a call the holder makes from inside its own call (a bus
    receiver that ingests, `add_response` reporting usage) goes through at once.
    """

    def __init__(self) -> None:
        self._changed = threading.Condition(threading.Lock())
        self._owner: int | None = None
        self._depth = 0

    @property
    def held_here(self) -> bool:
        """Whether the calling thread (or a task of its event loop) holds it."""
        return self._owner == threading.get_ident()

    @contextmanager
    def hold(self) -> Iterator[None]:
        """Hold it for a blocking call; wait (blocking the thread) while another has it."""
        with self._changed:
            while not self._take():
                self._changed.wait()
        try:
            yield
        finally:
            self._give_back()

    @asynccontextmanager
    async def hold_async(self) -> AsyncIterator[None]:
        """Hold it for a task; wait in a worker thread while another thread has it.

        The worker only waits for the lock to be free and takes nothing, so a task
        cancelled while it waits leaves nothing held behind.
        """
        while True:
            with self._changed:
                if self._take():
                    break
            await anyio.to_thread.run_sync(self._wait_free, abandon_on_cancel=True)
        try:
            yield
        finally:
            self._give_back()

    def _take(self) -> bool:
        me = threading.get_ident()
        if self._owner is not None and self._owner != me:
            return False
        self._owner = me
        self._depth += 1
        return True

    def _give_back(self) -> None:
        with self._changed:
            self._depth -= 1
            if self._depth == 0:
                self._owner = None
                self._changed.notify_all()

    def _wait_free(self) -> None:
        with self._changed:
            while self._owner is not None:
                self._changed.wait()


def call_blocking(lock: ManagerLock, where: str, work: Callable[[], _T]) -> _T:
    """Run `work` (blocking code that may `run_async`) under `lock`, loop or no loop.

    Args:
        lock: The manager's lock, held while `work` runs.
        where: The public method's name, for the error.
        work: The call's work, run in this thread when no event loop runs here, else
            on a helper thread whose `run_async` uses this loop's backend.

    Raises:
        RuntimeError: a task of the event loop running here holds the manager.
    """
    backend = _running_backend()
    if backend is None:
        with lock.hold():
            return work()
    if lock.held_here:
        name = where.removesuffix("_sync")
        msg = (
            f"{where}() was called from a coroutine while a task of the same event loop "
            "is using this manager (a background compaction inside `async with manager:`, "
            f"or the `await manager.{name}()` a bus receiver runs in); it cannot wait for "
            f"that task without blocking it forever: use `await manager.{name}(...)` here"
        )
        raise RuntimeError(msg)
    return _on_helper_thread(lock, backend, where, work)


def run_async(function: Callable[[], Awaitable[_T]]) -> _T:
    """Run `function` in a new event loop of the backend `call_blocking` chose."""
    return anyio.run(function, backend=_backend.get())


def _running_backend() -> str | None:
    """The backend of the event loop running in this thread; `None` when none runs."""
    try:
        anyio.get_current_task()
    except anyio.NoEventLoopError:
        return None
    # Only trio or asyncio can run here (anyio's backends); trio only when imported.
    trio = sys.modules.get("trio")
    return "trio" if trio is not None and trio.lowlevel.in_trio_run() else "asyncio"


def _on_helper_thread(lock: ManagerLock, backend: str, where: str, work: Callable[[], _T]) -> _T:
    """Run `work` under `lock` on a new thread (no loop runs there); wait for its outcome."""
    outcome: Future[_T] = Future()

    def helper() -> None:
        _backend.set(backend)  # this thread's own context: set for this call only
        try:
            with lock.hold():
                result = work()
        except BaseException as exc:  # handed to the caller, who re-raises it
            outcome.set_exception(exc)
        else:
            outcome.set_result(result)

    threading.Thread(target=helper, name=f"context-graph {where}", daemon=True).start()
    return outcome.result()


class Exclusive(Protocol):
    """An object whose methods hold its lock while they run (`exclusive`)."""

    _lock: ManagerLock


def exclusive(method: _F) -> _F:
    """`method`, holding `self._lock` while it runs (blocking while another thread has it)."""

    @functools.wraps(method)
    def locked(self: Exclusive, *args: Any, **kwargs: Any) -> Any:
        with self._lock.hold():
            return method(self, *args, **kwargs)

    return cast("_F", locked)


def exclusive_async(method: _A) -> _A:
    """The coroutine function `method`, holding `self._lock` while it runs (`hold_async`)."""

    @functools.wraps(method)
    async def locked(self: Exclusive, *args: Any, **kwargs: Any) -> Any:
        async with self._lock.hold_async():
            return await method(self, *args, **kwargs)

    return cast("_A", locked)
