"""pydantic-ai: a history processor that renders each model request through the engine.

```python
history = ContextHistory(budget=16_000)
agent = Agent(model, capabilities=[history.capability()])
```

Before each model request the processor ingests the messages of the history it has not
seen, lets the conversation's `ContextManager` compact and render it under the budget,
and returns the rendered history. pydantic-ai keeps what a history processor returns as
the run's history (`result.all_messages()`), and hands it back on the next request and
the next run. Every message the processor returns is marked in its `metadata`, so a
marked message is never ingested again (nothing is compacted twice) while every
message of pydantic-ai's own is ingested once (nothing is lost: the engine's record,
`history.manager(conversation_id).raw`, holds the whole conversation).

The history is rendered in the wire format of the model the request goes to, read off
`ctx.model` without importing any provider package: `AnthropicModel` is `anthropic`,
`OpenAIChatModel` `openai`, `OpenAIResponsesModel` `responses`, `GoogleModel` `gemini`
(by the model's class, wrappers such as `InstrumentedModel` looked through; else by its
`system`). So the request is fitted and counted as that provider counts it, and a
`ThinkingPart` goes back only where its provider takes it (an Anthropic signature to
Anthropic, a Gemini one to Gemini, a Responses reasoning item to Responses). The rendered
body is read back into `ModelMessage`s (`orchestrator.integrations.rendered`), each part
the engine left alone being pydantic-ai's own object. `format=` names the format instead;
a model of another provider is rendered in the OpenAI chat format, and `last_format`
says so (`FormatChoice.fallback`).

Needs the `pydantic-ai` extra (`pip install '.[pydantic-ai]'` in the context-graph checkout).
"""

from __future__ import annotations

import contextlib
import os
import urllib.parse
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from context_graph.errors import ConfigurationError
from context_graph.formats.wires import (
    ANTHROPIC_FORMAT,
    GEMINI_FORMAT,
    OPENAI_FORMAT,
    RESPONSES_FORMAT,
    provider_format,
)
from context_graph.tokens.counting import ProviderFormat
from orchestrator.integrations.extras import missing_extra
from orchestrator.integrations.manager_options import (
    FALLBACK_FORMAT,
    FormatChoice,
    check_manager_options,
    choose_format,
)
from orchestrator.integrations.rendered import chat_items, original_ids, system_tokens
from orchestrator.manager import ContextManager

try:
    from pydantic_ai import RunContext
    from pydantic_ai.capabilities import ProcessHistory
    from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse
except ImportError as exc:  # the extra is not installed
    raise missing_extra(__name__, "pydantic-ai", "pydantic-ai", "pydantic-ai-slim") from exc

from orchestrator.integrations.pydantic_ai_messages import from_payload, mark_of, to_events

__all__ = ["DEFAULT_CONVERSATION", "ContextHistory", "model_provider"]

#: The conversation of a run without a `conversation_id`.
DEFAULT_CONVERSATION = "default"


class ContextHistory:
    """A pydantic-ai history processor backed by one `ContextManager` per conversation.

    Use it as `capabilities=[history.capability()]` (pydantic-ai's `ProcessHistory`) or
    call it directly as `processor(ctx, messages)`. Conversations are told apart by
    pydantic-ai's `conversation_id` (inherited from `message_history`); with
    `directory=` each one's session is a SQLite file there, so a new process given the
    stored history continues the engine's record.

    With `directory=`, a run through the capability gives its conversation's file back
    when it ends (the manager is closed, once no other run of this processor uses it),
    so the next request may come through a new `ContextHistory` or another process. A
    manager opened outside a run (`manager()`, a direct call) stays open until a run
    through the capability uses it and ends, or `close()` (or the end of
    `with ContextHistory(...) as history:`).

    The request is budgeted in the format of the model it goes to (see the module),
    with the agent's tool definitions and its latest `instructions`; the provider's
    count comes back with each response's `usage.input_tokens`. `last_format` is the
    format of the latest request and why it was chosen.

    Args:
        budget: The token budget of a whole request.
        directory: Keep each conversation's session in `<directory>/<id>.sqlite`.
        factory: Builds the manager of a conversation (given its id) instead;
            exclusive with `directory` and the manager options.
        format: Render every request in this format (`openai`, `anthropic`, `gemini`,
            `responses`) instead of the model's own; also the managers' default.
        **options: `ContextManager` options (`policy=`, `tools=`, ...).

    Raises:
        ConfigurationError: `factory` with other options, an unknown `format`, or a
            `directory` that does not exist.
    """

    def __init__(
        self,
        *,
        budget: int | None = None,
        directory: str | os.PathLike[str] | None = None,
        factory: Callable[[str], ContextManager] | None = None,
        format: ProviderFormat | None = None,
        **options: Any,
    ) -> None:
        self._directory = check_manager_options(
            "ContextHistory", budget, directory, factory, options, format
        )
        self._budget = budget
        self._factory = factory
        self._format = format
        self._options = options
        self._managers: dict[str, ContextManager] = {}
        self._rendered: set[str] = set()
        self._runs: dict[str, set[str]] = {}  # a conversation's runs going on
        self._warned: set[str] = set()
        #: The format of the latest request, and why (`None` before the first).
        self.last_format: FormatChoice | None = None

    def capability(self) -> ProcessHistory[Any]:
        """This processor as pydantic-ai's `ProcessHistory` capability.

        It also closes, when a run ends, the managers that run opened from `directory`.
        """
        return _HistoryCapability(self)

    def manager(self, conversation_id: str = DEFAULT_CONVERSATION) -> ContextManager:
        """The manager of a conversation (made, or resumed from `directory`, on first use)."""
        manager = self._managers.get(conversation_id)
        if manager is None:
            manager = self._managers[conversation_id] = self._open(conversation_id)
        return manager

    def close(self) -> None:
        """Close every conversation's manager (and session file); idempotent.

        Every manager is closed even if one raises; the first error is raised after.
        """
        managers, self._managers = list(self._managers.values()), {}
        self._runs.clear()
        with contextlib.ExitStack() as stack:
            for manager in managers:
                stack.callback(manager.close)

    def __enter__(self) -> ContextHistory:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def run_ended(self, run_id: str) -> None:
        """Give back the session files the run `run_id` used that no other run uses.

        The capability calls it when a run ends; a conversation kept in memory (no
        `directory`) or made by `factory` stays open.

        Raises:
            StoreError: a manager's state could not be saved (its file is released
                all the same; see `ContextManager.close`).
        """
        with contextlib.ExitStack() as stack:  # every one closed, even if one raises
            for conversation, runs in list(self._runs.items()):
                runs.discard(run_id)
                if runs:
                    continue
                del self._runs[conversation]
                manager = self._managers.pop(conversation, None)
                if manager is not None:
                    self._rendered.discard(conversation)  # its last render is not kept
                    stack.callback(manager.close)

    async def __call__(
        self, ctx: RunContext[Any], messages: list[ModelMessage]
    ) -> list[ModelMessage]:
        """The history to send: what is new ingested, the rest rendered by the engine.

        Raises:
            ConfigurationError: the history holds messages another processor (or a
                record this one no longer has) rendered.
            IngestError: a message the engine cannot read (nothing is ingested).
        """
        conversation = ctx.conversation_id or DEFAULT_CONVERSATION
        manager = self.manager(conversation)
        if self._directory is not None and self._factory is None and ctx.run_id:
            self._runs.setdefault(conversation, set()).add(ctx.run_id)
        provider, detected = model_provider(ctx.model)
        name = type(ctx.model).__name__
        choice = choose_format(self._format, detected, provider, name, self._warned)
        self.last_format = choice
        self._sync(conversation, manager, messages, choice.format)
        tools = _tools(ctx)
        budget = self._room(manager, messages, choice.format)
        result = await manager.render(format=choice.format, budget=budget, tools=tools)
        self._rendered.add(conversation)
        return from_payload(
            chat_items(result, original_ids(result, manager.raw)),
            messages,
            token=_token(manager),
            conversation_id=ctx.conversation_id,
            provider_name=provider,
        )

    # -- the steps -----------------------------------------------------------------------

    def _open(self, conversation_id: str) -> ContextManager:
        if self._factory is not None:
            return self._factory(conversation_id)
        format = self._format or FALLBACK_FORMAT
        options = {"budget": self._budget, "format": format, **self._options}
        if self._directory is None:
            return ContextManager(**options)
        name = f"{urllib.parse.quote(conversation_id, safe='')}.sqlite"
        return ContextManager.open(self._directory / name, **options)

    def _sync(
        self,
        conversation: str,
        manager: ContextManager,
        messages: list[ModelMessage],
        fmt: ProviderFormat,
    ) -> None:
        """Report the latest response's usage, then ingest the messages not marked as ours."""
        token = _token(manager) if len(manager.raw) else None
        new = []
        for index, message in enumerate(messages):
            mark = mark_of(message)
            if mark is None:
                new.append((index, message))
            elif mark != token:
                msg = (
                    f"message {index} of the history was rendered from another record than "
                    f"conversation {conversation!r} has; use the same ContextHistory (or its "
                    "`directory`) for the whole conversation"
                )
                raise ConfigurationError(msg)
        reported = _latest_input_tokens([m for _, m in new])
        rendered = manager.stats().last_render_tokens or 0
        if reported and rendered and conversation in self._rendered:
            # The provider counted the instructions too; the history's share is ours.
            extra = self._instructions_tokens(manager, messages, fmt)
            manager.report_usage(max(1, reported * rendered // (rendered + extra)))
        if new:
            manager.ingest(to_events(new))

    def _room(
        self, manager: ContextManager, messages: list[ModelMessage], fmt: ProviderFormat
    ) -> int | None:
        """The budget less the instructions pydantic-ai sends beside the history."""
        if self._budget is None:
            return None
        return max(1, self._budget - self._instructions_tokens(manager, messages, fmt))

    def _instructions_tokens(
        self, manager: ContextManager, messages: list[ModelMessage], fmt: ProviderFormat
    ) -> int:
        """What the latest `instructions` add to a request (sent as a system message)."""
        instructions = next(
            (
                m.instructions
                for m in reversed(messages)
                if isinstance(m, ModelRequest) and m.instructions
            ),
            None,
        )
        return system_tokens(instructions or "", fmt, manager.raw.token_cache)


@dataclass
class _HistoryCapability(ProcessHistory[Any]):
    """`ProcessHistory` that also tells its `ContextHistory` when a run ends."""

    async def wrap_run(self, ctx: RunContext[Any], *, handler: Callable[[], Awaitable[Any]]) -> Any:
        history = self.processor
        if not isinstance(history, ContextHistory) or not ctx.run_id:
            return await handler()
        try:
            result = await handler()
        except BaseException:
            with contextlib.suppress(Exception):  # the run's own error is the one to see
                history.run_ended(ctx.run_id)
            raise
        history.run_ended(ctx.run_id)
        return result


# pydantic-ai's model classes and the wire format each speaks, whatever its provider.
_CLASSES: dict[str, ProviderFormat] = {
    "AnthropicModel": ANTHROPIC_FORMAT,
    "OpenAIChatModel": OPENAI_FORMAT,
    "OpenAIModel": OPENAI_FORMAT,
    "OpenAIResponsesModel": RESPONSES_FORMAT,
    "GoogleModel": GEMINI_FORMAT,
    "GeminiModel": GEMINI_FORMAT,
}


def model_provider(model: Any) -> tuple[str | None, ProviderFormat | None]:
    """The provider (`model.system`) of a pydantic-ai model and its wire format.

    Read without importing any provider package: a wrapper (`InstrumentedModel`, any
    `WrapperModel`) is looked through, a `FallbackModel` read by its first model; the
    format is that of the model's class (an `OpenAIChatModel` speaks Chat Completions
    whoever serves it), else of its `system`. `None`: not a format the engine knows.
    """
    for _ in range(8):  # wrappers nest a few levels at most
        inner = getattr(model, "wrapped", None)
        if inner is None:
            models = getattr(model, "models", None)
            inner = models[0] if isinstance(models, list | tuple) and models else None
        if inner is None:
            break
        model = inner
    system = getattr(model, "system", None)
    provider = system if isinstance(system, str) else None
    for cls in type(model).__mro__:
        if cls.__module__.startswith("pydantic_ai.") and cls.__name__ in _CLASSES:
            return provider, _CLASSES[cls.__name__]
    return provider, provider_format(provider)


def _token(manager: ContextManager) -> str:
    """What marks the messages rendered from this record: the id of its first node."""
    return next(iter(manager.raw)).id


def _latest_input_tokens(messages: list[ModelMessage]) -> int:
    for message in reversed(messages):
        if isinstance(message, ModelResponse):
            return int(message.usage.input_tokens or 0)
    return 0


def _tools(ctx: RunContext[Any]) -> list[dict[str, Any]] | None:
    if ctx.tool_manager is None:
        return None
    tools: list[dict[str, Any]] = []
    for tool in ctx.tool_manager.tool_defs:
        function: dict[str, Any] = {
            "name": tool.name,
            "description": tool.description or "",
            "parameters": tool.parameters_json_schema,
        }
        if tool.strict is not None:  # the model sends it, and it is counted
            function["strict"] = tool.strict
        tools.append({"type": "function", "function": function})
    return tools
