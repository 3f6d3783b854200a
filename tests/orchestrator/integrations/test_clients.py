"""`manager.wrap(client)`: real SDK clients against a validating local server, sync and async."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import openai
import pytest
from google import genai
from google.genai import types
from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph.errors import ConfigurationError
from context_graph.importers import load_graph
from orchestrator import ContextManager
from orchestrator.integrations.clients import Conversation
from orchestrator.integrations.clients_apis import OPENAI_CHAT, plain
from orchestrator.policy import Policy

BUDGET = 6_000
BIG = "\n".join(f"row {i}: worker-{i % 7} handled batch {i * 37} status=ok" for i in range(250))
SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
CHAT_TOOLS = [{"type": "function", "function": {"name": "read_file", "parameters": SCHEMA}}]


def reads(turns: int) -> Any:
    """A model that calls `read_file` for `turns - 1` turns, then answers."""
    state = {"n": 0}

    def respond(body: dict[str, Any]) -> dict[str, Any]:
        state["n"] += 1
        if state["n"] < turns:
            return {"calls": [["read_file", {"path": f"f{state['n']}"}]], "reasoning": True}
        return {"text": "done"}

    return respond


def openai_client(server: Any, *, is_async: bool = False) -> Any:
    cls = openai.AsyncOpenAI if is_async else openai.OpenAI
    return cls(base_url=f"{server.url}/v1", api_key="test", max_retries=0)


class TestAsyncLoops:
    async def test_async_openai_chat(self, provider_server: Any) -> None:
        """`AsyncOpenAI`'s managed chat loop: 30 valid requests under the budget."""
        server = provider_server("openai", respond=reads(30), limit=BUDGET)
        manager = ContextManager(format="openai", budget=BUDGET, policy=Policy())
        client = manager.wrap(openai_client(server, is_async=True))
        messages: list[Any] = [{"role": "user", "content": "read everything"}]
        while True:
            response = await client.chat.completions.create(
                model="m", messages=messages, tools=CHAT_TOOLS
            )
            message = response.choices[0].message
            messages.append(message)
            if not message.tool_calls:
                break
            for call in message.tool_calls:
                messages.append({"role": "tool", "tool_call_id": call.id, "content": BIG})
        assert isinstance(response, openai.types.chat.ChatCompletion)
        assert (len(server.requests), server.refused, max(server.prompts) <= BUDGET) == (
            30,
            [],
            True,
        )

    async def test_async_responses_keeps_reasoning(self, provider_server: Any) -> None:
        """`AsyncOpenAI`'s managed Responses loop sends each reasoning item back verbatim."""
        server = provider_server("responses", respond=reads(30), limit=BUDGET)
        manager = ContextManager(format="responses", budget=BUDGET, policy=Policy())
        client = manager.wrap(openai_client(server, is_async=True))
        tools = [{"type": "function", "name": "read_file", "parameters": SCHEMA}]
        items: list[Any] = [{"role": "user", "content": "read everything"}]
        while True:
            response = await client.responses.create(model="m", input=items, tools=tools)
            items += response.output
            calls = [i for i in response.output if i.type == "function_call"]
            if not calls:
                break
            for call in calls:
                items.append(
                    {"type": "function_call_output", "call_id": call.call_id, "output": BIG}
                )
        assert (len(server.requests), server.refused) == (30, [])
        last = server.requests[-1]["input"]
        reasoning = [i for i in last if i.get("type") == "reasoning"]
        assert reasoning[-1] == {
            "type": "reasoning",
            "id": "rs_29",
            "summary": [{"type": "summary_text", "text": "thinking 29"}],
            "encrypted_content": "enc-29",
        }

    async def test_async_anthropic(self, provider_server: Any) -> None:
        """`AsyncAnthropic`'s managed loop: 30 valid requests under the budget."""
        server = provider_server("anthropic", respond=reads(30), limit=BUDGET)
        manager = ContextManager(format="anthropic", budget=BUDGET, policy=Policy())
        client = manager.wrap(
            anthropic.AsyncAnthropic(base_url=server.url, api_key="test", max_retries=0)
        )
        tools: list[Any] = [{"name": "read_file", "input_schema": SCHEMA}]
        messages: list[Any] = [{"role": "user", "content": "read everything"}]
        while True:
            response = await client.messages.create(
                model="m", max_tokens=100, system="Be careful.", messages=messages, tools=tools
            )
            messages.append({"role": "assistant", "content": response.content})
            uses = [b for b in response.content if b.type == "tool_use"]
            if not uses:
                break
            results = [{"type": "tool_result", "tool_use_id": u.id, "content": BIG} for u in uses]
            messages.append({"role": "user", "content": results})
        assert isinstance(response, anthropic.types.Message)
        assert (len(server.requests), server.refused, max(server.prompts) <= BUDGET) == (
            30,
            [],
            True,
        )
        assert all(r["system"][0]["text"] == "Be careful." for r in server.requests)

    async def test_async_gemini(self, provider_server: Any) -> None:
        """google-genai's `aio.models.generate_content`, managed: 30 valid requests."""
        server = provider_server("gemini", respond=reads(30), limit=BUDGET)
        manager = ContextManager(format="gemini", budget=BUDGET, policy=Policy())
        options = types.HttpOptions(base_url=server.url)
        client = manager.wrap(genai.Client(api_key="test", http_options=options))
        declaration = types.FunctionDeclaration(name="read_file", parameters_json_schema=SCHEMA)
        config = types.GenerateContentConfig(
            system_instruction="Be careful.",
            tools=[types.Tool(function_declarations=[declaration])],
            temperature=0.0,
        )
        contents: list[Any] = [types.UserContent("read everything")]
        while True:
            response = await client.aio.models.generate_content(
                model="g", contents=contents, config=config
            )
            contents.append((response.candidates or [])[0].content)
            if not response.function_calls:
                break
            parts = [
                types.Part.from_function_response(name=c.name or "", response={"output": BIG})
                for c in response.function_calls
            ]
            contents.append(types.Content(role="user", parts=parts))
        assert isinstance(response, types.GenerateContentResponse)
        assert (len(server.requests), server.refused, max(server.prompts) <= BUDGET) == (
            30,
            [],
            True,
        )
        assert server.requests[-1]["generationConfig"]["temperature"] == 0.0


class TestTakingIn:
    def test_sends_the_render_not_the_callers_list(self, provider_server: Any) -> None:
        """The body is the manager's render: what was added to the manager is sent too."""
        server = provider_server("openai")
        manager = ContextManager(format="openai", policy=Policy())
        manager.add_note("The repository uses tabs.")
        client = manager.wrap(openai_client(server))
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        body = server.requests[0]
        assert body["messages"] == manager.render_sync().payload["messages"][:-1]  # + reply
        assert "tabs" in json.dumps(body["messages"])

    def test_each_item_is_ingested_once(self, provider_server: Any) -> None:
        """Across calls, the reply the loop appended and the older items are not ingested again."""
        server = provider_server("openai", respond=reads(3))
        manager = ContextManager(format="openai", policy=Policy())
        client = manager.wrap(openai_client(server))
        messages: list[Any] = [{"role": "user", "content": "go"}]
        for _ in range(3):
            response = client.chat.completions.create(model="m", messages=messages)
            message = response.choices[0].message
            messages.append(message)
            for call in message.tool_calls or ():
                messages.append({"role": "tool", "tool_call_id": call.id, "content": "out"})
        kinds = [node.kind for node in manager.raw]
        assert kinds == [
            "user",
            *("assistant", "tool_call", "tool_result") * 2,
            "assistant",
        ]

    def test_a_reply_not_appended_is_still_kept(self, provider_server: Any) -> None:
        """A loop that does not append the reply still has it in the next request."""
        server = provider_server("openai", respond=lambda body: {"text": "first answer"})
        manager = ContextManager(format="openai", policy=Policy())
        client = manager.wrap(openai_client(server))
        messages: list[Any] = [{"role": "user", "content": "one"}]
        client.chat.completions.create(model="m", messages=messages)
        messages.append({"role": "user", "content": "two"})
        client.chat.completions.create(model="m", messages=messages)
        assert server.requests[1]["messages"] == [
            {"role": "user", "content": "one"},
            {"role": "assistant", "content": "first answer"},
            {"role": "user", "content": "two"},
        ]

    def test_a_shorter_history_adds_nothing(self, provider_server: Any) -> None:
        """A conversation the record already holds whole is taken in as nothing new."""
        server = provider_server("openai")
        manager = ContextManager(format="openai", policy=Policy())
        client = manager.wrap(openai_client(server))
        messages: list[Any] = [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]
        client.chat.completions.create(model="m", messages=messages)
        client.chat.completions.create(model="m", messages=messages[:1])
        assert [n.kind for n in manager.raw] == ["user", "user", "assistant", "assistant"]
        assert server.requests[1]["messages"][:2] == messages

    def test_a_changed_item_is_refused(self, provider_server: Any) -> None:
        """A conversation that leaves the record's partway is refused before anything is sent."""
        server = provider_server("openai")
        manager = ContextManager(format="openai", policy=Policy())
        client = manager.wrap(openai_client(server))
        messages: list[Any] = [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]
        client.chat.completions.create(model="m", messages=messages)
        changed = [messages[0], {"role": "user", "content": "c"}]
        with pytest.raises(ConfigurationError, match=r"`messages\[1\]` is not the item"):
            client.chat.completions.create(model="m", messages=changed)
        assert (len(server.requests), len(manager.raw)) == (1, 3)

    def test_only_the_new_prompt_is_taken_in(self, provider_server: Any) -> None:
        """A call that passes only its new prompt adds it after what the record holds."""
        server = provider_server("responses")
        manager = ContextManager(format="responses", policy=Policy())
        client = manager.wrap(openai_client(server))
        client.responses.create(model="m", input="first question")
        client.responses.create(model="m", input="second question")
        texts = [i["content"][0]["text"] for i in server.requests[1]["input"]]
        assert texts == ["first question", "done", "second question"]

    def test_a_changed_system_prompt_is_ingested(self, provider_server: Any) -> None:
        """Anthropic's `system=` is taken in once, and again only when it changes."""
        server = provider_server("anthropic")
        manager = ContextManager(format="anthropic", policy=Policy())
        client = manager.wrap(anthropic.Anthropic(base_url=server.url, api_key="k", max_retries=0))
        messages: list[Any] = [{"role": "user", "content": "a"}]
        for system in ("one", "one", "two"):
            response = client.messages.create(
                model="m", max_tokens=10, system=system, messages=messages
            )
            messages += [
                {"role": "assistant", "content": response.content},
                {"role": "user", "content": "more"},
            ]
        assert [n.kind for n in manager.raw].count("system") == 2

    def test_usage_is_reported(self, provider_server: Any) -> None:
        """Each reply's prompt tokens reach the calibrator (`usage_reported`)."""
        server = provider_server("openai")
        manager = ContextManager(format="openai", policy=Policy())
        seen: list[Any] = []
        manager.bus.connect("usage_reported", lambda sender, **kw: seen.append(kw["usage"]))
        client = manager.wrap(openai_client(server))
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        assert [u["prompt_tokens"] for u in seen] == server.prompts


class TestRefusals:
    def test_server_side_history_is_refused(self, provider_server: Any) -> None:
        """`previous_response_id` would send the history twice: refused before sending."""
        server = provider_server("responses")
        client = ContextManager(format="responses", policy=Policy()).wrap(openai_client(server))
        with pytest.raises(ConfigurationError, match="previous_response_id"):
            client.responses.create(model="m", input="hi", previous_response_id="resp_1")
        assert server.requests == []

    def test_unknown_client_is_refused(self) -> None:
        """Anything but a supported SDK client is a `ConfigurationError` listing them."""
        with pytest.raises(ConfigurationError, match=r"cannot manage a builtins.object; expected"):
            ContextManager(policy=Policy()).wrap(object())

    def test_other_attributes_are_the_clients_own(self, provider_server: Any) -> None:
        """Attributes that are not managed come from the client itself."""
        server = provider_server("openai")
        bare = openai_client(server)
        client = ContextManager(policy=Policy()).wrap(bare)
        assert client.models is bare.models
        assert client.chat.completions.list == bare.chat.completions.list


def _completion(turn: int, calls: int) -> Any:
    """A `ChatCompletion` with `calls` tool calls (a text answer when none)."""
    from openai.types.chat import ChatCompletion

    message: dict[str, Any] = {"role": "assistant", "content": None if calls else f"answer {turn}"}
    if calls:
        message["tool_calls"] = [
            {
                "id": f"c{turn}_{k}",
                "type": "function",
                "function": {"name": "read_file", "arguments": json.dumps({"path": f"{turn}/{k}"})},
            }
            for k in range(calls)
        ]
    return ChatCompletion.model_validate(
        {
            "id": f"cc{turn}",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 50, "completion_tokens": 5, "total_tokens": 55},
        }
    )


class TestConversation:
    @settings(max_examples=40)
    @given(
        steps=st.lists(
            st.tuples(st.integers(0, 2), st.integers(0, 2), st.booleans()), min_size=1, max_size=6
        )
    )
    def test_the_record_is_the_loops_conversation_read_once(
        self, steps: list[tuple[int, int, bool]]
    ) -> None:
        """Whatever the loop's shape, the manager holds its whole conversation, each item once."""
        manager = ContextManager(format="openai", policy=Policy())
        conversation = Conversation(manager, OPENAI_CHAT)
        messages: list[Any] = [{"role": "user", "content": "start"}]
        for turn, (calls, users, as_dict) in enumerate(steps):
            conversation.take({"messages": messages})
            manager.render_sync()
            response = _completion(turn, calls)
            conversation.give(response)
            message = response.choices[0].message
            messages.append(message.model_dump(exclude_none=True) if as_dict else message)
            for k in range(calls):
                messages.append({"role": "tool", "tool_call_id": f"c{turn}_{k}", "content": "out"})
            messages += [{"role": "user", "content": f"more {turn}.{u}"} for u in range(users)]
        conversation.take({"messages": messages})
        expected = load_graph({"messages": plain(messages)}, format="openai")
        assert [(n.kind, n.content) for n in manager.raw] == [(n.kind, n.content) for n in expected]
