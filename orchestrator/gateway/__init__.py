"""The drop-in gateway: an HTTP proxy that compacts an agent CLI's context.

`context-graph proxy` (orchestrator/cli/proxy.py) serves `Gateway` between an agent
(Claude Code, Codex CLI, gemini-cli) and its provider; see docs/proxy.md.

The serving names (`Gateway`, `serve`, ...) need the `proxy` extra (aiohttp) and are
imported on first use: the store-reading modules (`listing`, `handoff`) back
`context-graph proxy sessions`, which a bare install runs too.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from orchestrator.gateway.identity import ANONYMOUS, session_of

if TYPE_CHECKING:
    from orchestrator.gateway.serve import GatewayThread, gateway_for, serve
    from orchestrator.gateway.server import FORWARDED, OUTCOME, Gateway
    from orchestrator.gateway.threads import SessionTable, Thread

# Public name -> the module that defines it, imported when the name is first read.
_LAZY = {
    "FORWARDED": "orchestrator.gateway.server",
    "OUTCOME": "orchestrator.gateway.server",
    "Gateway": "orchestrator.gateway.server",
    "GatewayThread": "orchestrator.gateway.serve",
    "gateway_for": "orchestrator.gateway.serve",
    "serve": "orchestrator.gateway.serve",
    "SessionTable": "orchestrator.gateway.threads",
    "Thread": "orchestrator.gateway.threads",
}

__all__ = [
    "ANONYMOUS",
    "FORWARDED",
    "OUTCOME",
    "Gateway",
    "GatewayThread",
    "SessionTable",
    "Thread",
    "gateway_for",
    "serve",
    "session_of",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value
