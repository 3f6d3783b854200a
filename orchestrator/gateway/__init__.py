"""The drop-in gateway: an HTTP proxy that compacts an agent CLI's context.

`context-graph proxy` (orchestrator/cli/proxy.py) serves `Gateway` between an agent
(Claude Code, Codex CLI, gemini-cli) and its provider; see docs/proxy.md.
"""

from orchestrator.gateway.identity import ANONYMOUS, session_of
from orchestrator.gateway.serve import GatewayThread, gateway_for, serve
from orchestrator.gateway.server import FORWARDED, OUTCOME, Gateway
from orchestrator.gateway.threads import SessionTable, Thread

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
