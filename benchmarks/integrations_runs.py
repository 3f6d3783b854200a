"""The agent task of `benchmarks.integrations`, written once per framework and managed client.

Each runner plays one agent: it asks the model at `url` (a `ProviderServer` of its wire
format) to find why a build fails; the model reads one build log per turn with the tool
`read_log(n)` and then answers. With `integrated`, the framework gets the integration
exactly as its docs page adds it (the middleware, the history processor, the session, or
`manager.wrap(client)`); without, it is the same agent with those lines left out. A runner
returns when the model answers; a request the server refuses raises the SDK's own error
(`REJECTIONS`), which ends the run, as it would end an agent on the real API.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import anthropic
import openai
from google import genai
from google.genai import errors as genai_errors
from google.genai import types as genai_types
from langchain_core.language_models import BaseChatModel, LangSmithParams
from langchain_core.messages import AIMessage, BaseMessage, convert_to_openai_messages
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field
from pydantic_ai.exceptions import ModelHTTPError, ModelRequestRejectedError

from benchmarks.provider_server import Wire
from orchestrator import ContextManager

__all__ = ["ANSWER", "REJECTIONS", "RUNNERS", "Task"]

ANSWER = "The build fails in module 7."
SYSTEM = "You are a build doctor."
PROMPT = "Why does the build fail?"
DESCRIPTION = "Read build log number n."
SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
KEY = "benchmark-key"
MODEL = "bench-model"
#: What each SDK raises when the provider answers HTTP 400.
REJECTIONS: tuple[type[BaseException], ...] = (
    openai.BadRequestError,
    anthropic.BadRequestError,
    genai_errors.ClientError,
    ModelHTTPError,
    ModelRequestRejectedError,  # pydantic-ai's AnthropicModel on a 400
)


@dataclass(frozen=True)
class Task:
    """The agent task: `turns` build logs of `log_lines` lines each, then the answer.

    Attributes:
        turns: Tool outputs the model asks for, one per request; one more request answers.
        budget: The integration's budget and the provider's context limit, in tokens.
        log_lines: Lines per log (300 lines are about 5,000 tokens).
    """

    turns: int = 30
    budget: int = 16_000
    log_lines: int = 300

    def log(self, n: int) -> str:
        """Build log number `n`: every line distinct, so nothing is shared between turns."""
        lines = range(self.log_lines)
        return "\n".join(f"[{n}:{i:04d}] cc -c src/module_{i}.c -o build/m{i}.o ok" for i in lines)

    def script(self, reasoning: bool) -> Callable[[dict[str, Any]], dict[str, Any]]:
        """The model as a server's `respond`: `read_log(k)` on accepted request k, then answers."""
        accepted = [0]

        def respond(body: dict[str, Any]) -> dict[str, Any]:
            accepted[0] += 1
            if accepted[0] > self.turns:
                return {"text": ANSWER}
            return {"calls": [["read_log", {"n": accepted[0]}]], "reasoning": reasoning}

        return respond


# --- LangChain -------------------------------------------------------------------------------


class _ChatCompletionsModel(BaseChatModel):
    """A LangChain chat model that speaks Chat Completions over HTTP with the openai SDK.

    It stands in for `langchain-openai`'s `ChatOpenAI`, which is not installed here.
    """

    client: Any
    tools: list[dict[str, Any]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "chat-completions-over-http"

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> LangSmithParams:
        """It speaks Chat Completions, as `ChatOpenAI` does (the middleware's format)."""
        return LangSmithParams(ls_provider="openai", ls_model_name=MODEL, ls_model_type="chat")

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> _ChatCompletionsModel:
        return self.model_copy(update={"tools": [convert_to_openai_tool(t) for t in tools]})

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        response = self.client.chat.completions.create(
            model=MODEL, messages=_chat_messages(messages), tools=self.tools
        )
        message = response.choices[0].message
        calls = [
            {"id": c.id, "name": c.function.name, "args": json.loads(c.function.arguments)}
            for c in message.tool_calls or ()
        ]
        tokens = response.usage.prompt_tokens
        usage = {"input_tokens": tokens, "output_tokens": 5, "total_tokens": tokens + 5}
        reply = AIMessage(message.content or "", tool_calls=calls, usage_metadata=usage)
        return ChatResult(generations=[ChatGeneration(message=reply)])


def _chat_messages(messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
    """LangChain messages as Chat Completions messages (which have no `name` on a tool message)."""
    converted = convert_to_openai_messages(list(messages))
    return [{k: v for k, v in m.items() if k != "name" or m["role"] != "tool"} for m in converted]


def _langchain(task: Task, url: str, integrated: bool) -> None:
    from langchain.agents import create_agent
    from langchain_core.runnables import RunnableConfig
    from langchain_core.tools import tool
    from langgraph.checkpoint.memory import InMemorySaver

    from orchestrator.integrations.langchain import ContextMiddleware

    @tool
    def read_log(n: int) -> str:
        """Read build log number n."""
        return task.log(n)

    with openai.OpenAI(base_url=f"{url}/v1", api_key=KEY, max_retries=0) as client:
        middleware = [ContextMiddleware(budget=task.budget)] if integrated else []
        agent = create_agent(
            _ChatCompletionsModel(client=client),
            [read_log],
            system_prompt=SYSTEM,
            middleware=middleware,
            checkpointer=InMemorySaver(),
        )
        limit = 4 * task.turns + 10  # LangGraph counts each model and tool step
        config: RunnableConfig = {"configurable": {"thread_id": "bench"}, "recursion_limit": limit}
        agent.invoke({"messages": [{"role": "user", "content": PROMPT}]}, config)


# --- pydantic-ai -----------------------------------------------------------------------------


def _pydantic_ai(task: Task, url: str, integrated: bool) -> None:
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    async def run() -> None:
        async with openai.AsyncOpenAI(base_url=f"{url}/v1", api_key=KEY, max_retries=0) as client:
            model = OpenAIChatModel(MODEL, provider=OpenAIProvider(openai_client=client))
            await _pydantic_ai_agent(task, model, integrated)

    asyncio.run(run())


def _pydantic_ai_anthropic(task: Task, url: str, integrated: bool) -> None:
    """The same agent on pydantic-ai's `AnthropicModel` (rendered in the Anthropic format)."""
    from pydantic_ai.models.anthropic import AnthropicModel
    from pydantic_ai.providers.anthropic import AnthropicProvider

    async def run() -> None:
        async with anthropic.AsyncAnthropic(base_url=url, api_key=KEY, max_retries=0) as client:
            provider = AnthropicProvider(anthropic_client=client)
            # A set max_tokens keeps the SDK from asking for a stream (the server answers JSON).
            model = AnthropicModel(MODEL, provider=provider, settings={"max_tokens": 1024})
            await _pydantic_ai_agent(task, model, integrated)

    asyncio.run(run())


async def _pydantic_ai_agent(task: Task, model: Any, integrated: bool) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.usage import UsageLimits

    from orchestrator.integrations.pydantic_ai import ContextHistory

    capabilities = [ContextHistory(budget=task.budget).capability()] if integrated else []
    agent = Agent(model, instructions=SYSTEM, capabilities=capabilities)

    @agent.tool_plain
    def read_log(n: int) -> str:
        """Read build log number n."""
        return task.log(n)

    await agent.run(PROMPT, usage_limits=UsageLimits(request_limit=None))


# --- OpenAI Agents SDK -----------------------------------------------------------------------


def _openai_agents(task: Task, url: str, integrated: bool) -> None:
    from agents import Agent, OpenAIResponsesModel, Runner, function_tool, set_tracing_disabled

    from orchestrator.integrations.openai_agents import ContextSession

    set_tracing_disabled(True)  # the trace exporter would reach OpenAI
    # The Runner logs a rejected request before it raises; the table reports it.
    logging.getLogger("openai.agents").setLevel(logging.CRITICAL)

    def read_log(n: int) -> str:
        """Read build log number n."""
        return task.log(n)

    async def run() -> None:
        async with openai.AsyncOpenAI(base_url=f"{url}/v1", api_key=KEY, max_retries=0) as client:
            model = OpenAIResponsesModel(model=MODEL, openai_client=client)
            tools: list[Any] = [function_tool(read_log)]
            agent = Agent(name="doctor", instructions=SYSTEM, tools=tools, model=model)
            turns = task.turns + 5
            if not integrated:
                await Runner.run(agent, PROMPT, max_turns=turns)
                return
            session = ContextSession(ContextManager(format="responses", budget=task.budget))
            await Runner.run(
                agent,
                PROMPT,
                max_turns=turns,
                session=session,
                run_config=session.run_config(),
                hooks=session.hooks(),
            )

    asyncio.run(run())


# --- managed clients -------------------------------------------------------------------------


def _manage(client: Any, task: Task, format: Any, integrated: bool) -> Any:
    """The loop's one changed line: `manager.wrap(client)` instead of `client`."""
    if not integrated:
        return client
    return ContextManager(format=format, budget=task.budget).wrap(client)


def _openai_chat(task: Task, url: str, integrated: bool) -> None:
    tools = [
        {
            "type": "function",
            "function": {"name": "read_log", "description": DESCRIPTION, "parameters": SCHEMA},
        }
    ]
    with openai.OpenAI(base_url=f"{url}/v1", api_key=KEY, max_retries=0) as bare:
        client = _manage(bare, task, "openai", integrated)
        messages: list[Any] = [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": PROMPT},
        ]
        while True:
            response = client.chat.completions.create(model=MODEL, messages=messages, tools=tools)
            message = response.choices[0].message
            messages.append(message)
            if not message.tool_calls:
                return
            for call in message.tool_calls:
                n = json.loads(call.function.arguments)["n"]
                messages.append({"role": "tool", "tool_call_id": call.id, "content": task.log(n)})


def _openai_responses(task: Task, url: str, integrated: bool) -> None:
    tools = [
        {
            "type": "function",
            "name": "read_log",
            "description": DESCRIPTION,
            "parameters": SCHEMA,
            "strict": False,  # required by the SDK's `FunctionToolParam`
        }
    ]
    with openai.OpenAI(base_url=f"{url}/v1", api_key=KEY, max_retries=0) as bare:
        client = _manage(bare, task, "responses", integrated)
        items: list[Any] = [{"role": "user", "content": PROMPT}]
        while True:
            response = client.responses.create(
                model=MODEL, instructions=SYSTEM, input=items, tools=tools
            )
            items += response.output
            calls = [item for item in response.output if item.type == "function_call"]
            if not calls:
                return
            for call in calls:
                output = task.log(json.loads(call.arguments)["n"])
                items.append(
                    {"type": "function_call_output", "call_id": call.call_id, "output": output}
                )


def _anthropic(task: Task, url: str, integrated: bool) -> None:
    tools = [{"name": "read_log", "description": DESCRIPTION, "input_schema": SCHEMA}]
    with anthropic.Anthropic(base_url=url, api_key=KEY, max_retries=0) as bare:
        client = _manage(bare, task, "anthropic", integrated)
        messages: list[Any] = [{"role": "user", "content": PROMPT}]
        while True:
            response = client.messages.create(
                model=MODEL, max_tokens=1024, system=SYSTEM, messages=messages, tools=tools
            )
            messages.append({"role": "assistant", "content": response.content})
            uses = [block for block in response.content if block.type == "tool_use"]
            if not uses:
                return
            results = [
                {"type": "tool_result", "tool_use_id": use.id, "content": task.log(use.input["n"])}
                for use in uses
            ]
            messages.append({"role": "user", "content": results})


def _google_genai(task: Task, url: str, integrated: bool) -> None:
    types = genai_types
    declaration = types.FunctionDeclaration(
        name="read_log", description=DESCRIPTION, parameters_json_schema=SCHEMA
    )
    config = types.GenerateContentConfig(
        system_instruction=SYSTEM, tools=[types.Tool(function_declarations=[declaration])]
    )
    options = types.HttpOptions(base_url=url)
    with genai.Client(api_key=KEY, http_options=options) as bare:
        client = _manage(bare, task, "gemini", integrated)
        contents: list[Any] = [types.UserContent(PROMPT)]
        while True:
            response = client.models.generate_content(model=MODEL, contents=contents, config=config)
            contents.append(response.candidates[0].content)
            if not response.function_calls:
                return
            parts = [
                types.Part.from_function_response(
                    name=call.name or "", response={"output": task.log(int(call.args["n"]))}
                )
                for call in response.function_calls
            ]
            contents.append(types.Content(role="user", parts=parts))


Runner = Callable[[Task, str, bool], None]
#: Each framework or client: its wire format and its runner, in the table's order.
RUNNERS: dict[str, tuple[Wire, Runner]] = {
    "langchain": ("openai", _langchain),
    "pydantic-ai": ("openai", _pydantic_ai),
    "pydantic-ai anthropic": ("anthropic", _pydantic_ai_anthropic),
    "openai-agents": ("responses", _openai_agents),
    "openai chat": ("openai", _openai_chat),
    "openai responses": ("responses", _openai_responses),
    "anthropic": ("anthropic", _anthropic),
    "google-genai": ("gemini", _google_genai),
}
