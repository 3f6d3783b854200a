"""The facts a request should still hold at each model call, and what a request holds.

Reference set at a call: the critical entities (`context_graph.entities`) of the user's
turns and of the tool errors in view so far, plus the values of the gold facts the
source records (tau-bench actions and outputs) once they have appeared anywhere in the
history. A harness's notice (`UserTurn.notice`: Gemini CLI's session context with its
folder tree of up to 200 names, SWE-agent's demonstration of another task) is text in the
user's role that the user did not write: its entities are no facts of the user's. "In
view" follows the raw record: a compaction recorded in the session (Claude
Code's) replaces what came before it, for the agent and for every contender alike.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from benchmarks.compare.sdk_types import message_problems
from context_graph import AgentEvent, AssistantTurn, Compaction, FileRead, UserTurn
from context_graph.entities import critical_entities


def event_text(event: AgentEvent) -> str:
    """Every text of an event: content, tool call names and arguments, a file's path."""
    pieces = [getattr(part, "text", "") for part in getattr(event, "content", ())]
    if isinstance(event, AssistantTurn):
        for call in event.tool_calls:
            pieces += [call.name, call.arguments]
    if isinstance(event, FileRead):
        pieces.append(event.path)
    return "\n".join(p for p in pieces if p)


def watched_entities(event: AgentEvent) -> list[str]:
    """The critical entities of a user's turn or a tool error; none for other events.

    A harness's notice is not the user's turn (see the module's docstring).
    """
    if (isinstance(event, UserTurn) and not event.notice) or getattr(event, "is_error", False):
        return critical_entities(event_text(event))
    return []


def gold_values(facts: Sequence[str]) -> list[str]:
    """The critical entities of the gold facts, without tool and argument names.

    `get_reservation_details(reservation_id="3RK2T9")` gives `3RK2T9`: the name of the
    action and of its arguments are in every request that offers the tools.
    """
    values: dict[str, None] = {}
    for fact in facts:
        for entity in critical_entities(fact):
            names = (f"{entity}(", f"{entity}=", f'"{entity}":', f"action: {entity} ")
            if not any(name in fact for name in names):
                values.setdefault(entity)
    return list(values)


@dataclass(frozen=True)
class References:
    """The reference set at every model call of one session."""

    universe: tuple[str, ...]
    """Every entity that is ever in a reference set."""
    at_call: dict[int, frozenset[str]]
    """By the number of events fed at the call."""
    kind: dict[str, str]
    """Where each entity was first seen: `gold` (a gold fact's value), `user` (a user
    turn) or `error` (a tool error)."""


KINDS: tuple[str, ...] = ("user", "error", "gold")


def references(
    events: Sequence[AgentEvent], calls: frozenset[int], facts: Sequence[str]
) -> References:
    """Walk the session once and note the reference set at each call."""
    gold = gold_values(facts)
    seen: dict[str, None] = {}
    kind: dict[str, str] = dict.fromkeys(gold, "gold")
    at_call: dict[int, frozenset[str]] = {}
    for fed, event in enumerate(events, start=1):
        if isinstance(event, Compaction):
            seen.clear()
        watched = watched_entities(event)
        source = "user" if isinstance(event, UserTurn) else "error"
        for entity in watched:
            kind.setdefault(entity, source)
        seen.update(dict.fromkeys(watched))
        if gold:
            text = event_text(event)
            seen.update(dict.fromkeys(value for value in gold if value in text))
        if fed in calls:
            at_call[fed] = frozenset(seen)
    universe = dict.fromkeys(e for entities in at_call.values() for e in entities)
    return References(tuple(universe), at_call, {e: kind[e] for e in universe})


def strings_in(value: Any, out: list[str]) -> list[str]:
    """Every string inside a JSON value, in order."""
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, dict):
        for item in value.values():
            strings_in(item, out)
    elif isinstance(value, list):
        for item in value:
            strings_in(item, out)
    return out


def message_text(message: Any) -> str:
    """What a model reads in one rendered (OpenAI) message: its strings, and those of each
    tool call's arguments as the model reads them.

    A call's `arguments` is one JSON-encoded string, so a line of code the agent passed
    to a tool (an edit's `old_string`, a script it wrote) is in the body with its quotes,
    backslashes and newlines escaped: searched as it stands, an answer holding any of
    them would never be found in it, for any contender. Arguments that are not valid
    JSON are read as they stand.
    """
    strings = strings_in(message, [])
    calls = message.get("tool_calls") if isinstance(message, dict) else None
    for call in calls if isinstance(calls, list) else ():
        function = call.get("function") if isinstance(call, dict) else None
        arguments = function.get("arguments") if isinstance(function, dict) else None
        if not isinstance(arguments, str):
            continue
        try:
            decoded = json.loads(arguments)
        except ValueError:
            continue
        strings_in(decoded, strings)
    return "\n".join(strings)


@dataclass(frozen=True)
class MessageFacts:
    """What one rendered message holds, computed once per distinct message."""

    key: str
    """The message as canonical JSON (compared for prefix stability)."""
    entities: frozenset[str]
    """The entities of the session's universe found verbatim in what the model reads of the
    message (`message_text`)."""
    sdk_problems: tuple[str, ...]
    tokens: int = 0
    """The message's tokens inside a request (what a cached prefix of it saves)."""


class MessageLedger:
    """Caches `MessageFacts` by message, for one session (messages repeat across calls)."""

    def __init__(self, universe: Sequence[str], count: Callable[[Any], int] | None = None) -> None:
        self._universe = tuple(universe)
        self._count = count
        self._by_key: dict[str, MessageFacts] = {}

    def entities_in(self, text: str) -> frozenset[str]:
        """The universe's entities found verbatim in `text` (not cached: texts vary)."""
        return frozenset(e for e in self._universe if e in text)

    def facts(self, message: Any) -> MessageFacts:
        key = json.dumps(message, sort_keys=True, ensure_ascii=False, default=str)
        known = self._by_key.get(key)
        if known is None:
            text = message_text(message)
            found = frozenset(e for e in self._universe if e in text)
            tokens = 0 if self._count is None else self._count(message)
            known = MessageFacts(key, found, tuple(message_problems(message)), tokens)
            self._by_key[key] = known
        return known
