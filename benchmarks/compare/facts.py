"""The facts a request should still hold at each model call, and what a request holds.

Reference set at a call: the critical entities (`context_graph.entities`) of the user's
turns and of the tool errors in view so far, plus the values of the gold facts the
source records (tau-bench actions and outputs) once they have appeared anywhere in the
history. A harness's notice (`UserTurn.notice`: Gemini CLI's session context with its
folder tree of up to 200 names, SWE-agent's demonstration of another task) is text in the
user's role that the user did not write: its entities are no facts of the user's. "In
view" follows the raw record: a compaction recorded in the session (Claude
Code's) replaces what came before it, for the agent and for every contender alike.

A request holds an entity when what the model reads of it (`message_text`, a tool
call's arguments decoded) holds it verbatim; it holds it in context when it also holds
what stood beside it where it was first seen (`contexts_of`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
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
    contexts: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Each entity with what stood beside it where it was first seen (`contexts_of`): a
    request that holds one of them holds the entity in context."""


KINDS: tuple[str, ...] = ("user", "error", "gold")

CONTEXT_CHARS = 12
"""Characters of its line on each side of an entity that make its context."""
MIN_CONTEXT = 4
"""A side with fewer characters than this (whitespace aside) before its line starts or
ends gives no context."""
CONTEXT_PLACES = 3
"""Places of an entity in its first source whose contexts count."""


def squeezed(text: str) -> str:
    """`text` with every run of whitespace one space, and none at either end."""
    return " ".join(text.split())


def contexts_of(entity: str, text: str) -> tuple[str, ...]:
    """The entity with what stands beside it on its line, at its first `CONTEXT_PLACES`
    places in `text`, whitespace squeezed (`squeezed`).

    Retention counts an entity as kept when the request holds it anywhere, and the
    extractive brief lists the critical entities of tool failures under "Key
    identifiers": the same extractor (`context_graph.entities`) picks the reference and
    what the brief lists. An entity counts as kept in context only where one of these
    strings is in the request (its whitespace squeezed too, so that re-indented or
    re-wrapped text still counts): the entity with up to `CONTEXT_CHARS` characters of
    its line before it, or after it, as the source had them; a bare list of names holds
    none. A side with fewer than `MIN_CONTEXT` characters other than whitespace gives
    none; an entity alone on its line (or not found in `text`) is its own context.
    """
    found: list[str] = []
    start = text.find(entity)
    places = 0
    while start >= 0 and places < CONTEXT_PLACES:
        places += 1
        end = start + len(entity)
        line_start = max(text.rfind("\n", 0, start), text.rfind("\r", 0, start)) + 1
        ends = [i for i in (text.find("\n", end), text.find("\r", end)) if i >= 0]
        line_end = min(ends, default=len(text))
        before = text[max(line_start, start - CONTEXT_CHARS) : start]
        after = text[end : min(line_end, end + CONTEXT_CHARS)]
        if len(before.strip()) >= MIN_CONTEXT:
            found.append(squeezed(before + entity))
        if len(after.strip()) >= MIN_CONTEXT:
            found.append(squeezed(entity + after))
        start = text.find(entity, end)
    return tuple(dict.fromkeys(found)) or (squeezed(entity) or entity,)


def references(
    events: Sequence[AgentEvent], calls: frozenset[int], facts: Sequence[str]
) -> References:
    """Walk the session once and note the reference set at each call."""
    gold = gold_values(facts)
    seen: dict[str, None] = {}
    kind: dict[str, str] = dict.fromkeys(gold, "gold")
    at_call: dict[int, frozenset[str]] = {}
    contexts: dict[str, tuple[str, ...]] = {}
    for fed, event in enumerate(events, start=1):
        if isinstance(event, Compaction):
            seen.clear()
        watched = watched_entities(event)
        source = "user" if isinstance(event, UserTurn) else "error"
        text = event_text(event) if watched or gold else ""
        for entity in watched:
            kind.setdefault(entity, source)
            if entity not in contexts:
                contexts[entity] = contexts_of(entity, text)
        seen.update(dict.fromkeys(watched))
        if gold:
            found = [value for value in gold if value in text]
            for value in found:
                if value not in contexts:
                    contexts[value] = contexts_of(value, text)
            seen.update(dict.fromkeys(found))
        if fed in calls:
            at_call[fed] = frozenset(seen)
    universe = dict.fromkeys(e for entities in at_call.values() for e in entities)
    return References(
        tuple(universe),
        at_call,
        {e: kind[e] for e in universe},
        {e: contexts[e] for e in universe},
    )


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
    message (`message_text`), and the contexts (`contexts_of`) found in it with its
    whitespace squeezed."""
    sdk_problems: tuple[str, ...]
    tokens: int = 0
    """The message's tokens inside a request (what a cached prefix of it saves)."""


class MessageLedger:
    """Caches `MessageFacts` by message, for one session (messages repeat across calls)."""

    def __init__(
        self,
        universe: Sequence[str],
        count: Callable[[Any], int] | None = None,
        contexts: Sequence[str] = (),
    ) -> None:
        self._universe = tuple(universe)
        self._contexts = tuple(contexts)
        """Searched in the message's text with its whitespace squeezed (`contexts_of`)."""
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
            found = {e for e in self._universe if e in text}
            if self._contexts:
                flat = squeezed(text)
                found.update(c for c in self._contexts if c in flat)
            tokens = 0 if self._count is None else self._count(message)
            known = MessageFacts(key, frozenset(found), tuple(message_problems(message)), tokens)
            self._by_key[key] = known
        return known
