"""`context-graph proxy`: the gateway between an agent CLI and its provider.

Starts `orchestrator.gateway.Gateway` on loopback, prints the environment the agent
needs, and serves until interrupted. Each conversation is kept in a session file
under the store folder (by default the user's data folder), so a restarted proxy
resumes every session from what it holds.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from pathlib import Path

from context_graph.errors import ConfigurationError
from context_graph.formats.gateways import UPSTREAMS, wires_of
from orchestrator.cli.errors import EXIT_INTERRUPTED, EXIT_OK
from orchestrator.cli.progress import Progress
from orchestrator.cli.session import choose_policy
from orchestrator.persistence.postgres.connect import redacted

__all__ = ["default_store", "run_proxy"]


def default_store() -> Path:
    """The proxy's session folder in the user's data folder (`$XDG_DATA_HOME` first)."""
    data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data) / "context-graph" / "proxy"


def run_proxy(args: argparse.Namespace, progress: Progress) -> int:
    """Serve until SIGTERM (exit code 0) or Ctrl-C (130, as every command); see `serve`."""
    try:
        from aiohttp import web  # noqa: F401  (the extra is checked before anything starts)
    except ImportError:
        msg = (
            "proxy: needs aiohttp: in the context-graph checkout, `pip install '.[proxy]'` "
            "(or `pip install aiohttp`)"
        )
        raise ConfigurationError(msg) from None
    from orchestrator.gateway.serve import serve

    policy = choose_policy(args.policy)
    store = None if args.memory else (args.store or default_store())
    if isinstance(store, Path) and store.exists() and not store.is_dir():
        msg = f"proxy --store {store}: not a folder (the proxy keeps a folder per session)"
        raise ConfigurationError(msg)
    upstream = args.upstream_url or UPSTREAMS[args.upstream].url
    received = asyncio.run(
        serve(
            upstream=upstream,
            budget=args.budget,
            policy=policy,
            store=store,
            host=args.host,
            port=args.port,
            strict=args.strict,
            wires=[wire.name for wire in wires_of(args.upstream)],
            announce=lambda url: _announce(url, upstream, args, store),
            stopped=lambda line: print(f"context-graph proxy: {line}", file=sys.stderr),
        )
    )
    # SIGTERM is how a service manager stops it: a clean stop. Ctrl-C ends as every command.
    return EXIT_INTERRUPTED if received == signal.SIGINT else EXIT_OK


def _announce(url: str, upstream: str, args: argparse.Namespace, store: Path | str | None) -> None:
    where = "memory only" if store is None else redacted(str(store))
    print(f"context-graph proxy: {url} -> {upstream}, budget {args.budget}, sessions in {where}")
    for wire in wires_of(args.upstream):
        print("\n".join(wire.agent_setup(url)))
    sys.stdout.flush()
