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
and kept verbatim on the first node of their batch. The session keeps no list of its
own: `get_items` and `pop_item` read the items from the manager's record, so they return
exactly what was added, also from a manager reopened from its session file
(`ContextManager.open`), what other sessions over the same manager added, what other
workers of a shared session added once `manager.refresh()` brought it in, and nothing
`manager.withdraw` took out.

`run_config()` sets `call_model_input_filter` to `filter`: before every model call it
takes in the input items the session does not hold yet, and replaces the input with the
manager's render in the `responses` format, under the manager's budget less the agent's
instructions, with the agent's function tools counted. `hooks()` reports each response's
input tokens to the manager (`report_usage`), so the budget holds by the provider's count.

`pop_item` and `clear_session` withdraw items (`Withdrawal`): the session's latest,
whoever added it, and all of them. The manager's record keeps them, and nothing the
model is shown holds them again: no render, no summary (one that stood for a withdrawn
item beside others is undone, and made again without it), no `context_expand`. The
withdrawal is journaled with the session, so a reopened manager's session has the items
as they were left. An item the Responses importer put in one node with others (the
reasoning, message and calls of one assistant turn) goes by withdrawing that turn and
recording the turn's other items again, in one batch. Popping a `function_call_output`
opens its call again: the next request sends the call with the renderer's placeholder
result (as for any call left without one) until an output for it is added. An item taken
in from a model input but never added (a failed run) goes with the next pop or clear.

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
from context_graph.formats.openai_responses.read import ItemReader
from context_graph.formats.wires import RESPONSES_FORMAT
from context_graph.graph.events import AgentEvent, AssistantTurn, Withdrawal
from context_graph.render import ToolSpec, count_payload
from orchestrator.integrations.clients_apis import plain

if TYPE_CHECKING:
    from agents import Agent, RunConfig, RunHooks
    from agents.run_config import CallModelData, ModelInputData

    from context_graph.graph.context_graph import ContextGraph
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
    """The session items one event was read from, and the nodes it made.

    `batch` is the node that keeps the items verbatim (`ITEMS_KEY`), and `start` the
    index of the first of them in its list: an item's place is `(batch, start + i)`.
    """

    items: tuple[Any, ...]
    nodes: tuple[str, ...]
    batch: str
    start: int
    keys: tuple[str, ...]

    def places(self) -> list[tuple[str, int]]:
        """Each item's place: its batch node and its index in the batch's list."""
        return [(self.batch, self.start + n) for n in range(len(self.items))]

    def head(self, count: int) -> _Entry:
        """The entry with its first `count` items only, its nodes kept."""
        return _Entry(self.items[:count], self.nodes, self.batch, self.start, self.keys[:count])


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
        self._record = _Record()
        self._held: list[tuple[str, Any, tuple[str, int]]] = []
        """Items of the model input taken in before the Runner added them: each with its
        key and its place in the record (`_Entry.places`)."""

    @property
    def manager(self) -> ContextManager:
        """The manager the session lives in."""
        return self._manager

    # -- the Session protocol ---------------------------------------------------------

    async def get_items(self, limit: int | None = None) -> list[Any]:
        """The items added, oldest first (the latest `limit` when given), as added.

        Read from the manager's record: what any session over it added (after
        `manager.refresh()`, on a shared store), less what was withdrawn.
        """
        items = [i for entry in self._entries() for i in entry.items]
        items = items if limit is None else items[-limit:] if limit > 0 else []
        return copy.deepcopy(items)

    async def add_items(self, items: list[Any]) -> None:
        """Ingest `items` (Responses input items) and keep them.

        Raises:
            IngestError: an item is malformed, or answers a call the session never had;
                nothing was added.
        """
        self._ingest(plain(list(items)), added=True)

    async def pop_item(self) -> Any:
        """Withdraw the session's latest item and return it (`None` when it is empty).

        The manager's record keeps it; no later request shows it (see the module).

        Raises:
            GraphError: a summary that stands for it cannot be undone; nothing changed.
            StoreConflictError: on a shared store, another worker appended since this
                one last read the log; `manager.refresh()`, then pop again.
        """
        entries = self._entries()
        if not entries:
            return None
        entry = entries[-1]
        rest = list(entry.items[:-1])
        calls = {i["call_id"] for e in entries[:-1] for i in e.items if _is_call(i)}
        events, _, _ = _read(rest, calls) if rest else ([], [], calls)
        if events:
            kept: list[JsonValue] = list(rest)
            events[0] = events[0].model_copy(update={"meta": {**events[0].meta, ITEMS_KEY: kept}})
        withdrawal = self._withdrawal([entry], "pop_item")
        self._manager.ingest([*withdrawal, *events])
        self._held.clear()  # withdrawn with it
        return copy.deepcopy(entry.items[-1])

    async def clear_session(self) -> None:
        """Withdraw every item (the manager's record keeps them; see the module).

        Raises:
            GraphError: a summary that stands for one beside nodes of no item cannot
                be undone; nothing changed.
        """
        withdrawal = self._withdrawal(self._entries(), "clear_session")
        if withdrawal:
            self._manager.ingest(withdrawal)
        self._held.clear()

    def _entries(self) -> list[_Entry]:
        """The session's entries in the record now: none withdrawn, no item held here."""
        raw = self._manager.raw
        held = {place for _, _, place in self._held}
        entries: list[_Entry] = []
        for entry in self._record.read(raw):
            if all(raw.is_withdrawn(n) for n in entry.nodes):
                continue
            if held:
                # The items still held are the tail of their batch (added in order).
                shown = sum(place not in held for place in entry.places())
                entry = entry.head(shown) if shown < len(entry.items) else entry
                if not shown:
                    continue
            entries.append(entry)
        return entries

    def _withdrawal(self, entries: Sequence[_Entry], by: str) -> list[Withdrawal]:
        """The withdrawal of `entries` and of the held items, if it withdraws any node."""
        raw = self._manager.raw
        held = {place for _, _, place in self._held}
        whole = [e for e in self._record.read(raw) if held.issuperset(e.places())]
        nodes = [n for e in (*entries, *whole) for n in e.nodes]
        live = tuple(dict.fromkeys(n for n in nodes if not raw.is_withdrawn(n)))
        return [Withdrawal(node_ids=live, meta={WITHDRAWN_BY_KEY: by})] if live else []

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
            format=RESPONSES_FORMAT, budget=budget, tools=_tool_specs(data.agent)
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
        entries = self._entries()
        known = [*(k for e in entries for k in e.keys), *(k for k, _, _ in self._held)]
        skippable = [
            *(_skippable(i) for e in entries for i in e.items),
            *(_skippable(i) for _, i, _ in self._held),
        ]
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
        places: list[tuple[str, int]] = []
        if new:
            calls = {i["call_id"] for e in self._entries() for i in e.items if _is_call(i)}
            calls.update(i["call_id"] for _, i, _ in self._held if _is_call(i))
            events, _, _ = _read([i for _, i in new], calls)
            kept: list[JsonValue] = [i for _, i in new]
            events[0] = events[0].model_copy(update={"meta": {**events[0].meta, ITEMS_KEY: kept}})
            batch = self._manager.ingest(events)[0]
            places = [(batch, n) for n in range(len(new))]
        if added:
            del self._held[:settled]
        else:
            self._held.extend((k, i, place) for (k, i), place in zip(new, places, strict=True))

    def _budget(self, instructions: str | None) -> int | None:
        """The input's budget: the manager's, less what the agent's instructions take."""
        budget = self._manager.budget
        if budget is None or not instructions:
            return budget
        cache = self._manager.raw.token_cache
        with_instructions = {"instructions": instructions, "input": []}
        reserve = count_payload(with_instructions, RESPONSES_FORMAT, cache)
        reserve -= count_payload({"input": []}, RESPONSES_FORMAT, cache)
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
    item = 0
    for group, event in zip(groups, events, strict=True):
        size = 1 + len(event.tool_calls) if isinstance(event, AssistantTurn) else 1
        keys = tuple(_key(i) for i in group)
        entries.append(_Entry(tuple(group), tuple(ids[start : start + size]), ids[0], item, keys))
        start += size
        item += len(group)
    return entries


class _Record:
    """The session's entries as the manager's record holds them, read as it grows.

    The record is append-only, so what was read stays read; whether an entry was
    withdrawn since is asked of the record each time (`ContextSession._entries`).
    """

    __slots__ = ("_calls", "_entries", "_seen")

    def __init__(self) -> None:
        self._entries: list[_Entry] = []
        self._calls: set[str] = set()
        self._seen = 0

    def read(self, raw: ContextGraph) -> list[_Entry]:
        """Every entry recorded in `raw` so far, oldest first (withdrawn ones too)."""
        order = raw.transcript()
        for node_id in order[self._seen :]:
            node = raw[node_id]
            kept = node.meta.get(ITEMS_KEY)
            if not isinstance(kept, list) or node.seq is None:
                continue
            events, groups, self._calls = _read(kept, self._calls)
            size = sum(1 + len(e.tool_calls) if isinstance(e, AssistantTurn) else 1 for e in events)
            self._entries.extend(_entries(groups, events, order[node.seq : node.seq + size]))
        self._seen = len(order)
        return self._entries


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
