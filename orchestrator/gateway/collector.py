"""`IdleCollector`: the cyclic garbage collector's full passes, moved off the request path.

A proxy process holds every session's graph: hundreds of thousands of objects that live
as long as the session. Python's automatic full collection scans all of them; at a
100k-token session it took about 130 ms of CPU, inside whichever request triggered it,
and so made the proxy's p99 overhead. The collector freezes what survives each request
(`gc.freeze`: the automatic passes then scan only what is newer), and runs a full pass,
unfrozen, once the proxy has been idle a moment (an agent runs its tools between two
requests), at most once per `every` seconds. A proxy that is never idle still gets a
full pass at the end of a request once `overdue` seconds have gone by without one, so
cyclic garbage is always reclaimed.
"""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Awaitable, Callable

from orchestrator.integrations.extras import missing_extra

try:
    from aiohttp import web
except ImportError as exc:  # the extra is not installed
    raise missing_extra(__name__, "aiohttp", "proxy", "aiohttp") from exc

__all__ = ["IdleCollector"]

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class IdleCollector:
    """Runs full garbage collections when no request is in flight (see the module).

    Args:
        idle: Seconds with no request in flight before a full pass runs.
        every: The least seconds between two idle full passes.
        overdue: Seconds without a full pass after which one runs at a request's end,
            idle or not.
        clock: Monotonic seconds.
    """

    def __init__(
        self,
        *,
        idle: float = 1.0,
        every: float = 30.0,
        overdue: float = 300.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._idle = idle
        self._every = every
        self._overdue = overdue
        self._clock = clock
        self._in_flight = 0
        self._timer: asyncio.TimerHandle | None = None
        self._last_full = clock()
        self.full_passes = 0
        """How many full passes it ran."""

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """The aiohttp middleware that counts the requests in flight."""
        self._in_flight += 1
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        try:
            return await handler(request)
        finally:
            self._in_flight -= 1
            self._settle()

    def _settle(self) -> None:
        """After a request: freeze what it left alive; a full pass when due."""
        if self._clock() - self._last_full >= self._overdue:
            self.collect()
            return
        gc.freeze()
        if self._in_flight == 0:
            self._timer = asyncio.get_running_loop().call_later(self._idle, self._when_idle)

    def _when_idle(self) -> None:
        self._timer = None
        if self._in_flight == 0 and self._clock() - self._last_full >= self._every:
            self.collect()

    def collect(self) -> None:
        """A full pass over every object, the frozen ones included; then freeze again."""
        gc.unfreeze()
        gc.collect()
        gc.freeze()
        self._last_full = self._clock()
        self.full_passes += 1

    def close(self) -> None:
        """Cancel a pending pass and hand every object back to the automatic passes."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        gc.unfreeze()
