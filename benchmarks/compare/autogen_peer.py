"""AutoGen's model contexts as contenders (autogen-core).

`BufferedChatCompletionContext(buffer_size=N)` keeps the last N messages;
`HeadAndTailChatCompletionContext(head_size=H, tail_size=T)` keeps the first H and the
last T with a "Skipped k messages." note between. Both count messages, not tokens, and
both only drop a function-result message left at the start of the kept tail.

As in AutoGen's `AssistantAgent`, the system messages are held by the agent and put in
front of what the context returns. A batch of tool results becomes one
`FunctionExecutionResultMessage`, as the agent builds it.

Choosing the sizes: a message count cannot be derived from a token budget, so at every
call the harness picks the largest setting whose request fits the budget (a binary
search on the count, with `get_messages` run for each candidate). That is the best any
fixed setting could do at that call. The search is not timed; `get_messages` at the
chosen setting is. `H` is the number of messages up to the first user message (the
task), so the head keeps the request; T is searched.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal

from benchmarks.compare import convert
from benchmarks.compare.contenders import Contender, ContenderSpec
from context_graph import AgentEvent, AssistantTurn, TokenCounter
from context_graph.graph.node_tokens import NodeTokenCache
from context_graph.render import count_payload

Kind = Literal["buffered", "head_and_tail"]
NAMES: dict[Kind, str] = {"buffered": "autogen buffered", "head_and_tail": "autogen head+tail"}
SETTINGS: dict[Kind, str] = {
    "buffered": "`BufferedChatCompletionContext(buffer_size=N)`, N the largest that fits",
    "head_and_tail": (
        "`HeadAndTailChatCompletionContext(head_size=H, tail_size=T)`, H up to the first "
        "user message, T the largest that fits"
    ),
}


class AutoGenContender:
    """An AutoGen model context over the messages an AutoGen agent would hold."""

    def __init__(self, kind: Kind, budget: int, counter: TokenCounter) -> None:
        from autogen_core import model_context, models

        self._kind = kind
        self._ctx = model_context
        self._m = models
        self._cache = NodeTokenCache(counter)
        self._tokens: dict[int, tuple[Any, int]] = {}
        self._system: list[Any] = []
        self._held: list[Any] = []
        self._batching = False
        self._chosen: Any = None

    # -- the agent's side ------------------------------------------------------------------

    def prepare(self, events: Sequence[AgentEvent]) -> list[Any]:
        return [self._item(event) for event in events]

    def _item(self, event: AgentEvent) -> tuple[str, Any]:
        m = self._m
        role = convert.role_of(event)
        if role == "system":
            return "system", m.SystemMessage(content=convert.text_of(event))
        if role == "compaction":
            return "reset", m.UserMessage(content=convert.text_of(event), source="user")
        if role == "user":
            return "message", m.UserMessage(content=self._user_content(event), source="user")
        if role == "answer":
            call_id = convert.call_id_of(event)
            if call_id is None:
                return "message", m.UserMessage(content=convert.text_of(event), source="user")
            result = m.FunctionExecutionResult(
                content=convert.text_of(event),
                name=getattr(event, "name", None) or "tool",
                call_id=call_id,
                is_error=bool(getattr(event, "is_error", False)),
            )
            return "result", result
        if not isinstance(event, AssistantTurn):
            return "message", m.UserMessage(content=convert.text_of(event), source="user")
        text = convert.text_of(event)
        if not event.tool_calls:
            return "message", m.AssistantMessage(content=text, source="assistant")
        from autogen_core import FunctionCall

        calls = [
            FunctionCall(id=c.id, name=c.name, arguments=c.arguments) for c in event.tool_calls
        ]
        return "message", m.AssistantMessage(
            content=calls, thought=text or None, source="assistant"
        )

    def _user_content(self, event: AgentEvent) -> Any:
        urls = convert.image_urls(event)
        if not urls:
            return convert.text_of(event)
        from autogen_core import Image

        content: list[Any] = [convert.text_of(event)]
        for url in urls:
            try:
                content.append(Image.from_uri(url))
            except ValueError:  # AutoGen takes data URIs only; a linked image stays a link
                content.append(f"[image: {url}]")
        return content

    async def feed(self, item: Any) -> None:
        kind, message = item
        if kind == "result":
            last = self._held[-1] if self._held else None
            if self._batching and isinstance(last, self._m.FunctionExecutionResultMessage):
                merged = [*last.content, message]
                self._held[-1] = self._m.FunctionExecutionResultMessage(content=merged)
            else:
                self._held.append(self._m.FunctionExecutionResultMessage(content=[message]))
            self._batching = True
            return
        self._batching = False
        if kind == "system":
            self._system.append(message)
        elif kind == "reset":
            self._held = [message]
        else:
            self._held.append(message)

    # -- the engine ------------------------------------------------------------------------

    def _context(self, size: int) -> Any:
        if self._kind == "buffered":
            return self._ctx.BufferedChatCompletionContext(
                buffer_size=size, initial_messages=self._held
            )
        return self._ctx.HeadAndTailChatCompletionContext(
            head_size=self._head_size(), tail_size=size, initial_messages=self._held
        )

    def _head_size(self) -> int:
        for index, message in enumerate(self._held):
            if isinstance(message, self._m.UserMessage):
                return index + 1
        return 1

    async def tune(self, budget: int) -> None:
        async def fits(size: int) -> bool:
            messages = await self._context(size).get_messages()
            return self._count([*self._system, *messages]) <= budget

        self._chosen = self._context(await _largest(len(self._held), fits))

    async def request(self, budget: int) -> Any | None:
        return [*self._system, *await self._chosen.get_messages()]

    # -- measuring -------------------------------------------------------------------------

    def _count(self, messages: list[Any]) -> int:
        total = 3
        for message in messages:
            known = self._tokens.get(id(message))
            if known is None:
                tokens = count_payload({"messages": self._openai(message)}, "openai", self._cache)
                # Keep the message alive with its count, so its id is never reused.
                known = (message, tokens - 3)
                self._tokens[id(message)] = known
            total += known[1]
        return total

    def _openai(self, message: Any) -> list[dict[str, Any]]:
        m = self._m
        if isinstance(message, m.SystemMessage):
            return [{"role": "system", "content": message.content}]
        if isinstance(message, m.UserMessage):
            return [{"role": "user", "content": _user_blocks(message.content)}]
        if isinstance(message, m.FunctionExecutionResultMessage):
            return [
                {"role": "tool", "tool_call_id": r.call_id, "content": r.content}
                for r in message.content
            ]
        if isinstance(message.content, str):
            return [{"role": "assistant", "content": message.content}]
        calls = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in message.content
        ]
        return [{"role": "assistant", "content": message.thought, "tool_calls": calls}]

    def payload(self, native: Any) -> dict[str, Any]:
        return {"messages": [body for message in native for body in self._openai(message)]}


def _user_blocks(content: Any) -> Any:
    if isinstance(content, str):
        return content
    return [
        {"type": "text", "text": item}
        if isinstance(item, str)
        else {"type": "image_url", "image_url": {"url": item.data_uri}}
        for item in content
    ]


async def _largest(limit: int, fits: Callable[[int], Awaitable[bool]]) -> int:
    """The largest size in [1, limit] that fits (1 when none does): a binary search."""
    low, high = 1, max(1, limit)
    if await fits(high):
        return high
    if not await fits(low):
        return low
    while high - low > 1:
        middle = (low + high) // 2
        if await fits(middle):
            low = middle
        else:
            high = middle
    return low


def autogen_specs() -> list[ContenderSpec]:
    """Both AutoGen contexts (raises ImportError when autogen-core is missing)."""
    import autogen_core.model_context  # noqa: F401  (fail early when the peer is absent)

    def maker(kind: Kind) -> Callable[[int, TokenCounter], Contender]:
        return lambda budget, counter: AutoGenContender(kind, budget, counter)

    return [
        ContenderSpec(
            name=NAMES[kind],
            family="autogen",
            make=maker(kind),
            settings=SETTINGS[kind],
        )
        for kind in ("buffered", "head_and_tail")
    ]
