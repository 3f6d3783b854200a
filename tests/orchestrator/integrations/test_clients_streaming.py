"""Streaming through `manager.wrap(client)`: the real SDK clients against the streaming fake.

Each API's streamed loop (sync and async, `stream=True` and the SDK's `stream(...)`
helper) sends exactly the requests the same loop sends without streaming, while the
caller reads the SDK's own stream objects and events.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anthropic
import anyio
import openai
import pytest
from google import genai
from google.genai import types

from orchestrator import ContextManager
from orchestrator.policy import Policy
from tests.orchestrator.integrations.test_clients import BIG, CHAT_TOOLS, SCHEMA, reads

BUDGET = 6_000
TURNS = 8
RESPONSES_TOOLS = [{"type": "function", "name": "read_file", "parameters": SCHEMA}]
ANTHROPIC_TOOLS = [{"name": "read_file", "input_schema": SCHEMA}]
GEMINI_CONFIG = types.GenerateContentConfig(
    system_instruction="Be careful.",
    tools=[
        types.Tool(
            function_declarations=[
                types.FunctionDeclaration(name="read_file", parameters_json_schema=SCHEMA)
            ]
        )
    ],
)


def make_client(server: Any, *, is_async: bool = False) -> Any:
    """A bare SDK client of the server's wire, pointed at it."""
    url = server.url
    if server.wire in ("openai", "responses"):
        cls: Any = openai.AsyncOpenAI if is_async else openai.OpenAI
        return cls(base_url=f"{url}/v1", api_key="test", max_retries=0)
    if server.wire == "anthropic":
        cls = anthropic.AsyncAnthropic if is_async else anthropic.Anthropic
        return cls(base_url=url, api_key="test", max_retries=0)
    return genai.Client(api_key="test", http_options=types.HttpOptions(base_url=url))


# --- How each API's loop calls, reads a streamed reply, and answers its calls ----------------


def chat_reply(chunks: list[Any]) -> tuple[list[Any], list[str]]:
    """The assistant message a loop builds from `chat.completion.chunk` deltas."""
    text, calls = "", {}
    for chunk in chunks:
        for choice in chunk.choices:
            text += choice.delta.content or ""
            for part in choice.delta.tool_calls or []:
                call = calls.setdefault(part.index, {"id": "", "name": "", "arguments": ""})
                call["id"] += part.id or ""
                call["name"] += part.function.name or ""
                call["arguments"] += part.function.arguments or ""
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        message["tool_calls"] = [
            {
                "id": c["id"],
                "type": "function",
                "function": {"name": c["name"], "arguments": c["arguments"]},
            }
            for c in calls.values()
        ]
    return [message], [c["id"] for c in calls.values()]


def responses_reply(events: list[Any]) -> tuple[list[Any], list[str]]:
    """The output items of `response.output_item.done` events."""
    items = [e.item for e in events if e.type == "response.output_item.done"]
    return items, [i.call_id for i in items if i.type == "function_call"]


def anthropic_reply(events: list[Any]) -> tuple[list[Any], list[str]]:
    """The assistant message a loop builds from raw Messages stream events."""
    blocks: dict[int, dict[str, Any]] = {}
    partial: dict[int, str] = {}
    for event in events:
        if event.type == "content_block_start":
            blocks[event.index] = event.content_block.model_dump(exclude_none=True)
        elif event.type == "content_block_delta":
            block, delta = blocks[event.index], event.delta
            if delta.type == "text_delta":
                block["text"] += delta.text
            elif delta.type == "thinking_delta":
                block["thinking"] += delta.thinking
            elif delta.type == "signature_delta":
                block["signature"] = delta.signature
            elif delta.type == "input_json_delta":
                partial[event.index] = partial.get(event.index, "") + delta.partial_json
        elif event.type == "content_block_stop" and blocks[event.index]["type"] == "tool_use":
            blocks[event.index]["input"] = json.loads(partial.get(event.index) or "{}")
    content = [blocks[i] for i in sorted(blocks)]
    return [{"role": "assistant", "content": content}], [
        b["id"] for b in content if b["type"] == "tool_use"
    ]


def gemini_reply(chunks: list[Any]) -> tuple[list[Any], list[str]]:
    """One model content holding every chunk's parts, as they came."""
    parts = [p for c in chunks for p in c.candidates[0].content.parts]
    return [types.Content(role="model", parts=parts)], [
        p.function_call.name for p in parts if p.function_call
    ]


def answers(wire: str, calls: list[str]) -> list[Any]:
    """The tool results a loop appends for its calls."""
    if wire == "openai":
        return [{"role": "tool", "tool_call_id": c, "content": BIG} for c in calls]
    if wire == "responses":
        return [{"type": "function_call_output", "call_id": c, "output": BIG} for c in calls]
    if wire == "anthropic":
        results = [{"type": "tool_result", "tool_use_id": c, "content": BIG} for c in calls]
        return [{"role": "user", "content": results}]
    parts = [types.Part.from_function_response(name=c, response={"output": BIG}) for c in calls]
    return [types.Content(role="user", parts=parts)]


def first_user(wire: str) -> list[Any]:
    """The conversation a loop starts with."""
    if wire == "gemini":
        return [types.UserContent("read everything")]
    return [{"role": "user", "content": "read everything"}]


@dataclass(frozen=True)
class Api:
    """One API's call, with its streamed-reply reader."""

    wire: str
    arguments: Callable[[list[Any]], dict[str, Any]]
    reply: Callable[[list[Any]], tuple[list[Any], list[str]]]

    def create(self, client: Any) -> Any:
        """The call that answers whole (`create` / `generate_content`)."""
        if self.wire == "openai":
            return client.chat.completions.create
        if self.wire == "responses":
            return client.responses.create
        if self.wire == "anthropic":
            return client.messages.create
        return client.models.generate_content

    def open(self, client: Any, history: list[Any], **extra: Any) -> Any:
        """A streamed call (`stream=True`, or Gemini's `generate_content_stream`)."""
        kwargs = {**self.arguments(history), **extra}
        if self.wire == "gemini":
            return client.models.generate_content_stream(**kwargs)
        return self.create(client)(**kwargs, stream=True)

    async def aopen(self, client: Any, history: list[Any], **extra: Any) -> Any:
        """The async twin of `open`."""
        kwargs = {**self.arguments(history), **extra}
        if self.wire == "gemini":
            return await client.aio.models.generate_content_stream(**kwargs)
        return await self.create(client)(**kwargs, stream=True)


API = {
    "openai": Api(
        "openai",
        lambda h: {
            "model": "m",
            "messages": h,
            "tools": CHAT_TOOLS,
            "stream_options": {"include_usage": True},
        },
        chat_reply,
    ),
    "responses": Api(
        "responses", lambda h: {"model": "m", "input": h, "tools": RESPONSES_TOOLS}, responses_reply
    ),
    "anthropic": Api(
        "anthropic",
        lambda h: {
            "model": "m",
            "max_tokens": 100,
            "system": "Be careful.",
            "messages": h,
            "tools": ANTHROPIC_TOOLS,
        },
        anthropic_reply,
    ),
    "gemini": Api(
        "gemini", lambda h: {"model": "g", "contents": h, "config": GEMINI_CONFIG}, gemini_reply
    ),
}
WIRES = sorted(API)


def whole_requests(provider_server: Any, wire: str) -> list[dict[str, Any]]:
    """The requests of the loop answered whole (no streaming)."""
    api, server = API[wire], provider_server(wire, respond=reads(TURNS), limit=BUDGET)
    client = ContextManager(format=wire, budget=BUDGET, policy=Policy()).wrap(make_client(server))
    history = first_user(wire)
    while True:
        kwargs = api.arguments(history)
        kwargs.pop("stream_options", None)
        response = api.create(client)(**kwargs)
        if wire == "openai":
            items, calls = (
                [response.choices[0].message],
                [c.id for c in response.choices[0].message.tool_calls or []],
            )
        elif wire == "responses":
            items = list(response.output)
            calls = [i.call_id for i in items if i.type == "function_call"]
        elif wire == "anthropic":
            items = [{"role": "assistant", "content": response.content}]
            calls = [b.id for b in response.content if b.type == "tool_use"]
        else:
            items = [response.candidates[0].content]
            calls = [c.name for c in response.function_calls or []]
        history += items
        if not calls:
            return server.requests
        history += answers(wire, calls)


def unstreamed(requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Bodies without the arguments that ask for a stream."""
    return [{k: v for k, v in r.items() if k not in ("stream", "stream_options")} for r in requests]


def loop_done(server: Any, manager: ContextManager) -> tuple[int, list[str], bool]:
    return len(server.requests), server.refused, max(server.prompts) <= BUDGET


class TestStreamedLoops:
    @pytest.mark.parametrize("wire", WIRES)
    def test_sync_stream_sends_what_the_whole_loop_sends(
        self, wire: str, provider_server: Any
    ) -> None:
        """A streamed loop's requests are the unstreamed loop's, each valid and under budget."""
        api, server = API[wire], provider_server(wire, respond=reads(TURNS), limit=BUDGET)
        manager = ContextManager(format=wire, budget=BUDGET, policy=Policy())
        client = manager.wrap(make_client(server))
        history = first_user(wire)
        while True:
            events = list(api.open(client, history))
            items, calls = api.reply(events)
            history += items
            if not calls:
                break
            history += answers(wire, calls)
        assert loop_done(server, manager) == (TURNS, [], True)
        assert unstreamed(server.requests) == unstreamed(whole_requests(provider_server, wire))

    @pytest.mark.parametrize("wire", WIRES)
    async def test_async_stream_sends_what_the_whole_loop_sends(
        self, wire: str, provider_server: Any
    ) -> None:
        """The async clients' streamed loop: the same requests as the unstreamed loop."""
        api, server = API[wire], provider_server(wire, respond=reads(TURNS), limit=BUDGET)
        manager = ContextManager(format=wire, budget=BUDGET, policy=Policy())
        client = manager.wrap(make_client(server, is_async=True))
        history = first_user(wire)
        while True:
            events = [e async for e in await api.aopen(client, history)]
            items, calls = api.reply(events)
            history += items
            if not calls:
                break
            history += answers(wire, calls)
        assert loop_done(server, manager) == (TURNS, [], True)
        # The whole loop's blocking client runs in a thread: render_sync refuses an event loop.
        whole = await anyio.to_thread.run_sync(whole_requests, provider_server, wire)
        assert unstreamed(server.requests) == unstreamed(whole)


HELPERS = ("openai", "responses", "anthropic")


def helper(client: Any, wire: str) -> Any:
    """The SDK's `stream(...)` helper of a wire."""
    if wire == "openai":
        return client.chat.completions.stream
    if wire == "responses":
        return client.responses.stream
    return client.messages.stream


def helper_reply(wire: str, final: Any) -> tuple[list[Any], list[str]]:
    """What a loop appends of a helper's final response, and its calls."""
    if wire == "openai":
        message = final.choices[0].message
        return [message], [c.id for c in message.tool_calls or []]
    if wire == "responses":
        items = list(final.output)
        return items, [i.call_id for i in items if i.type == "function_call"]
    return [{"role": "assistant", "content": final.content}], [
        b.id for b in final.content if b.type == "tool_use"
    ]


def final_of(stream: Any) -> Any:
    """The helper stream's own final response (after it was read through)."""
    for name in ("get_final_completion", "get_final_response", "get_final_message"):
        if hasattr(stream, name):
            return getattr(stream, name)()
    raise AssertionError(type(stream))


async def afinal_of(stream: Any) -> Any:
    """The async helper stream's own final response."""
    for name in ("get_final_completion", "get_final_response", "get_final_message"):
        if hasattr(stream, name):
            return await getattr(stream, name)()
    raise AssertionError(type(stream))


class TestStreamHelpers:
    @pytest.mark.parametrize("wire", HELPERS)
    def test_sync_helper_sends_what_the_whole_loop_sends(
        self, wire: str, provider_server: Any
    ) -> None:
        """`with client.….stream(...)`: the unstreamed loop's requests, the helper's events."""
        api, server = API[wire], provider_server(wire, respond=reads(TURNS), limit=BUDGET)
        manager = ContextManager(format=wire, budget=BUDGET, policy=Policy())
        client = manager.wrap(make_client(server))
        history = first_user(wire)
        kinds: set[str] = set()
        while True:
            with helper(client, wire)(**api.arguments(history)) as stream:
                kinds |= {event.type for event in stream}
                items, calls = helper_reply(wire, final_of(stream))
            history += items
            if not calls:
                break
            history += answers(wire, calls)
        assert loop_done(server, manager) == (TURNS, [], True)
        assert unstreamed(server.requests) == unstreamed(whole_requests(provider_server, wire))
        derived = {"openai": "content.done", "responses": "response.completed", "anthropic": "text"}
        assert derived[wire] in kinds  # the helper's own events reach the caller

    @pytest.mark.parametrize("wire", HELPERS)
    async def test_async_helper_sends_what_the_whole_loop_sends(
        self, wire: str, provider_server: Any
    ) -> None:
        """`async with client.….stream(...)`: the unstreamed loop's requests."""
        api, server = API[wire], provider_server(wire, respond=reads(TURNS), limit=BUDGET)
        manager = ContextManager(format=wire, budget=BUDGET, policy=Policy())
        client = manager.wrap(make_client(server, is_async=True))
        history = first_user(wire)
        while True:
            async with helper(client, wire)(**api.arguments(history)) as stream:
                final = await afinal_of(stream)  # read through by the SDK itself
            items, calls = helper_reply(wire, final)
            history += items
            if not calls:
                break
            history += answers(wire, calls)
        assert loop_done(server, manager) == (TURNS, [], True)
        whole = await anyio.to_thread.run_sync(whole_requests, provider_server, wire)
        assert unstreamed(server.requests) == unstreamed(whole)


def kinds(manager: ContextManager) -> list[str]:
    return [n.kind for n in manager.raw]


STREAM_TYPES = {
    "openai": openai.Stream,
    "responses": openai.Stream,
    "anthropic": anthropic.Stream,
}


class TestAsItComes:
    @pytest.mark.parametrize("wire", WIRES)
    def test_events_pass_as_they_come_and_the_reply_lands_at_the_end(
        self, wire: str, provider_server: Any
    ) -> None:
        """The caller holds the SDK's stream; the reply is in the record only once it is whole."""
        server = provider_server(wire, respond=lambda body: {"text": "a reply in several pieces"})
        manager = ContextManager(format=wire, policy=Policy())
        client = manager.wrap(make_client(server))  # kept: a dropped genai client closes
        stream = API[wire].open(client, first_user(wire))
        if wire in STREAM_TYPES:
            assert type(stream) is STREAM_TYPES[wire]
        first = next(iter(stream))
        before = kinds(manager)
        assert (len(server.requests), before[-1]) == (1, "user")
        rest = list(stream)
        assert kinds(manager) == [*before, "assistant"]
        assert list(manager.raw)[-1].text == "a reply in several pieces"
        assert len(rest) >= 3 and first is not None

    @pytest.mark.parametrize("wire", WIRES)
    def test_prompt_tokens_are_reported(self, wire: str, provider_server: Any) -> None:
        """Each streamed reply's prompt tokens reach the calibrator (`usage_reported`)."""
        server = provider_server(wire)
        manager = ContextManager(format=wire, policy=Policy())
        seen: list[Any] = []
        manager.bus.connect("usage_reported", lambda sender, **kw: seen.append(kw["usage"]))
        client = manager.wrap(make_client(server))
        list(API[wire].open(client, first_user(wire)))
        assert [u["prompt_tokens"] for u in seen] == server.prompts

    def test_chat_usage_is_not_asked_for_the_caller(self, provider_server: Any) -> None:
        """Without `include_usage` the request is the caller's: the reply lands, unreported."""
        server = provider_server("openai")
        manager = ContextManager(format="openai", policy=Policy())
        seen: list[Any] = []
        manager.bus.connect("usage_reported", lambda sender, **kw: seen.append(kw["usage"]))
        client = manager.wrap(make_client(server))
        stream = client.chat.completions.create(
            model="m", messages=first_user("openai"), stream=True
        )
        chunks = list(stream)
        assert "stream_options" not in server.requests[0]
        assert all(chunk.choices for chunk in chunks)  # no usage chunk the caller did not ask for
        assert (kinds(manager), seen) == (["user", "assistant"], [])
