"""LangChain v1 / LangGraph: an `AgentMiddleware` that renders each model call through the engine.

```python
agent = create_agent(model, tools, middleware=[ContextMiddleware(budget=16_000)])
```

Before each model call the middleware ingests the messages of the agent's state it has
not seen yet (by message id), lets the `ContextManager` of the thread compact and render
the history under the budget, and sends the model the rendered messages instead of the
state's. The state itself keeps every message as it was: the engine's record and the
LangGraph checkpoint both hold the whole conversation. The answer's `usage_metadata`
(`input_tokens`) is reported to the manager, which learns how the provider counts.

The history is rendered in the wire format of the chat model the call goes to, read off
the model without importing its package: `ChatAnthropic` is `anthropic`, `ChatOpenAI`
`openai` (`responses` with `use_responses_api=True`), `ChatGoogleGenerativeAI` and
`ChatVertexAI` `gemini` (by the model's package, else its `ls_provider`). So the
request is fitted and counted as that provider counts it, and what the chat format has no
place for (Anthropic thinking with its signature, Responses reasoning) is kept or left out
as that provider needs. The rendered body is read back into LangChain messages
(`orchestrator.integrations.rendered`): a message the engine did not change is the state's
own object, which the model's package converts to the same request the engine counted.
`format=` names the format instead; a model of another provider is rendered in the
OpenAI chat format, and `last_format` says so (`FormatChoice.fallback`).

Needs the `langchain` extra (`pip install '.[langchain]'` in the context-graph checkout).
"""

from __future__ import annotations

import os
import threading
import urllib.parse
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from context_graph.errors import ConfigurationError
from context_graph.formats.wires import OPENAI_FORMAT, RESPONSES_FORMAT, provider_format
from context_graph.render import RenderResult
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
    from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, SystemMessage
    from langchain_core.utils.function_calling import convert_to_openai_tool
    from langgraph.config import get_config
except ImportError as exc:  # the extra is not installed
    raise missing_extra(
        __name__, "LangChain v1 and LangGraph", "langchain", "langchain langgraph"
    ) from exc

from orchestrator.integrations.langchain_messages import (
    HASH_KEY,
    ID_KEY,
    fingerprint,
    from_payload,
    message_key,
    text_of,
    to_events,
)

__all__ = ["DEFAULT_THREAD", "ContextMiddleware", "model_provider"]

#: The thread of a call made outside a LangGraph thread (no `thread_id` configured).
DEFAULT_THREAD = "default"


@dataclass
class _Thread:
    """One thread's manager and what of the state it has ingested (key -> fingerprint)."""

    manager: ContextManager
    seen: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, manager: ContextManager) -> _Thread:
        """Read what an existing record (a resumed session) already holds."""
        seen: dict[str, str] = {}
        for node in manager.raw:
            key, digest = node.meta.get(ID_KEY), node.meta.get(HASH_KEY)
            if isinstance(key, str) and isinstance(digest, str):
                seen[key] = digest
        return cls(manager, seen)


class ContextMiddleware(AgentMiddleware):
    """Renders every model request of a LangChain agent through a `ContextManager`.

    One manager per LangGraph thread (`config={"configurable": {"thread_id": ...}}`). With
    `directory=` each thread's session is a SQLite file there, so a thread resumed from
    the checkpointer in a new process continues the engine's record where it stopped.

    Messages are ingested once, by id. When a message the engine has ingested is later
    edited or removed from the state (a `RemoveMessage`, another middleware rewriting the
    history), the thread's record is rebuilt from the state as it now is: the engine's
    record is append-only, and the state is the truth.

    The request is budgeted in the format of the model the call goes to (see the
    module), tool definitions and the system message included; the provider's own
    count comes back through `usage_metadata`. `last_format` is the format of the
    latest call and why it was chosen.

    Args:
        budget: The token budget of a whole request (system message and tools
            included); with `factory`, `None` leaves it to the manager's own budget,
            which then does not count the system message.
        directory: Keep each thread's session in `<directory>/<thread>.sqlite`.
        factory: Builds the manager of a thread (given its id) instead; exclusive with
            `directory` and the manager options.
        format: Render every call in this format (`openai`, `anthropic`, `gemini`,
            `responses`) instead of the model's own; also the managers' default.
        **options: `ContextManager` options (`policy=`, `tools=`, ...).

    Raises:
        ConfigurationError: `factory` given with other options, an unknown `format`,
            or a `directory` that does not exist.
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
        super().__init__()
        self._directory = check_manager_options(
            "ContextMiddleware", budget, directory, factory, options, format
        )
        self._budget_total = budget
        self._factory = factory
        self._format = format
        self._options = options
        self._threads: dict[str, _Thread] = {}
        self._syncing: dict[str, threading.Lock] = {}
        self._warned: set[str] = set()
        #: The format of the latest model call, and why (`None` before the first).
        self.last_format: FormatChoice | None = None

    # -- what the user reads -------------------------------------------------------------

    def manager(self, thread_id: str = DEFAULT_THREAD) -> ContextManager:
        """The manager of a thread (made, or resumed from `directory`, on first use)."""
        thread = self._threads.get(thread_id)
        if thread is None:
            thread = self._threads[thread_id] = _Thread.of(self._open(thread_id))
        return thread.manager

    def close(self) -> None:
        """Close every thread's manager (and session file)."""
        for thread in self._threads.values():
            thread.manager.close()
        self._threads.clear()

    # -- the hooks -----------------------------------------------------------------------

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any]:
        """Send the rendered history instead of the state's messages."""
        fmt = self._choose(request)
        thread, system = self._sync(request, fmt)
        tools = _tools(request)
        budget = self._budget(system)
        result = thread.manager.render_sync(format=fmt, budget=budget, tools=tools)
        response = handler(self._rewritten(thread, request, result))
        self._report(thread, system, response)
        return response

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any]:
        """The async twin of `wrap_model_call`."""
        fmt = self._choose(request)
        thread, system = self._sync(request, fmt)
        tools = _tools(request)
        budget = self._budget(system)
        result = await thread.manager.render(format=fmt, budget=budget, tools=tools)
        response = await handler(self._rewritten(thread, request, result))
        self._report(thread, system, response)
        return response

    # -- the steps -----------------------------------------------------------------------

    def _choose(self, request: ModelRequest[Any]) -> ProviderFormat:
        """The format of this call: the `format` option, else the model's provider's."""
        provider, detected = model_provider(request.model)
        name = type(request.model).__name__
        self.last_format = choose_format(self._format, detected, provider, name, self._warned)
        return self.last_format.format

    def _open(self, thread_id: str) -> ContextManager:
        if self._factory is not None:
            return self._factory(thread_id)
        format = self._format or FALLBACK_FORMAT
        options = {"budget": self._budget_total, "format": format, **self._options}
        if self._directory is None:
            return ContextManager(**options)
        return ContextManager.open(self._path(self._directory, thread_id), **options)

    def _path(self, directory: Path, thread_id: str) -> Path:
        return directory / f"{urllib.parse.quote(thread_id, safe='')}.sqlite"

    def _sync(self, request: ModelRequest[Any], fmt: ProviderFormat) -> tuple[_Thread, int]:
        """Ingest what is new in the request's messages; the thread and its system's tokens.

        One call at a time per thread: two calls of one LangGraph thread at once (the
        graph invoked twice, from two Python threads) would both find the same messages
        new and ingest them twice. The manager serializes its own work (renders too).
        """
        thread_id = _thread_id(request)
        with self._syncing.setdefault(thread_id, threading.Lock()):
            self.manager(thread_id)
            thread = self._threads[thread_id]
            new = _new_messages(thread, request.messages)
            if new is None:
                thread = self._rebuild(thread_id)
                new = list(enumerate(request.messages))
            if new:
                start = new[0][0]
                events = to_events([message for _, message in new], start)
                thread.manager.ingest(events)
                thread.seen.update((message_key(m), fingerprint(m)) for _, m in new)
        return thread, self._system_tokens(thread, request.system_message, fmt)

    def _rebuild(self, thread_id: str) -> _Thread:
        """A fresh record for a thread whose state no longer extends what was ingested."""
        old = self._threads.pop(thread_id)
        old.manager.close()
        if self._factory is None and self._directory is not None:
            path = self._path(self._directory, thread_id)
            for suffix in ("", "-wal", "-shm", "-journal"):
                Path(f"{path}{suffix}").unlink(missing_ok=True)
        thread = self._threads[thread_id] = _Thread.of(self._open(thread_id))
        if thread.seen:
            msg = (
                f"thread {thread_id!r}: the state's messages no longer extend the engine's "
                "record, and the factory reopened the same record; have it start a new one"
            )
            raise ConfigurationError(msg)
        return thread

    def _system_tokens(
        self, thread: _Thread, system: SystemMessage | None, fmt: ProviderFormat
    ) -> int:
        """What the system message adds to the request (it is sent as is, not ingested)."""
        if system is None:
            return 0
        return system_tokens(text_of(system.content), fmt, thread.manager.raw.token_cache)

    def _budget(self, system_tokens: int) -> int | None:
        """The room the rendered history has next to the system message."""
        if self._budget_total is None:
            return None  # the manager's own budget, if it has one
        return max(1, self._budget_total - system_tokens)

    def _rewritten(
        self, thread: _Thread, request: ModelRequest[Any], result: RenderResult
    ) -> ModelRequest[Any]:
        items = chat_items(result, original_ids(result, thread.manager.raw))
        return request.override(messages=from_payload(items, request.messages))

    def _report(self, thread: _Thread, system_tokens: int, response: ModelResponse[Any]) -> None:
        """Report the history's share of the provider's count (the system message is not ours)."""
        rendered = thread.manager.stats().last_render_tokens or 0
        for message in response.result:
            usage = message.usage_metadata if isinstance(message, AIMessage) else None
            reported = int(usage.get("input_tokens", 0)) if usage else 0
            share = reported * rendered // (rendered + system_tokens) if rendered else 0
            if share > 0:
                thread.manager.report_usage(share)
                return


# The chat model packages whose provider is read off the model's class: LangChain names
# each `langchain_<provider>`, the provider as `provider_format` knows it.
_PACKAGES = frozenset(
    {
        "langchain_anthropic",
        "langchain_openai",
        "langchain_google_genai",
        "langchain_google_vertexai",
    }
)
_PACKAGE_PREFIX = "langchain_"


def model_provider(model: Any) -> tuple[str | None, ProviderFormat | None]:
    """The provider of a chat model and its wire format (`None`: not one the engine knows).

    Read without importing any provider package: the package of the model's class, else
    LangChain's `ls_provider` (`_get_ls_params`); an OpenAI model with
    `use_responses_api=True` speaks the Responses API.
    """
    package = type(model).__module__.split(".")[0]
    provider = package.removeprefix(_PACKAGE_PREFIX) if package in _PACKAGES else None
    if provider is None and isinstance(model, BaseChatModel):
        named = model._get_ls_params().get("ls_provider")
        provider = str(named) if named else None
    fmt = provider_format(provider)
    if fmt == OPENAI_FORMAT and getattr(model, "use_responses_api", None) is True:
        fmt = RESPONSES_FORMAT
    return provider, fmt


def _thread_id(request: ModelRequest[Any]) -> str:
    info = request.runtime.execution_info if request.runtime is not None else None
    if info is not None and info.thread_id:
        return str(info.thread_id)
    try:
        configurable = get_config().get("configurable") or {}
    except RuntimeError:  # called outside a LangGraph run
        return DEFAULT_THREAD
    return str(configurable.get("thread_id") or DEFAULT_THREAD)


def _new_messages(
    thread: _Thread, messages: Sequence[AnyMessage]
) -> list[tuple[int, BaseMessage]] | None:
    """The messages not ingested yet, with their index; `None` when the state was rewritten.

    The state must hold every ingested message, unchanged, before any new one.
    """
    seen = thread.seen
    held = 0
    for index, message in enumerate(messages):
        digest = seen.get(message_key(message))
        if digest is None:
            rest = messages[index:]
            if held != len(seen) or any(message_key(m) in seen for m in rest):
                return None
            return list(enumerate(rest, start=index))
        if digest != fingerprint(message):
            return None
        held += 1
    return [] if held == len(seen) else None


def _tools(request: ModelRequest[Any]) -> list[dict[str, Any]]:
    return [convert_to_openai_tool(tool) for tool in request.tools]
