"""The shape of what a gateway knows of one provider's HTTP API, the same for every format.

A format's folder fills one `GatewayWire` in its `gateway` module: which request paths
it serves, how a request body reads, what usage an answer carries, how a token count
is asked for and answered, and its error bodies. `context_graph.formats.gateways`
gathers them by name; the gateway (`orchestrator.gateway`) reaches a provider only
through them. Nothing here names a format, and nothing here needs an HTTP library.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from context_graph.tokens.usage import Usage

__all__ = ["BodyLayout", "GatewayWire", "RequestKind", "TokenCount", "Upstream", "keep_sent"]

#: What a request to a served path is: a model call, a token count, or (`None`) neither,
#: which the gateway passes through.
RequestKind: TypeAlias = Literal["call", "count"]


@dataclass(frozen=True)
class Upstream:
    """A provider's public API, as `context-graph proxy --upstream NAME` chooses it."""

    name: str
    """The `--upstream` choice."""
    url: str
    """Its public base URL (no trailing `/v1`)."""


@dataclass(frozen=True)
class BodyLayout:
    """Where a request body holds the conversation and the system prompt (the tools: `tools`)."""

    history_key: str
    """The field holding the conversation."""
    system_key: str | None = None
    """The field holding the system prompt (`None`: it is in the conversation)."""
    text_role: str | None = None
    """The role of a conversation given as one string (`None`: refused)."""


@dataclass(frozen=True)
class TokenCount:
    """A provider's token-count endpoint: the body to ask with, the count it answers."""

    request: Callable[[Mapping[str, Any], Mapping[str, Any]], dict[str, Any]]
    """The count body for the request the gateway would send, given the agent's count body."""
    tokens: Callable[[Mapping[str, Any]], Any]
    """The count an answer gives (whatever it holds there: the caller checks it)."""


def keep_sent(own: Mapping[str, Any], sent: dict[str, Any]) -> dict[str, Any]:
    """The body as the engine wrote it (the default `GatewayWire.restore`)."""
    return sent


@dataclass(frozen=True)
class GatewayWire:
    """One provider API a gateway manages.

    Every callable is pure: it reads JSON values and bytes and returns new ones.

    Attributes:
        name: The wire's name, also the folder of its sessions in the proxy's store.
        format: The format its conversation is read and rendered in.
        upstream: The provider serving it.
        layout: Where its request body holds the conversation and the system prompt.
        routes: The request paths it serves (aiohttp's patterns: `{name}` is one segment).
        request_kind: What a request to one of `routes` is, from its path and bytes.
        speaks: Whether a request path is of this provider's API (its errors' shape).
        readable: The request as the engine reads it.
        sse_usage: The usage a streamed answer reports (`None`: not found).
        answer_usage: The usage of a whole JSON answer (`None`: it has none).
        refusal: The API's own error body (HTTP 400) for a message (`--strict`).
        unreachable: The API's error body (HTTP 502) when its upstream cannot be reached.
        agent_setup: What to set in the agent's environment to send it through a gateway
            at a URL, as lines to print.
        engine_tools: Whether the engine renders the tools (else they are sent as the
            agent sent them and counted off the budget).
        engine_cache_marks: Whether `readable` takes the agent's prompt-cache marks off,
            so that the engine must place its own.
        count: Its token-count endpoint (`None`: it has none; `request_kind` never
            says `count`).
        server_state: Request fields that continue history kept by the provider: such
            a request is passed through.
        model_of: The model a request's URL path names (`None`: the body names it).
        restore: The body as written upstream, from the agent's own body and the
            engine's (which parts of the agent's to keep as sent).
        text_shorthand: A string content stands for one text block
            (`[{"type": "text", "text": ...}]`): the engine's reading of the one as the
            other is sent in the agent's spelling.
    """

    name: str
    format: str
    upstream: Upstream
    layout: BodyLayout
    routes: tuple[str, ...]
    request_kind: Callable[[str, bytes], RequestKind | None]
    speaks: Callable[[str], bool]
    readable: Callable[[Mapping[str, Any]], dict[str, Any]]
    sse_usage: Callable[[bytes], Usage | None]
    answer_usage: Callable[[Mapping[str, Any]], Usage | None]
    refusal: Callable[[str], dict[str, Any]]
    unreachable: Callable[[str], dict[str, Any]]
    agent_setup: Callable[[str], tuple[str, ...]]
    engine_tools: bool
    engine_cache_marks: bool = False
    count: TokenCount | None = None
    server_state: tuple[str, ...] = ()
    model_of: Callable[[str], str | None] = lambda path: None
    restore: Callable[[Mapping[str, Any], dict[str, Any]], dict[str, Any]] = keep_sent
    text_shorthand: bool = False

    def held_upstream(self, body: Mapping[str, Any]) -> bool:
        """Whether a request continues history the provider keeps (not the gateway's)."""
        return any(body.get(key) not in (None, "") for key in self.server_state)
