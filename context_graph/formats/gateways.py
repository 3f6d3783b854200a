"""The registry's gateway half: every provider API a gateway serves (`GatewayWire`), by name.

The gateway (`orchestrator.gateway`) and `context-graph proxy` reach a provider only
through this table: its routes, its request bodies, its usage, its errors, its upstream
and what an agent sets to use it. A new provider API is a `gateway` module in its
format's folder and one entry here.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from context_graph.formats.anthropic.gateway import GATEWAY as ANTHROPIC
from context_graph.formats.gateway import GatewayWire, Upstream
from context_graph.formats.gemini.gateway import GATEWAY as GEMINI
from context_graph.formats.openai_chat.gateway import GATEWAY as OPENAI_CHAT
from context_graph.formats.openai_responses.gateway import GATEWAY as OPENAI_RESPONSES

__all__ = ["DEFAULT_UPSTREAM", "GATEWAY_WIRES", "UNKNOWN_PATH_WIRE", "UPSTREAMS", "wires_of"]

#: Every wire, read-only, by name; an upstream's wires are served (and their setup
#: printed) in this order.
GATEWAY_WIRES: Mapping[str, GatewayWire] = MappingProxyType(
    {wire.name: wire for wire in (ANTHROPIC, OPENAI_RESPONSES, OPENAI_CHAT, GEMINI)}
)

#: The wire whose error shape answers a request path of no provider's API.
UNKNOWN_PATH_WIRE: GatewayWire = ANTHROPIC

#: Every upstream a gateway speaks to, by its `--upstream` name.
UPSTREAMS: Mapping[str, Upstream] = MappingProxyType(
    {wire.upstream.name: wire.upstream for wire in GATEWAY_WIRES.values()}
)

#: The upstream `context-graph proxy` speaks to when none is named.
DEFAULT_UPSTREAM: str = ANTHROPIC.upstream.name


def wires_of(upstream: str) -> tuple[GatewayWire, ...]:
    """The wires an upstream serves, in the registry's order."""
    return tuple(wire for wire in GATEWAY_WIRES.values() if wire.upstream.name == upstream)
