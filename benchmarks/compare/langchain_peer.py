"""LangChain `trim_messages` as a contender (langchain-core).

The agent holds LangChain messages; at each call it sends
`trim_messages(held, max_tokens=B, strategy="last", start_on="human",
include_system=True, token_counter=count)`, converted with
`convert_to_openai_messages`. `count` is the same cl100k_base count every contender is
measured with (`context_graph.render.count_payload` on the OpenAI form of each message),
cached per message object so that trimming, not tokenizing, is what is timed: our engine
caches its counts per node too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from benchmarks.compare import convert
from benchmarks.compare.contenders import Contender, ContenderSpec
from context_graph import AgentEvent, AssistantTurn, TokenCounter
from context_graph.graph.node_tokens import NodeTokenCache
from context_graph.render import count_payload

SETTINGS = (
    '`trim_messages(held, max_tokens=B, strategy="last", start_on="human", '
    "include_system=True, token_counter=<cl100k_base, cached per message>)`"
)


class _Reset:
    """A recorded compaction: the agent's history becomes its summary."""

    def __init__(self, summary: Any) -> None:
        self.summary = summary


class LangChainTrimContender:
    """Holds the messages an agent would; trims them at each call."""

    def __init__(self, budget: int, counter: TokenCounter) -> None:
        from langchain_core.messages import convert_to_openai_messages, trim_messages

        self._trim = trim_messages
        self._to_openai = convert_to_openai_messages
        self._cache = NodeTokenCache(counter)
        self._tokens: dict[int, int] = {}
        self._held: list[Any] = []

    def prepare(self, events: Sequence[AgentEvent]) -> list[Any]:
        return [self._messages(event) for event in events]

    def _messages(self, event: AgentEvent) -> list[Any] | _Reset:
        from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

        role = convert.role_of(event)
        if role == "system":
            return [SystemMessage(convert.text_of(event))]
        if role == "compaction":
            return _Reset(HumanMessage(convert.text_of(event)))
        if role == "user":
            return [HumanMessage(convert.user_content(event))]  # type: ignore[arg-type]
        if role == "answer":
            call_id = convert.call_id_of(event)
            if call_id is None:
                return [HumanMessage(convert.text_of(event))]
            return [ToolMessage(convert.text_of(event), tool_call_id=call_id)]
        if not isinstance(event, AssistantTurn):
            return []
        calls = [
            {"name": c.name, "args": convert.arguments_dict(c.arguments), "id": c.id}
            for c in event.tool_calls
        ]
        return [AIMessage(convert.text_of(event), tool_calls=calls)]

    async def feed(self, item: Any) -> None:
        if isinstance(item, _Reset):
            system = [m for m in self._held if m.type == "system"]
            self._held = [*system, item.summary]
        else:
            self._held.extend(item)

    async def tune(self, budget: int) -> None:
        return None

    def _count(self, messages: list[Any]) -> int:
        total = 3  # the reply priming, once per request, as the renderer counts it
        for message in messages:
            tokens = self._tokens.get(id(message))
            if tokens is None:
                body = {"messages": self._to_openai([message])}
                tokens = count_payload(body, "openai", self._cache) - 3
                self._tokens[id(message)] = tokens
            total += tokens
        return total

    async def request(self, budget: int) -> Any | None:
        return self._trim(
            self._held,
            max_tokens=budget,
            strategy="last",
            token_counter=self._count,
            start_on="human",
            include_system=True,
        )

    def payload(self, native: Any) -> dict[str, Any]:
        return {"messages": self._to_openai(native)}


def langchain_specs() -> list[ContenderSpec]:
    """The LangChain contender (raises ImportError when langchain-core is missing)."""
    import langchain_core.messages  # noqa: F401  (fail early when the peer is absent)

    def make(budget: int, counter: TokenCounter) -> Contender:
        return LangChainTrimContender(budget, counter)

    return [
        ContenderSpec(
            name="langchain trim_messages", family="langchain", make=make, settings=SETTINGS
        )
    ]
