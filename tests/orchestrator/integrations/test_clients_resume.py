"""A wrapped loop resumed over a reopened session file: whole list or new items, same record.

The first run stops after a reply with a tool call and saves its conversation as JSON;
the session file is closed. The second run reopens it (`ContextManager.open`), wraps a
new client, answers the pending call and goes on to the end, passing either the whole
saved conversation extended, or only what came after it. Either way the record is the
one a run that never stopped makes: nothing twice, no answer lost.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from google import genai
from google.genai import types

from orchestrator import ContextManager
from orchestrator.integrations.clients_apis import plain
from orchestrator.policy import Policy

TURNS = 6
PAUSE = 3
"""The first run stops after this many calls, the last reply holding a tool call."""
SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
SYSTEM = "You are a careful coding agent."


def reads() -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A model that reads a file per turn (two at once on the second), then answers."""
    state = {"n": 0}

    def respond(body: dict[str, Any]) -> dict[str, Any]:
        state["n"] += 1
        n = state["n"]
        if n >= TURNS:
            return {"text": "all read"}
        calls = [["read_file", {"path": f"f{n}.{k}"}] for k in range(2 if n == 2 else 1)]
        return {"calls": calls, "text": f"reading {n}" if n % 2 else ""}

    return respond


def output(path: str) -> str:
    return f"contents of {path}: " + " ".join(f"w{len(path) * i}" for i in range(40))


@dataclass(frozen=True)
class Loop:
    """One SDK's loop: a call, the reply appended, the answers to its calls."""

    wire: str
    client: Callable[[str], Any]
    call: Callable[[Any, list[Any]], Any]
    reply: Callable[[Any], list[Any]]
    answers: Callable[[Any], list[Any]]


def _chat_answers(response: Any) -> list[Any]:
    calls = response.choices[0].message.tool_calls or []
    return [
        {
            "role": "tool",
            "tool_call_id": c.id,
            "content": output(json.loads(c.function.arguments)["path"]),
        }
        for c in calls
    ]


def _responses_answers(response: Any) -> list[Any]:
    calls = [i for i in response.output if i.type == "function_call"]
    return [
        {
            "type": "function_call_output",
            "call_id": c.call_id,
            "output": output(json.loads(c.arguments)["path"]),
        }
        for c in calls
    ]


def _anthropic_answers(response: Any) -> list[Any]:
    uses = [b for b in response.content if b.type == "tool_use"]
    results = [
        {"type": "tool_result", "tool_use_id": u.id, "content": output(u.input["path"])}
        for u in uses
    ]
    return [{"role": "user", "content": results}] if results else []


def _gemini_answers(response: Any) -> list[Any]:
    parts = [
        types.Part.from_function_response(
            name=c.name or "", response={"output": output((c.args or {})["path"])}
        )
        for c in response.function_calls or []
    ]
    return [types.Content(role="user", parts=parts)] if parts else []


CHAT_TOOLS = [{"type": "function", "function": {"name": "read_file", "parameters": SCHEMA}}]
RESPONSES_TOOLS = [{"type": "function", "name": "read_file", "parameters": SCHEMA}]
CLAUDE_TOOLS = [{"name": "read_file", "input_schema": SCHEMA}]
GEMINI_CONFIG = types.GenerateContentConfig(
    system_instruction=SYSTEM,
    tools=[
        types.Tool(
            function_declarations=[
                types.FunctionDeclaration(name="read_file", parameters_json_schema=SCHEMA)
            ]
        )
    ],
)

LOOPS = {
    "chat": Loop(
        "openai",
        lambda url: openai.OpenAI(base_url=f"{url}/v1", api_key="k", max_retries=0),
        lambda c, items: c.chat.completions.create(model="m", messages=items, tools=CHAT_TOOLS),
        lambda r: [r.choices[0].message],
        _chat_answers,
    ),
    "responses": Loop(
        "responses",
        lambda url: openai.OpenAI(base_url=f"{url}/v1", api_key="k", max_retries=0),
        lambda c, items: c.responses.create(
            model="m", instructions=SYSTEM, input=items, tools=RESPONSES_TOOLS
        ),
        lambda r: list(r.output),
        _responses_answers,
    ),
    "anthropic": Loop(
        "anthropic",
        lambda url: anthropic.Anthropic(base_url=url, api_key="k", max_retries=0),
        lambda c, items: c.messages.create(
            model="m", max_tokens=100, system=SYSTEM, messages=items, tools=CLAUDE_TOOLS
        ),
        lambda r: [{"role": "assistant", "content": r.content}],
        _anthropic_answers,
    ),
    "gemini": Loop(
        "gemini",
        lambda url: genai.Client(api_key="k", http_options=types.HttpOptions(base_url=url)),
        lambda c, items: c.models.generate_content(model="g", contents=items, config=GEMINI_CONFIG),
        lambda r: [r.candidates[0].content],
        _gemini_answers,
    ),
}


def first_items(name: str) -> list[Any]:
    items: list[Any] = [{"role": "user", "content": "read the files"}]
    if name == "chat":
        items.insert(0, {"role": "system", "content": SYSTEM})
    if name == "gemini":
        items = [types.UserContent("read the files")]
    return items


def run(loop: Loop, client: Any, items: list[Any], calls: int) -> tuple[list[Any], list[Any]]:
    """`calls` turns of the loop; the conversation and the last reply's answers (not added)."""
    answers: list[Any] = []
    for _ in range(calls):
        items = [*items, *answers]
        response = loop.call(client, items)
        items = [*items, *loop.reply(response)]
        answers = loop.answers(response)
        if not answers:
            break
    return items, answers


def record(manager: ContextManager) -> list[tuple[str, Any]]:
    """The record by kind and content."""
    return [(node.kind, node.content) for node in manager.raw]


@pytest.mark.parametrize("name", list(LOOPS))
@pytest.mark.parametrize("style", ["whole", "new"])
def test_a_resumed_loop_makes_the_record_of_an_unbroken_one(
    name: str, style: str, provider_server: Any, tmp_path: Path
) -> None:
    """Resumed with the whole saved list or only the new items, the record is the same."""
    loop = LOOPS[name]
    fmt: Any = loop.wire
    unbroken = ContextManager(format=fmt, policy=Policy())
    reference = provider_server(loop.wire, respond=reads())
    run(loop, unbroken.wrap(loop.client(reference.url)), first_items(name), TURNS + 1)

    server = provider_server(loop.wire, respond=reads())
    path = tmp_path / "session.db"
    first = ContextManager.open(path, format=fmt, policy=Policy())
    items, answers = run(loop, first.wrap(loop.client(server.url)), first_items(name), PAUSE)
    saved = json.loads(json.dumps(plain(items)))  # what the loop kept on disk
    first.close()
    assert answers  # the pause left a call to answer

    second = ContextManager.open(path, format=fmt, policy=Policy())
    client = second.wrap(loop.client(server.url))
    given = saved if style == "whole" else []
    run(loop, client, [*given, *answers], TURNS + 1)
    assert server.refused == []
    assert record(second) == record(unbroken)
    second.close()


def test_a_changed_system_prompt_is_taken_in_once(provider_server: Any, tmp_path: Path) -> None:
    """The whole saved chat list with a new system message: the prompt is new, nothing else."""
    server = provider_server("openai", respond=lambda body: {"text": "ok"})
    path = tmp_path / "session.db"
    first = ContextManager.open(path, format="openai", policy=Policy())
    messages: list[Any] = [
        {"role": "system", "content": "one"},
        {"role": "user", "content": "hi"},
    ]
    reply = first.wrap(LOOPS["chat"].client(server.url)).chat.completions.create(
        model="m", messages=messages
    )
    saved = json.loads(json.dumps(plain([*messages, reply.choices[0].message])))
    first.close()
    second = ContextManager.open(path, format="openai", policy=Policy())
    client = second.wrap(LOOPS["chat"].client(server.url))
    saved[0]["content"] = "two"
    client.chat.completions.create(
        model="m", messages=[*saved, {"role": "user", "content": "more"}]
    )
    kinds = [n.kind for n in second.raw]
    assert kinds == ["system", "user", "assistant", "system", "user", "assistant"]
    second.close()


def test_an_answer_to_no_call_is_refused_at_its_place(provider_server: Any, tmp_path: Path) -> None:
    """Resumed with an answer to a call the record lacks: `IngestError` at `input[0]`."""
    from context_graph.errors import IngestError

    loop = LOOPS["responses"]
    server = provider_server("responses", respond=reads())
    path = tmp_path / "session.db"
    first = ContextManager.open(path, format="responses", policy=Policy())
    run(loop, first.wrap(loop.client(server.url)), first_items("responses"), PAUSE)
    first.close()
    second = ContextManager.open(path, format="responses", policy=Policy())
    before = len(second.raw)
    stray = {"type": "function_call_output", "call_id": "call_none", "output": "x"}
    with pytest.raises(IngestError, match=r"input\[0\]"):
        loop.call(second.wrap(loop.client(server.url)), [stray])
    assert (len(second.raw), len(server.requests)) == (before, PAUSE)
    second.close()
