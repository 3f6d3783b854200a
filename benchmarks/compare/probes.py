"""Fidelity probes: questions about a session, each with the answer string a request must hold.

Retention (`facts.references`) asks whether the entities of user turns and tool errors
are still in the request. Published evaluations of compaction ask more pointed
questions; these probes are deterministic versions of five of their kinds, generated from
the recorded events alone (no model). Each probe has an expected answer, a string; at a
model call a probe is *active* once the session has made it askable, and it *passes*
when its answer is in the request verbatim (in any string of the body).

The generator walks the events once, in order:

- `tool_value`: a value a tool returned that the agent used later. A critical entity
  (`context_graph.entities`) of a tool's result that no user turn or system prompt had
  shown, once a later assistant turn names it in its text or in a tool call's
  arguments. Active from that turn on.
- `constraint`: a user constraint. A sentence of a user turn with a word that binds
  (must, never, always, only, don't, do not, make sure, at most, at least, without,
  keep, avoid). Its answer is the sentence (its first 160 characters). Active from the
  turn on.
- `file`: a file the agent touched. A path (`path`, `file_path`, `filename`, `file`,
  `notebook_path`, `target_file` argument, or a path-like entity of a command's
  arguments, URLs left out) of a tool call, or the path of a file read. Active from the call on.
- `last_error`: the last error and whether it was resolved. The first line of the most
  recent tool error is active at every call after it until a newer error replaces it;
  `resolution`: once a later result of the same tool is not an error, that result's
  first line (the evidence that it was resolved) is active from then on.
- `next_step`: the step the agent said comes next. The last line of the latest
  assistant text (the agent's most recent statement of what it does next), at the
  calls after it.

Answers shorter than 8 characters are left out (they would be found by chance), at most
`LIMIT` probes of a kind are made per session (the first ones), and a compaction recorded
in the session (Claude Code's) ends every probe made before it, as it does for retention.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from context_graph import (
    AgentEvent,
    AssistantTurn,
    Compaction,
    FileRead,
    SubagentResult,
    SystemPrompt,
    ToolResult,
    UserTurn,
)
from context_graph.entities import critical_entities

__all__ = ["LIMIT", "PROBE_KINDS", "Probe", "Probes", "probes"]

PROBE_KINDS: tuple[str, ...] = (
    "tool_value",
    "constraint",
    "file",
    "last_error",
    "resolution",
    "next_step",
)
LIMIT = 30
SHORTEST = 8
_LONGEST = 160
_BINDING = re.compile(
    r"\b(?:must|never|always|only|don't|do not|make sure|at most|at least|without|keep|avoid)\b",
    re.IGNORECASE,
)
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]?")
_PATH_ARGUMENTS = ("path", "file_path", "filename", "file", "notebook_path", "target_file")


@dataclass(frozen=True)
class Probe:
    """One question about the session and the string that answers it."""

    kind: str
    answer: str


@dataclass(frozen=True)
class Probes:
    """Every probe of one session, and which are active at each model call."""

    universe: tuple[str, ...]
    """Every answer string."""
    at_call: dict[int, tuple[Probe, ...]]
    """By the number of events fed at the call."""


def _text(event: AgentEvent) -> str:
    return "\n".join(getattr(part, "text", "") for part in getattr(event, "content", ()))


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")[:_LONGEST]


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:_LONGEST] if lines else ""


def _paths(call_arguments: str) -> list[str]:
    try:
        value = json.loads(call_arguments)
    except ValueError:
        value = None
    found: list[str] = []
    if isinstance(value, dict):
        for key in _PATH_ARGUMENTS:
            item = value.get(key)
            if isinstance(item, str) and item.strip():
                found.append(item.strip())
    if not found:
        found = [
            e for e in critical_entities(call_arguments) if "/" in e and "." in e and "://" not in e
        ]
    return found


@dataclass
class _Walk:
    """The generator's state while it reads one session."""

    active: dict[tuple[str, str], Probe] = field(default_factory=dict)
    made: dict[str, int] = field(default_factory=dict)
    told: set[str] = field(default_factory=set)
    """Entities a user turn or the system prompt showed (not a tool's finding)."""
    returned: dict[str, None] = field(default_factory=dict)
    """Entities tools returned, not yet used by the agent."""
    tools: dict[str, str] = field(default_factory=dict)
    """Tool call id -> tool name, to tell a later result of the same tool."""
    failed: dict[str, str] = field(default_factory=dict)
    """Tool name -> the first line of its unresolved error."""

    def add(self, kind: str, answer: str) -> None:
        if len(answer) < SHORTEST or (kind, answer) in self.active:
            return
        if self.made.get(kind, 0) >= LIMIT:
            return
        self.made[kind] = self.made.get(kind, 0) + 1
        self.active[(kind, answer)] = Probe(kind, answer)

    def replace(self, kind: str, answer: str) -> None:
        """Keep one probe of `kind`: the newest."""
        for key in [k for k in self.active if k[0] == kind]:
            del self.active[key]
        self.add(kind, answer)

    def read(self, event: AgentEvent) -> None:
        if isinstance(event, Compaction):
            self.active.clear()
            self.returned.clear()
            self.failed.clear()
        elif isinstance(event, UserTurn | SystemPrompt):
            text = _text(event)
            self.told.update(critical_entities(text))
            if isinstance(event, UserTurn):
                for sentence in _SENTENCE.findall(text):
                    if _BINDING.search(sentence):
                        self.add("constraint", sentence.strip()[:_LONGEST])
        elif isinstance(event, AssistantTurn):
            self._assistant(event)
        elif isinstance(event, ToolResult | FileRead | SubagentResult):
            self._result(event)

    def _assistant(self, event: AssistantTurn) -> None:
        text = _text(event)
        said = "\n".join([text, *(call.arguments for call in event.tool_calls)])
        for value in [v for v in self.returned if v in said]:
            del self.returned[value]
            self.add("tool_value", value)
        for call in event.tool_calls:
            self.tools[call.id] = call.name
            for path in _paths(call.arguments):
                self.add("file", path)
        if text.strip():
            self.replace("next_step", _last_line(text))

    def _result(self, event: ToolResult | FileRead | SubagentResult) -> None:
        text = _text(event)
        if isinstance(event, FileRead):
            self.add("file", event.path)
        name = self.tools.get(event.call_id or "", "")
        if getattr(event, "is_error", False):
            line = _first_line(text)
            self.replace("last_error", line)
            self.failed[name] = line
            return
        if name in self.failed:
            del self.failed[name]
            self.replace("resolution", _first_line(text))
        for value in critical_entities(text):
            if value not in self.told and len(value) >= SHORTEST:
                self.returned.setdefault(value)


def probes(events: Sequence[AgentEvent], calls: frozenset[int]) -> Probes:
    """The probes of one session, active at each of its model calls."""
    walk = _Walk()
    at_call: dict[int, tuple[Probe, ...]] = {}
    for fed, event in enumerate(events, start=1):
        walk.read(event)
        if fed in calls:
            at_call[fed] = tuple(walk.active.values())
    universe = dict.fromkeys(p.answer for active in at_call.values() for p in active)
    return Probes(tuple(universe), at_call)
