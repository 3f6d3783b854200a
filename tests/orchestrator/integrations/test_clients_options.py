"""The SDKs' other ways to the model, on a managed client: managed too, or refused.

`with_options(...)`, `copy()`, `with_raw_response`, `.parse` and Anthropic's
`beta.messages` reach the same endpoint as `create`. On a managed client each sends the
manager's render, in the same conversation as `create`; sending the caller's whole list
instead would be over the server's limit (a 400 "prompt too long").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anthropic
import openai
import pytest
from google import genai
from google.genai import types

from orchestrator import ContextManager
from orchestrator.integrations.clients import UnmanagedCallError
from orchestrator.policy import Policy

LIMIT = 4_000
TURNS = 10
BIG = "\n".join(f"row {i}: worker-{i % 7} handled batch {i * 37} status=ok" for i in range(120))
SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}


def reads(turns: int) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A model that calls `read_file` for `turns - 1` turns, then answers."""
    state = {"n": 0}

    def respond(body: dict[str, Any]) -> dict[str, Any]:
        state["n"] += 1
        if state["n"] < turns:
            return {"calls": [["read_file", {"path": f"f{state['n']}"}]]}
        return {"text": "done"}

    return respond


def _raw(create: Callable[..., Any]) -> Callable[..., Any]:
    return lambda **kwargs: create(**kwargs).parse()


CHAT_WAYS: dict[str, Callable[[Any], Callable[..., Any]]] = {
    "with_options": lambda c: c.with_options(timeout=30).chat.completions.create,
    "copy": lambda c: c.copy().chat.completions.create,
    "with_raw_response": lambda c: _raw(c.chat.completions.with_raw_response.create),
    "parse": lambda c: c.chat.completions.parse,
}
CLAUDE_WAYS: dict[str, Callable[[Any], Callable[..., Any]]] = {
    "with_options": lambda c: c.with_options(timeout=30).messages.create,
    "copy": lambda c: c.copy().messages.create,
    "with_raw_response": lambda c: _raw(c.messages.with_raw_response.create),
    "beta.messages": lambda c: c.beta.messages.create,
}


class TestOtherWaysAreManaged:
    @pytest.mark.parametrize("way", list(CHAT_WAYS))
    def test_openai_chat(self, way: str, provider_server: Any) -> None:
        """Every other turn through `way`: all requests under the limit, each item once."""
        server = provider_server("openai", respond=reads(TURNS), limit=LIMIT)
        manager = ContextManager(format="openai", budget=LIMIT, policy=Policy())
        client: Any = manager.wrap(openai.OpenAI(base_url=f"{server.url}/v1", api_key="k"))
        strict = {**SCHEMA, "additionalProperties": False}  # `parse` takes strict tools only
        function = {"name": "read_file", "parameters": strict, "strict": True}
        tools = [{"type": "function", "function": function}]
        messages: list[Any] = [{"role": "user", "content": "read everything"}]
        for turn in range(TURNS):
            create = CHAT_WAYS[way](client) if turn % 2 else client.chat.completions.create
            message = create(model="m", messages=messages, tools=tools).choices[0].message
            messages.append(message)
            for call in message.tool_calls or []:
                messages.append({"role": "tool", "tool_call_id": call.id, "content": BIG})
        assert (len(server.requests), server.refused) == (TURNS, [])
        kinds = [n.kind for n in manager.raw]
        assert kinds == ["user", *("assistant", "tool_call", "tool_result") * 9, "assistant"]

    @pytest.mark.parametrize("way", list(CLAUDE_WAYS))
    def test_anthropic(self, way: str, provider_server: Any) -> None:
        """Every other turn through `way`: all requests under the limit, each item once."""
        server = provider_server("anthropic", respond=reads(TURNS), limit=LIMIT)
        manager = ContextManager(format="anthropic", budget=LIMIT, policy=Policy())
        client: Any = manager.wrap(anthropic.Anthropic(base_url=server.url, api_key="k"))
        tools = [{"name": "read_file", "input_schema": SCHEMA}]
        messages: list[Any] = [{"role": "user", "content": "read everything"}]
        for turn in range(TURNS):
            create = CLAUDE_WAYS[way](client) if turn % 2 else client.messages.create
            response = create(model="m", max_tokens=50, messages=messages, tools=tools)
            messages.append({"role": "assistant", "content": response.content})
            uses = [b for b in response.content if b.type == "tool_use"]
            if uses:
                results = [
                    {"type": "tool_result", "tool_use_id": u.id, "content": BIG} for u in uses
                ]
                messages.append({"role": "user", "content": results})
        assert (len(server.requests), server.refused) == (TURNS, [])
        assert [n.kind for n in manager.raw].count("tool_result") == TURNS - 1

    async def test_async_raw_responses(self, provider_server: Any) -> None:
        """`AsyncOpenAI`'s `responses.with_raw_response.create` is managed: its reply is kept."""
        server = provider_server("responses", respond=reads(TURNS), limit=LIMIT)
        manager = ContextManager(format="responses", budget=LIMIT, policy=Policy())
        client: Any = manager.wrap(openai.AsyncOpenAI(base_url=f"{server.url}/v1", api_key="k"))
        tools: list[Any] = [{"type": "function", "name": "read_file", "parameters": SCHEMA}]
        items: list[Any] = [{"role": "user", "content": "read everything"}]
        for _ in range(TURNS):
            raw = await client.responses.with_raw_response.create(
                model="m", input=items, tools=tools
            )
            response = raw.parse()
            items += response.output
            items += [
                {"type": "function_call_output", "call_id": i.call_id, "output": BIG}
                for i in response.output
                if i.type == "function_call"
            ]
        assert (len(server.requests), server.refused) == (TURNS, [])
        assert [n.kind for n in manager.raw].count("tool_result") == TURNS - 1

    async def test_async_anthropic_raw(self, provider_server: Any) -> None:
        """`AsyncAnthropic`'s raw response, whose `parse()` is awaited, is read too."""
        server = provider_server("anthropic", respond=lambda body: {"text": "hello"})
        manager = ContextManager(format="anthropic", policy=Policy())
        client: Any = manager.wrap(anthropic.AsyncAnthropic(base_url=server.url, api_key="k"))
        raw = await client.with_options(max_retries=0).messages.with_raw_response.create(
            model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
        )
        assert (await raw.parse()).content[0].text == "hello"
        assert [n.kind for n in manager.raw] == ["user", "assistant"]


class TestOtherWaysAreRefused:
    def test_streaming_response_is_refused(self, provider_server: Any) -> None:
        """`with_streaming_response` raises, naming the call to make instead; nothing is sent."""
        server = provider_server("openai")
        client: Any = ContextManager(policy=Policy()).wrap(
            openai.OpenAI(base_url=f"{server.url}/v1", api_key="k")
        )
        with pytest.raises(UnmanagedCallError, match=r"call `chat\.completions\.create`"):
            client.chat.completions.with_streaming_response.create(model="m", messages=[])
        assert server.requests == []

    def test_openai_beta_chat_is_refused(self, provider_server: Any) -> None:
        """OpenAI's `beta.chat` reaches the model behind the wrapper: refused."""
        server = provider_server("openai")
        client: Any = ContextManager(policy=Policy()).wrap(
            openai.OpenAI(base_url=f"{server.url}/v1", api_key="k")
        )
        with pytest.raises(UnmanagedCallError, match=r"beta\.chat\.completions"):
            client.beta.chat.completions.parse(model="m", messages=[])
        assert server.requests == []

    def test_beta_stream_is_managed_and_tool_runner_refused(self, provider_server: Any) -> None:
        """Anthropic's `beta.messages.stream` is managed like `messages.stream`; the
        `tool_runner` loop, which calls the bare client, is refused."""
        server = provider_server("anthropic")
        manager = ContextManager(policy=Policy())
        client: Any = manager.wrap(anthropic.Anthropic(base_url=server.url, api_key="k"))
        messages = [{"role": "user", "content": "Say hi."}]
        with client.beta.messages.stream(model="m", max_tokens=5, messages=messages) as stream:
            final = stream.get_final_message()
        kinds = [node.kind for node in manager.raw]
        assert kinds[-1] == "assistant" and final.content
        with pytest.raises(UnmanagedCallError, match=r"beta\.messages\.tool_runner"):
            client.beta.messages.tool_runner(model="m", max_tokens=5, messages=[], tools=[])

    def test_gemini_chats_are_refused(self, provider_server: Any) -> None:
        """A google-genai chat session keeps its own history: refused, with the fix named."""
        server = provider_server("gemini")
        options = types.HttpOptions(base_url=server.url)
        client: Any = ContextManager(policy=Policy()).wrap(
            genai.Client(api_key="k", http_options=options)
        )
        with pytest.raises(UnmanagedCallError, match=r"models\.generate_content"):
            client.chats.create(model="g")
        with pytest.raises(UnmanagedCallError, match=r"chats\.create"):
            client.aio.chats.create(model="g")
