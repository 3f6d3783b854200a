"""A wrapped SDK client hands the caller the model's reply with shortened URLs restored."""

from __future__ import annotations

import json
import re
from typing import Any

import anthropic
import anyio
import openai

from orchestrator import ContextManager
from orchestrator.policy import Policy
from processors import UrlShortener

URL = (
    "https://search.example.com/results?q=context+graph+compaction+survey&sca_esv=58124"
    "&source=hp&ei=Zx81ZqzXNoGBxc8P&iflsig=AL9hbdgAAAAAZj&uact=5"
)
_SHORT = re.compile(r"https://search\.example\.com/results\?[^\s\"\\]*~[0-9a-f]{8,}")


def echo_short_url(body: dict[str, Any]) -> dict[str, Any]:
    """A model that fetches the first shortened URL its request shows, and says it."""
    match = _SHORT.search(json.dumps(body))
    assert match is not None, "the request carries a shortened URL"
    return {"text": f"Fetching {match.group(0)}", "calls": [["fetch", {"url": match.group(0)}]]}


def recorded(fmt: str) -> ContextManager:
    manager = ContextManager(format=fmt, policy=Policy(pipeline=(UrlShortener(),)))
    manager.ingest(
        [
            {"type": "user", "content": "find surveys"},
            {
                "type": "assistant",
                "tool_calls": [{"id": "s1", "name": "search", "arguments": '{"q": "graph"}'}],
            },
            {"type": "tool_result", "call_id": "s1", "name": "search", "content": f"1. {URL}"},
        ]
    )
    return manager


def shortened(fmt: str) -> ContextManager:
    manager = recorded(fmt)
    anyio.run(manager.compact)
    return manager


TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "fetch",
            "parameters": {"type": "object", "properties": {"url": {"type": "string"}}},
        },
    }
]


class TestWrappedClients:
    def test_openai_tool_call_gets_the_original_url(self, provider_server: Any) -> None:
        """The `ChatCompletion` returned holds the original URL in text and arguments."""
        server = provider_server("openai", respond=echo_short_url)
        manager = shortened("openai")
        client = manager.wrap(
            openai.OpenAI(base_url=f"{server.url}/v1", api_key="t", max_retries=0)
        )
        response = client.chat.completions.create(model="m", messages=[], tools=TOOLS)
        message = response.choices[0].message
        assert isinstance(response, openai.types.chat.ChatCompletion)
        assert json.loads(message.tool_calls[0].function.arguments) == {"url": URL}
        assert message.content == f"Fetching {URL}"
        recorded = [manager.raw[i] for i in manager.raw.transcript()][-1]
        assert json.loads(recorded.arguments) == {"url": URL}  # type: ignore[attr-defined]

    async def test_async_anthropic_tool_input_gets_the_original_url(
        self, provider_server: Any
    ) -> None:
        """`AsyncAnthropic`'s `Message` has the original URL in the `tool_use` input."""
        server = provider_server("anthropic", respond=echo_short_url)
        manager = recorded("anthropic")
        await manager.compact()
        client = manager.wrap(
            anthropic.AsyncAnthropic(base_url=server.url, api_key="t", max_retries=0)
        )
        tools = [{"name": "fetch", "input_schema": TOOLS[0]["function"]["parameters"]}]
        response = await client.messages.create(model="m", max_tokens=100, messages=[], tools=tools)
        uses = [block for block in response.content if block.type == "tool_use"]
        assert isinstance(response, anthropic.types.Message)
        assert [use.input for use in uses] == [{"url": URL}]
