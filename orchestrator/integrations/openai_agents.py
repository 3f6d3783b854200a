"""OpenAI Agents SDK: a `Session` kept in a context manager, and the model input it renders.

```python
manager = ContextManager(format="responses", budget=50_000)
session = ContextSession(manager)
result = await Runner.run(
    agent, task, session=session, run_config=session.run_config(), hooks=session.hooks()
)
```

`ContextSession` implements the SDK's `Session` protocol over a `ContextManager`: the
items the Runner adds (Responses input items) are ingested as events (through the
Responses importer; a `reasoning` item becomes a `ReasoningPart`, sent back as received)
and kept verbatim on the first node of their batch, so `get_items` returns exactly what
was added, also from a manager reopened from its session file (`ContextManager.open`).

`run_config()` sets `call_model_input_filter` to `filter`: before every model call it
takes in the input items the session does not hold yet, and replaces the input with the
manager's render in the `responses` format, under the manager's budget less the agent's
instructions, with the agent's function tools counted. `hooks()` reports each response's
input tokens to the manager (`report_usage`), so the budget holds by the provider's count.

The pristine record is append-only: `pop_item` and `clear_session` are refused with
`GraphError` (the Runner's only use of `pop_item`, rewinding a retried request of a
server-side conversation, is best-effort and goes on without it); start a new session
on a new manager instead.

The SDK is imported lazily; without it, `ContextSession` raises `ConfigurationError`
naming `pip install '.[openai-agents]'` (in the checkout).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pydantic import JsonValue

from context_graph.errors import ConfigurationError, GraphError, SourceLocation
from context_graph.graph.events import AgentEvent
from context_graph.importers.openai_responses import ItemReader
from context_graph.render import ToolSpec, count_payload
from orchestrator.integrations.clients_apis import plain

if TYPE_CHECKING:
    from agents import Agent, RunConfig, RunHooks
    from agents.run_config import CallModelData, ModelInputData

    from orchestrator.manager import ContextManager

__all__ = ["ITEMS_KEY", "ContextSession"]

#: The `meta` key of the node that keeps its batch's items verbatim.
ITEMS_KEY = "openai_agents_items"
_INSTALL = "`pip install '.[openai-agents]'` in the checkout (or `pip install openai-agents`)"


def _require_sdk() -> None:
    try:
        import agents  # noqa: F401
    except ImportError as exc:
        msg = f"the OpenAI Agents SDK is not installed: {_INSTALL}"
        raise ConfigurationError(msg) from exc


def _key(item: Any) -> str:
    """An item's identity for matching the model input with the session's items."""
    return json.dumps(item, sort_keys=True, ensure_ascii=False)


class ContextSession:
    """An Agents SDK `Session` whose items live in a `ContextManager`.

    Args:
        manager: The manager the items are ingested into (its format should be
            `responses`; a render here always is).
        session_id: The SDK's session id.

    Raises:
        ConfigurationError: the Agents SDK is not installed.
    """

    session_settings: Any = None

    def __init__(self, manager: ContextManager, *, session_id: str = "context-graph") -> None:
        _require_sdk()
        self.session_id = session_id
        self._manager = manager
        self._items: list[Any] = []
        for node in manager.raw:  # a reopened manager: its items, as added
            kept = node.meta.get(ITEMS_KEY)
            if isinstance(kept, list):
                self._items.extend(kept)
        self._calls = {i["call_id"] for i in self._items if _is_call(i)}
        self._keys = [_key(i) for i in self._items]
        self._held: list[tuple[str, Any]] = []
        """Items of the model input taken in before the Runner added them."""

    @property
    def manager(self) -> ContextManager:
        """The manager the session lives in."""
        return self._manager

    # -- the Session protocol ---------------------------------------------------------

    async def get_items(self, limit: int | None = None) -> list[Any]:
        """The items added, oldest first (the latest `limit` when given), as added."""
        items = self._items if limit is None else self._items[-limit:] if limit > 0 else []
        return copy.deepcopy(items)

    async def add_items(self, items: list[Any]) -> None:
        """Ingest `items` (Responses input items) and keep them.

        Raises:
            IngestError: an item is malformed, or answers a call the session never had;
                nothing was added.
        """
        self._ingest(plain(list(items)), added=True)

    async def pop_item(self) -> Any:
        """Refused: the items are the manager's pristine record, which is append-only.

        Raises:
            GraphError: always, when the session holds an item (`None` when empty).
        """
        if not self._items:
            return None
        msg = (
            "pop_item: the session's items are the context manager's pristine record, "
            "which is append-only; start a new ContextSession on a new manager instead"
        )
        raise GraphError(msg)

    async def clear_session(self) -> None:
        """Refused once the session holds items (see `pop_item`).

        Raises:
            GraphError: the session holds items.
        """
        if self._items:
            msg = (
                "clear_session: the context manager's pristine record is append-only; "
                "start a new ContextSession on a new manager instead"
            )
            raise GraphError(msg)

    # -- the model input --------------------------------------------------------------

    async def filter(self, data: CallModelData[Any]) -> ModelInputData:
        """The `call_model_input_filter`: the model input, rendered by the manager.

        Input items the session does not hold yet (the tail after what matches its
        items) are ingested first, and then held, so the Runner's later `add_items` of
        the same items adds nothing twice.

        Raises:
            BudgetExceededError: even compacted, the request does not fit.
            IngestError: a new input item is malformed.
        """
        from agents.run_config import ModelInputData

        model_input = plain(list(data.model_data.input))
        self._ingest(model_input[self._overlap(model_input) :], added=False)
        instructions = data.model_data.instructions
        budget = self._budget(instructions)
        result = await self._manager.render(
            format="responses", budget=budget, tools=_tool_specs(data.agent)
        )
        payload = result.payload
        own = payload.get("instructions")
        if own and instructions:
            instructions = f"{own}\n\n{instructions}"
        elif own:
            instructions = own
        return ModelInputData(input=copy.deepcopy(payload["input"]), instructions=instructions)

    def run_config(self, **options: Any) -> RunConfig:
        """A `RunConfig` with `call_model_input_filter=self.filter` and `options`."""
        from agents import RunConfig

        return RunConfig(call_model_input_filter=self.filter, **options)

    def hooks(self) -> RunHooks[Any]:
        """`RunHooks` that report each response's input tokens to the manager."""
        from orchestrator.integrations.openai_agents_hooks import usage_hooks

        return usage_hooks(self._manager)

    # -- internals --------------------------------------------------------------------

    def _overlap(self, model_input: list[Any]) -> int:
        """How many leading input items are the latest items taken in, in order."""
        known = [*self._keys, *(k for k, _ in self._held)]
        keys = [_key(i) for i in model_input]
        for size in range(min(len(keys), len(known)), 0, -1):
            if keys[:size] == known[len(known) - size :]:
                return size
        return 0

    def _ingest(self, items: list[Any], *, added: bool) -> None:
        """Ingest what is new of `items`; all or nothing.

        Added items (`add_items`) join the session's items; the model input's new items
        (`filter`) are held until the Runner adds them, and then not ingested again.
        """
        fresh = [(_key(i), i) for i in items]
        settled = 0
        if added:
            while settled < len(fresh) and settled < len(self._held):
                if fresh[settled][0] != self._held[settled][0]:
                    break
                settled += 1
        new = fresh[settled:]
        if new:
            events, calls = _events([i for _, i in new], self._calls)
            kept: list[JsonValue] = [i for _, i in new]
            events[0] = events[0].model_copy(update={"meta": {**events[0].meta, ITEMS_KEY: kept}})
            self._manager.ingest(events)
            self._calls = calls
        if added:
            del self._held[:settled]
            self._items.extend(i for _, i in fresh)
            self._keys.extend(k for k, _ in fresh)
        else:
            self._held.extend(new)

    def _budget(self, instructions: str | None) -> int | None:
        """The input's budget: the manager's, less what the agent's instructions take."""
        budget = self._manager.budget
        if budget is None or not instructions:
            return budget
        cache = self._manager.raw.token_cache
        reserve = count_payload({"instructions": instructions, "input": []}, "responses", cache)
        reserve -= count_payload({"input": []}, "responses", cache)
        return max(budget - reserve, 1)


def _is_call(item: Any) -> bool:
    return isinstance(item, dict) and item.get("type") in ("function_call", "custom_tool_call")


def _events(items: Sequence[Any], calls: set[str]) -> tuple[list[AgentEvent], set[str]]:
    """The events of a batch of items, and the call ids known after it."""
    reader = ItemReader(calls=set(calls))
    for index, item in enumerate(items):
        reader.read(item, SourceLocation(index=index, path=f"items[{index}]"))
    return reader.finish(), reader.calls


def _tool_specs(agent: Agent[Any]) -> list[ToolSpec]:
    """The agent's function tools, as the request will carry them."""
    from agents import FunctionTool

    return [
        ToolSpec(
            name=tool.name,
            description=tool.description or "",
            parameters=tool.params_json_schema,
            strict=tool.strict_json_schema,
        )
        for tool in agent.tools
        if isinstance(tool, FunctionTool)
    ]
