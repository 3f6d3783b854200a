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

`pop_item` and `clear_session` withdraw items (`Withdrawal`): the manager's record
keeps them, and nothing the model is shown holds them again: no render, no summary
(one that stood for a withdrawn item beside others is undone, and made again without
it), no `context_expand`. The withdrawal is journaled with the session, so a reopened
manager's session has the items as they were left. An item the Responses importer put
in one node with others (the reasoning, message and calls of one assistant turn) goes
by withdrawing that turn and recording the turn's other items again, in one batch.
Popping a `function_call_output` opens its call again: the next request sends the call
with the renderer's placeholder result (as for any call left without one) until an
output for it is added. An item taken in from a model input but never added (a failed
run) goes with the next pop or clear.

The SDK is imported lazily; without it, `ContextSession` raises `ConfigurationError`
naming `pip install '.[openai-agents]'` (in the checkout).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import JsonValue

from context_graph.errors import ConfigurationError, SourceLocation
from context_graph.graph.events import AgentEvent, AssistantTurn, Withdrawal
from context_graph.importers.openai_responses import ItemReader
from context_graph.render import ToolSpec, count_payload
from orchestrator.integrations.clients_apis import plain

if TYPE_CHECKING:
    from agents import Agent, RunConfig, RunHooks
    from agents.run_config import CallModelData, ModelInputData

    from orchestrator.manager import ContextManager

__all__ = ["ITEMS_KEY", "WITHDRAWN_BY_KEY", "ContextSession"]

#: The `meta` key of the node that keeps its batch's items verbatim.
ITEMS_KEY = "openai_agents_items"
#: The `meta` key of a session's withdrawal: the session method that made it.
WITHDRAWN_BY_KEY = "openai_agents_withdrawn_by"
_INSTALL = "`pip install '.[openai-agents]'` in the checkout (or `pip install openai-agents`)"


def _require_sdk() -> None:
    try:
        import agents  # noqa: F401
    except ImportError as exc:
        msg = f"the OpenAI Agents SDK is not installed: {_INSTALL}"
        raise ConfigurationError(msg) from exc


@dataclass(frozen=True, slots=True)
class _Entry:
    """The session items one event was read from, and the nodes it made."""

    items: tuple[Any, ...]
    nodes: tuple[str, ...]


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
        self._entries: list[_Entry] = _recorded(manager)
        self._items: list[Any] = [i for entry in self._entries for i in entry.items]
        self._calls = {i["call_id"] for i in self._items if _is_call(i)}
        self._keys = [_key(i) for i in self._items]
        self._held: list[tuple[str, Any]] = []
        """Items of the model input taken in before the Runner added them."""
        self._held_entries: list[_Entry] = []

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
        """Withdraw the latest item and return it (`None` when the session is empty).

        The manager's record keeps it; no later request shows it (see the module).

        Raises:
            GraphError: a summary that stands for it cannot be undone; nothing changed.
        """
        if not self._items:
            return None
        entry = self._entries[-1]
        rest = list(entry.items[:-1])
        calls = {i["call_id"] for i in self._items[: -len(entry.items)] if _is_call(i)}
        events, groups, _ = _read(rest, calls) if rest else ([], [], calls)
        if events:
            kept: list[JsonValue] = list(rest)
            events[0] = events[0].model_copy(update={"meta": {**events[0].meta, ITEMS_KEY: kept}})
        withdrawal = self._withdrawal([entry], "pop_item")
        ids = self._manager.ingest([*withdrawal, *events])
        item = entry.items[-1]
        del self._entries[-1]
        self._entries.extend(_entries(groups, events, ids))
        del self._items[-1], self._keys[-1]
        self._drop_held()
        self._calls = {i["call_id"] for i in self._items if _is_call(i)}
        return copy.deepcopy(item)

    async def clear_session(self) -> None:
        """Withdraw every item (the manager's record keeps them; see the module).

        Raises:
            GraphError: a summary that stands for one beside nodes of no item cannot
                be undone; nothing changed.
        """
        withdrawal = self._withdrawal(self._entries, "clear_session")
        if withdrawal:
            self._manager.ingest(withdrawal)
        self._entries, self._items, self._keys = [], [], []
        self._drop_held()
        self._calls = set()

    def _withdrawal(self, entries: Sequence[_Entry], by: str) -> list[Withdrawal]:
        """The withdrawal of `entries` and of the held items, if it withdraws any node."""
        raw = self._manager.raw
        nodes = [n for e in (*entries, *self._held_entries) for n in e.nodes]
        live = tuple(n for n in nodes if not raw.is_withdrawn(n))
        return [Withdrawal(node_ids=live, meta={WITHDRAWN_BY_KEY: by})] if live else []

    def _drop_held(self) -> None:
        """Forget the held items: a pop or a clear withdrew them with its own."""
        self._held.clear()
        self._held_entries.clear()

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
        """How many leading input items are the latest items taken in, in order.

        The SDK leaves a call without an output out of the model input, with the
        reasoning before it (a popped `function_call_output` leaves one): such items of
        the session may be missing from the input.
        """
        known = [*self._keys, *(k for k, _ in self._held)]
        skippable = [*map(_skippable, self._items), *(_skippable(i) for _, i in self._held)]
        keys = [_key(i) for i in model_input]
        for size in range(len(keys), 0, -1):
            if _ends_with(known, skippable, keys[:size]):
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
        made: list[_Entry] = []
        if new:
            events, groups, calls = _read([i for _, i in new], self._calls)
            kept: list[JsonValue] = [i for _, i in new]
            events[0] = events[0].model_copy(update={"meta": {**events[0].meta, ITEMS_KEY: kept}})
            ids = self._manager.ingest(events)
            self._calls = calls
            made = _entries(groups, events, ids)
        if added:
            del self._held[:settled]
            self._entries.extend(self._settle(settled))
            self._entries.extend(made)
            self._items.extend(i for _, i in fresh)
            self._keys.extend(k for k, _ in fresh)
        else:
            self._held.extend(new)
            self._held_entries.extend(made)

    def _settle(self, count: int) -> list[_Entry]:
        """The entries of the first `count` held items, no longer held.

        An entry the count ends inside is split: its nodes go with the part added.
        """
        settled: list[_Entry] = []
        while count > 0 and self._held_entries:
            entry = self._held_entries.pop(0)
            if len(entry.items) > count:
                settled.append(_Entry(entry.items[:count], entry.nodes))
                self._held_entries.insert(0, _Entry(entry.items[count:], ()))
                break
            settled.append(entry)
            count -= len(entry.items)
        return settled

    def _budget(self, instructions: str | None) -> int | None:
        """The input's budget: the manager's, less what the agent's instructions take."""
        budget = self._manager.budget
        if budget is None or not instructions:
            return budget
        cache = self._manager.raw.token_cache
        reserve = count_payload({"instructions": instructions, "input": []}, "responses", cache)
        reserve -= count_payload({"input": []}, "responses", cache)
        return max(budget - reserve, 1)


def _ends_with(known: list[str], skippable: list[bool], keys: list[str]) -> bool:
    """Whether `known` ends with `keys`, but for skippable items of `known` they lack."""
    at = len(known) - 1
    for key in reversed(keys):
        while at >= 0 and known[at] != key and skippable[at]:
            at -= 1
        if at < 0 or known[at] != key:
            return False
        at -= 1
    return True


def _skippable(item: Any) -> bool:
    """Whether the SDK may leave `item` out of a model input (a call, its reasoning)."""
    return _is_call(item) or (isinstance(item, dict) and item.get("type") == "reasoning")


def _is_call(item: Any) -> bool:
    return isinstance(item, dict) and item.get("type") in ("function_call", "custom_tool_call")


def _read(
    items: Sequence[Any], calls: set[str]
) -> tuple[list[AgentEvent], list[list[Any]], set[str]]:
    """The events of a batch of items, the items each was read from, and the call ids after.

    The Responses importer reads the items of one assistant turn (reasoning, messages,
    calls) into one event; any other item is an event of its own.
    """
    reader = ItemReader(calls=set(calls))
    groups: list[list[Any]] = []
    turn: object | None = None
    for index, item in enumerate(items):
        reader.read(item, SourceLocation(index=index, path=f"items[{index}]"))
        if reader.turn is None or reader.turn is not turn:
            groups.append([])
        turn = reader.turn
        groups[-1].append(item)
    return reader.finish(), groups, reader.calls


def _entries(
    groups: Sequence[list[Any]], events: Sequence[AgentEvent], ids: Sequence[str]
) -> list[_Entry]:
    """Each event's items with the node ids it made (`ids`: the batch's, in order)."""
    entries: list[_Entry] = []
    start = 0
    for group, event in zip(groups, events, strict=True):
        size = 1 + len(event.tool_calls) if isinstance(event, AssistantTurn) else 1
        entries.append(_Entry(tuple(group), tuple(ids[start : start + size])))
        start += size
    return entries


def _recorded(manager: ContextManager) -> list[_Entry]:
    """The entries of a reopened manager's items, as added; those withdrawn left out."""
    raw = manager.raw
    order = raw.transcript()
    entries: list[_Entry] = []
    calls: set[str] = set()
    for node in raw:
        kept = node.meta.get(ITEMS_KEY)
        if not isinstance(kept, list) or node.seq is None:
            continue
        events, groups, calls = _read(kept, calls)
        size = sum(1 + len(e.tool_calls) if isinstance(e, AssistantTurn) else 1 for e in events)
        made = _entries(groups, events, order[node.seq : node.seq + size])
        entries.extend(e for e in made if not all(raw.is_withdrawn(n) for n in e.nodes))
    return entries


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
