"""The wire formats the gateway serves, each its provider's `GatewayWire` and a managed `Api`.

What a provider's HTTP API looks like (paths, bodies, usage, errors) is the format's own
(`context_graph/formats/<format>/gateway.py`, gathered in `context_graph.formats.gateways`);
what is added here is how the engine takes a request's conversation in: the `Api` of
the SDK method whose keyword arguments the request body's fields are, read with that
body's layout. Nothing here names a format.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any

from context_graph.formats.gateway import GatewayWire, keep_sent
from context_graph.formats.gateways import GATEWAY_WIRES, UNKNOWN_PATH_WIRE
from context_graph.render import count_payload
from context_graph.tokens.counting import default_counter
from orchestrator.integrations.clients_apis import (
    ANTHROPIC_MESSAGES,
    GEMINI_CONTENT,
    OPENAI_CHAT,
    OPENAI_RESPONSES,
    Api,
    Keywords,
)

__all__ = ["WIRES", "Wire", "wire_of_path"]


@dataclass(frozen=True)
class _BodyArguments(Keywords):
    """A request body's fields as keywords, written back through the wire's `restore`."""

    restore: Callable[[Mapping[str, Any], dict[str, Any]], dict[str, Any]] = keep_sent

    def write(self, kwargs: dict[str, Any], payload: Mapping[str, Any]) -> dict[str, Any]:
        """The body with the rendered payload in place of its own (see `GatewayWire.restore`)."""
        return self.restore(kwargs, super().write(kwargs, payload))


# The SDK method of each format, by the format it renders: its importer, its model items.
_SDK_APIS: Mapping[str, Api] = {
    api.format: api for api in (ANTHROPIC_MESSAGES, OPENAI_RESPONSES, OPENAI_CHAT, GEMINI_CONTENT)
}


def _api_of(http: GatewayWire) -> Api:
    """The managed method that reads the wire's request bodies.

    The SDK method of its format, unchanged when its keywords are the body's fields; else
    the same method reading the body's layout instead.
    """
    sdk = _SDK_APIS[http.format]
    layout = http.layout
    plain = Keywords(layout.history_key, layout.system_key, layout.text_role)
    if sdk.arguments == plain and http.restore is keep_sent:
        return sdk
    arguments = _BodyArguments(
        layout.history_key, layout.system_key, layout.text_role, restore=http.restore
    )
    return replace(sdk, name=f"{sdk.name} (REST)", arguments=arguments)


@dataclass(frozen=True)
class Wire:
    """One API the gateway manages: its provider's `GatewayWire` and how the engine reads it.

    Attributes:
        http: What the provider's HTTP API says and how (paths, bodies, usage, errors).
        api: How a request holds its conversation, system prompt and tools.
    """

    http: GatewayWire
    api: Api

    @property
    def name(self) -> str:
        """The wire's name (the folder of its sessions in the store)."""
        return self.http.name

    def tool_tokens(self, tools: Sequence[Any]) -> int:
        """What the agent's own tool definitions cost, as the engine counts a request."""
        return count_payload({"tools": list(tools)}, self.api.format, default_counter())


WIRES: Mapping[str, Wire] = MappingProxyType(
    {name: Wire(http, _api_of(http)) for name, http in GATEWAY_WIRES.items()}
)
"""Every wire, by name, in the registry's order."""


def wire_of_path(path: str) -> Wire:
    """The wire whose provider's API a request path belongs to (its errors' shape).

    A path of no provider's API gets `UNKNOWN_PATH_WIRE`'s.
    """
    spoken = next((wire for wire in WIRES.values() if wire.http.speaks(path)), None)
    return spoken if spoken is not None else WIRES[UNKNOWN_PATH_WIRE.name]
