"""The contract every contender follows, and context-graph as a contender.

A contender is made fresh for each (session, budget). The harness then:

1. `prepare(events)`: turns the session into the contender's own message objects, as
   the agent would have built them (not timed: it is the agent's work, not the engine's);
2. per event, `feed(item)` (timed);
3. at each model call, `tune(budget)` (not timed; only the AutoGen contenders use it, to
   pick their message-count setting), then `request(budget)` (timed) for the native
   result, `None` when the engine refuses;
4. `payload(native)` (not timed): the OpenAI Chat Completions body it would send;
5. when the contender has it, `expansions(native)` (not timed): for each id the request
   names for `context_expand`, the text that one call would bring back. A fact missing
   from the request but inside one of them is *recoverable*.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from benchmarks.compare.facts import strings_in
from context_graph import AgentEvent, BudgetExceededError, TokenCounter
from context_graph.errors import UnknownNodeError
from orchestrator import ContextManager, GuardConfig
from orchestrator.policy import get_policy
from orchestrator.pricing import price_for


class Contender(Protocol):
    """One engine, replaying one session at one budget."""

    def prepare(self, events: Sequence[AgentEvent]) -> list[Any]:
        """One item per event: what the agent would hand the engine."""

    async def feed(self, item: Any) -> None:
        """Take one event's item."""

    async def tune(self, budget: int) -> None:
        """Adjust settings before a call (harness work, not timed)."""

    async def request(self, budget: int) -> Any | None:
        """The engine's history for the call; `None` when it refuses to answer."""

    def payload(self, native: Any) -> dict[str, Any]:
        """The OpenAI request body for a `request` result."""


@dataclass(frozen=True)
class ContenderSpec:
    """A contender as listed in the report."""

    name: str
    family: str
    """`context-graph`, `langchain`, `autogen` or `openhands`."""
    make: Callable[[int, TokenCounter], Contender]
    """A fresh contender for a budget and the shared token counter."""
    settings: str
    """The exact settings, as printed in the report."""

    @property
    def ours(self) -> bool:
        return self.family == "context-graph"


_NAMED_ID = re.compile(r"context_expand with id (\S+?)(?=[\s\]]|$)")
"""How a placeholder names the id to pass `context_expand` (with `agent_tools` on)."""


class ContextGraphContender:
    """`orchestrator.ContextManager` with a built-in profile, rendering OpenAI bodies."""

    def __init__(
        self,
        profile: str,
        budget: int,
        counter: TokenCounter,
        *,
        agent_tools: bool = False,
        guards: GuardConfig | None = None,
        compact_to: float | None = None,
    ) -> None:
        policy = get_policy(profile)
        if guards is not None:
            policy = policy.replace(guards=guards)
        if compact_to is not None:
            policy = policy.replace(compact_to=compact_to)
        self._manager = ContextManager(
            "openai", budget, policy=policy, agent_tools=agent_tools, counter=counter
        )
        self._expanded: dict[str, str] = {}

    def prepare(self, events: Sequence[AgentEvent]) -> list[Any]:
        return list(events)

    async def feed(self, item: Any) -> None:
        self._manager.ingest([item])

    async def tune(self, budget: int) -> None:
        return None

    async def request(self, budget: int) -> Any | None:
        try:
            return await self._manager.render(budget=budget)
        except BudgetExceededError:
            return None

    def payload(self, native: Any) -> dict[str, Any]:
        body: dict[str, Any] = native.payload
        return body

    def expansions(self, native: Any) -> dict[str, str]:
        """What one `context_expand` call would bring back, for each id the request names."""
        found: dict[str, str] = {}
        for text in strings_in(native.payload, []):
            for node_id in _NAMED_ID.findall(text):
                if node_id not in self._expanded:
                    try:
                        nodes = self._manager.expand(node_id)
                    except UnknownNodeError:
                        nodes = ()
                    self._expanded[node_id] = "\n".join(node.text for node in nodes)
                found[node_id] = self._expanded[node_id]
        return found


PROFILES: tuple[str, ...] = ("coding", "service", "chat")

COST_GUARD = "context-graph coding + cost guard"
"""The coding profile with the cost guard on; the dollars section sets it beside the
coding profile without it (`GUARD_PAIR`)."""
GUARD_PAIR: tuple[str, str] = ("context-graph coding", COST_GUARD)
"""(without the cost guard, with it)."""


def context_graph_specs() -> list[ContenderSpec]:
    """One contender per built-in profile, the coding profile with agent tools, and with
    the cost guard."""

    def maker(
        profile: str, *, agent_tools: bool = False, guards: GuardConfig | None = None
    ) -> Callable[[int, TokenCounter], Contender]:
        return lambda budget, counter: ContextGraphContender(
            profile, budget, counter, agent_tools=agent_tools, guards=guards
        )

    specs = [
        ContenderSpec(
            name=f"context-graph {profile}",
            family="context-graph",
            make=maker(profile),
            settings=(
                f"`ContextManager('openai', B, policy={profile!r})`; "
                "a `BudgetExceededError` is a refused call"
            ),
        )
        for profile in PROFILES
    ]
    # The same engine offering `context_expand`: its tool definition counts inside the
    # budget and its placeholders name ids, so what is not sent can still be recoverable.
    specs.append(
        ContenderSpec(
            name="context-graph coding + agent tools",
            family="context-graph",
            make=maker("coding", agent_tools=True),
            settings=("`ContextManager('openai', B, policy='coding', agent_tools=True)`"),
        )
    )
    # The cost guard weighs at Anthropic's prices: its cache writes cost 1.25x, so a
    # rewrite is dearest there (the page prices the same requests under every provider).
    # Besides letting a compaction that does not pay wait, it takes the relief pass on
    # the new outputs down to `compact_to` (see `orchestrator.compaction.relief.relieve`).
    guards = GuardConfig(cost_aware=True, price=price_for("anthropic"))
    specs.append(
        ContenderSpec(
            name=COST_GUARD,
            family="context-graph",
            make=maker("coding", guards=guards),
            settings=(
                "`ContextManager('openai', B, policy=get_policy('coding').replace(guards="
                "GuardConfig(cost_aware=True, price=price_for('anthropic'))))`"
            ),
        )
    )
    return specs
