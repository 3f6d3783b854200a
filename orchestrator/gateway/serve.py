"""Running the gateway: the sessions' managers made from a profile, served on a port."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from orchestrator.gateway.server import Gateway
from orchestrator.gateway.threads import ManagerFactory, SessionTable
from orchestrator.gateway.wires import WIRES
from orchestrator.integrations.extras import missing_extra
from orchestrator.manager import ContextManager
from orchestrator.profiles import Profile

try:
    from aiohttp import web
except ImportError as exc:  # the extra is not installed
    raise missing_extra(__name__, "aiohttp", "proxy", "aiohttp") from exc

__all__ = ["GatewayThread", "gateway_for", "serve"]


def gateway_for(
    upstream: str,
    *,
    budget: int | None,
    profile: Profile,
    store: Path | None,
    strict: bool = False,
    wires: Sequence[str] = ("anthropic", "responses"),
) -> Gateway:
    """A gateway to `upstream` whose conversations are managed under `profile` and `budget`.

    Each wire format named in `wires` is served (the others' paths are passed through);
    its sessions are kept under `<store>/<wire>/`.
    """
    tables = {
        name: SessionTable(
            WIRES[name].api,
            _factory(name, budget, profile),
            None if store is None else store / name,
        )
        for name in wires
    }
    return Gateway(upstream, tables, budget=budget, strict=strict)


def _factory(wire: str, budget: int | None, profile: Profile) -> ManagerFactory:
    # An agent behind the gateway works on its own between user turns: after a summary
    # it is told to carry on (`auto_continue`).
    options = {**profile.manager_options(), "auto_continue": True}
    if wire == "anthropic":
        # The agent's own cache marks are taken off what it sends (they move every call):
        # the engine marks the prefix it keeps stable, or nothing would be cached.
        options = {**options, "cache_breakpoints": True}
    format = WIRES[wire].api.format

    def make(path: Path | None) -> ContextManager:
        if path is None:
            return ContextManager(format=format, budget=budget, **options)
        return ContextManager.open(path, format=format, budget=budget, **options)

    return make


async def serve(
    *,
    upstream: str,
    budget: int | None,
    profile: Profile,
    store: Path | None,
    host: str,
    port: int,
    strict: bool,
    wires: Sequence[str],
    announce: Callable[[str], None],
) -> None:
    """Serve the gateway on `host:port` until cancelled; `announce` gets its URL once bound."""
    gateway = gateway_for(
        upstream, budget=budget, profile=profile, store=store, strict=strict, wires=wires
    )
    runner = web.AppRunner(gateway.app(), access_log=None)
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port)
        await site.start()
        bound = runner.addresses[0]
        announce(f"http://{bound[0]}:{bound[1]}")
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()


class GatewayThread:
    """A gateway served from a thread of its own, for tests and benchmarks.

    `with GatewayThread(gateway) as url:` serves on a free loopback port until the block
    ends, then stops the server and closes every session.
    """

    def __init__(self, gateway: Gateway, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self._gateway = gateway
        self._host, self._port = host, port
        self._ready = threading.Event()
        self._url = ""
        self._error: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, name="context-graph-gateway", daemon=True)

    @property
    def gateway(self) -> Gateway:
        """The gateway served."""
        return self._gateway

    def __enter__(self) -> str:
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            raise self._error
        return self._url

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None and self._stop is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join()
        if self._error is not None:
            raise self._error

    def _run(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as error:  # reported to the thread that waits
            self._error = error
            self._ready.set()

    async def _serve(self) -> None:
        self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
        runner = web.AppRunner(self._gateway.app(), access_log=None)
        await runner.setup()
        try:
            await web.TCPSite(runner, self._host, self._port).start()
            host, port = runner.addresses[0][:2]
            self._url = f"http://{host}:{port}"
            self._ready.set()
            await self._stop.wait()
        finally:
            await runner.cleanup()
