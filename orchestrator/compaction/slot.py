"""`RunSlot`: one compaction at a time over a working graph.

A render that must compact waits for the run in progress instead of racing it over the
same nodes; a background run is started only while the slot is free.
"""

from __future__ import annotations

import anyio

__all__ = ["RunSlot"]


class RunSlot:
    """One compaction at a time: `claim` waits while another holds the slot.

    The event is made inside the running loop, so the slot works under asyncio and trio
    alike.
    """

    def __init__(self) -> None:
        self._busy: anyio.Event | None = None

    @property
    def busy(self) -> bool:
        """Whether a run holds the slot."""
        return self._busy is not None

    async def wait(self) -> None:
        """Wait until the run holding the slot now (if any) released it."""
        if self._busy is not None:
            await self._busy.wait()

    async def claim(self) -> anyio.Event:
        """Wait until no run holds the slot, then hold it (give the event to `release`)."""
        while self._busy is not None:
            await self._busy.wait()
        self._busy = anyio.Event()
        return self._busy

    def release(self, busy: anyio.Event) -> None:
        """Free the slot `claim` returned `busy` for, and wake whoever waits."""
        if self._busy is busy:
            self._busy = None
        busy.set()
