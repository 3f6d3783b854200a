"""A managed client reads a reply by what the model added, not by every field the API sent.

The local server answers with the real APIs' whole shapes: a Responses `Response` echoes
its request's `instructions`, `tools` and settings, as the real API does.
"""

from __future__ import annotations

from typing import Any

import anthropic
import openai
from google import genai
from google.genai import types

from orchestrator import ContextManager
from orchestrator.policy import Policy

BUDGET = 6_000
CALLS = 35
BIG = "\n".join(f"row {i}: worker-{i % 7} handled batch {i * 37} status=ok" for i in range(250))
SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
SYSTEM = "You are a careful coding agent."


def reads(turns: int) -> Any:
    """A model that calls `read_file` for `turns - 1` turns, then answers."""
    state = {"n": 0}

    def respond(body: dict[str, Any]) -> dict[str, Any]:
        state["n"] += 1
        if state["n"] < turns:
            return {"calls": [["read_file", {"path": f"f{state['n']}"}]], "reasoning": True}
        return {"text": "done"}

    return respond


def system_nodes(manager: ContextManager) -> list[str]:
    return [str(node.content) for node in manager.raw if node.kind == "system"]


class TestRepliesAreReadByWhatTheyAdd:
    def test_responses_echo_is_not_a_new_system_prompt(self, provider_server: Any) -> None:
        """35 Responses calls with `instructions`: under the budget, the prompt taken in once."""
        server = provider_server("responses", respond=reads(CALLS), limit=BUDGET)
        manager = ContextManager(format="responses", budget=BUDGET, policy=Policy())
        client = manager.wrap(openai.OpenAI(base_url=f"{server.url}/v1", api_key="k"))
        tools: list[Any] = [{"type": "function", "name": "read_file", "parameters": SCHEMA}]
        items: list[Any] = [{"role": "user", "content": "read everything"}]
        while True:
            response = client.responses.create(
                model="m", instructions=SYSTEM, input=items, tools=tools
            )
            assert response.instructions == SYSTEM  # the server echoes it, as the API does
            items += response.output
            calls = [i for i in response.output if i.type == "function_call"]
            if not calls:
                break
            items += [
                {"type": "function_call_output", "call_id": c.call_id, "output": BIG} for c in calls
            ]
        assert (len(server.requests), server.refused, max(server.prompts) <= BUDGET) == (
            CALLS,
            [],
            True,
        )
        assert all(body["instructions"] == SYSTEM for body in server.requests)
        assert len(system_nodes(manager)) == 1

    def test_anthropic_and_gemini_replies_add_only_their_content(
        self, provider_server: Any
    ) -> None:
        """Whole Anthropic and Gemini replies add one assistant turn each, nothing else."""
        claude = provider_server("anthropic", respond=lambda body: {"text": "ok"})
        gemini = provider_server("gemini", respond=lambda body: {"text": "ok"})
        first = ContextManager(format="anthropic", policy=Policy())
        second = ContextManager(format="gemini", policy=Policy())
        claude_client = first.wrap(anthropic.Anthropic(base_url=claude.url, api_key="k"))
        options = types.HttpOptions(base_url=gemini.url)
        gemini_client = second.wrap(genai.Client(api_key="k", http_options=options))
        config = types.GenerateContentConfig(system_instruction=SYSTEM)
        history: list[Any] = [{"role": "user", "content": "hi"}]
        contents: list[Any] = [types.UserContent("hi")]
        for _ in range(3):
            reply = claude_client.messages.create(
                model="m", max_tokens=10, system=SYSTEM, messages=history
            )
            history += [
                {"role": "assistant", "content": reply.content},
                {"role": "user", "content": "more"},
            ]
            answer = gemini_client.models.generate_content(
                model="g", contents=contents, config=config
            )
            contents += [(answer.candidates or [])[0].content, types.UserContent("more")]
        expected = ["system", *("user", "assistant") * 3]
        assert [n.kind for n in first.raw] == [n.kind for n in second.raw] == expected
