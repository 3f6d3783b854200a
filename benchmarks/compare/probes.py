"""Fidelity probes: questions about a session, each with the answer string a request must hold.

Retention (`facts.references`) asks whether the entities of user turns and tool errors
are still in the request. Published evaluations of compaction ask more pointed
questions; these probes are deterministic versions of several of their kinds, generated from
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
- `last_error`: the last error and whether it was resolved. The informative line of
  the most recent tool error (`informative_line`: the first line that names an error,
  else the first that is more than an exit-status wrapper such as `<returncode>1
  </returncode>` or `Exit code 128`; in an output with a Python traceback, the
  exception line the traceback ends with (the last of a chain; the first line back at
  the margin after the frames, whatever the exception's name), not its header nor a
  frame's source line that happens to name an error; an error that is nothing but
  wrappers is not asked) is
  active at the calls after it until a newer error replaces it, or until `STALE_AFTER`
  more tool results came (an old error is no longer what the agent needs);
  `resolution`: once a later result of the same tool is not an error, that result's
  informative line is active from then on, as long (a newer error ends it: it answered
  an older one).
- `next_step`: the step the agent said comes next. The last line of the latest
  assistant text (the agent's most recent statement of what it does next), at the
  calls after it.
- `instruction`: the user's latest message, verbatim (its first 160 characters), at
  the calls after it until the next one.
- `constraint_value`: a user constraint with its value. A sentence of a user turn that
  binds (as for `constraint`, or names a limit, cap, budget, maximum or minimum) and
  holds a number; its answer is the sentence (its first 160 characters), so the value
  passes only beside its rule. Active from the turn on.
- `test_summary`: the latest test run's summary line, as the runner printed it (pytest's
  `3 failed, 12 passed in 0.31s` without its `=` rule, unittest's `Ran 12 tests in
  0.031s` or `FAILED (failures=1)`, jest's `Tests:` line, cargo's `test result:`, go's
  package line; the last such line of the newest output that has one, a failing run's
  too), at the calls after it until a newer run's replaces it.
- `edit_text`: the text an edit replaces, at the moment of the edit. When the agent's
  answer to a call edits a file by giving the exact text it replaces (`old_str`,
  `old_string` or `old_text`, one per edit of a `MultiEdit`'s `edits`), the longest line
  of that text (stripped, its first 160 characters) is asked at that call alone: the
  agent could only write it from what the request showed (a buffer keeps the file it
  just read whole; a distilled read may have lost the line).
- `reason`: a reason the agent gave. A sentence of an assistant turn's text that says
  why (because, since, due to, caused by, so that, in order to, the reason, which is
  why, that's why, therefore, as a result) and has at least `_REASON_CHARS` characters;
  its answer is the sentence (its first 160 characters). Active from the turn on: a
  cause the agent found, or why it chose what it did, still explains the work after it.

Answers shorter than 8 characters are left out (they would be found by chance). At most
`LIMIT` probes of a kind are made per session (the first ones) for the kinds that
accumulate; the kinds that keep one live probe (`last_error`, `resolution`, `next_step`,
`instruction`) are never capped, since a cap would end them silently half way through a
session. A compaction recorded in the session (Claude Code's) ends every probe made
before it, as it does for retention.
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

__all__ = ["LIMIT", "PROBE_KINDS", "Probe", "Probes", "edited_lines", "probes"]

PROBE_KINDS: tuple[str, ...] = (
    "tool_value",
    "constraint",
    "constraint_value",
    "file",
    "last_error",
    "resolution",
    "next_step",
    "instruction",
    "test_summary",
    "edit_text",
    "reason",
)
#: The kinds that keep one live probe, replaced as the session goes: never capped.
ROLLING = frozenset({"last_error", "resolution", "next_step", "instruction", "test_summary"})
LIMIT = 30
SHORTEST = 8
#: Tool results after which an error (and its resolution) is no longer asked about.
STALE_AFTER = 10
_LONGEST = 160
_BINDING = re.compile(
    r"\b(?:must|never|always|only|don't|do not|make sure|at most|at least|without|keep|avoid)\b",
    re.IGNORECASE,
)
_LIMITING = re.compile(r"\b(?:limit|limited|cap|budget|maximum|minimum|max|min)\b", re.IGNORECASE)
_NUMBER = re.compile(r"\d")
#: A line that only wraps an exit status: `<returncode>1</returncode>`, `Exit code 128`,
#: `[Command finished with exit code 1]`, `<output>`, `Process exited with code 2`.
_WRAPPER = re.compile(
    r"^\W*(?:</?\w+>\s*-?\d*\s*(?:</\w+>)?|(?:process\s+)?exit(?:ed)?(?:\s+with)?\s+"
    r"(?:code|status)\s*:?\s*-?\d+|\[?command (?:finished|exited)[^\]]*\]?|"
    r"returncode:?\s*-?\d+)\W*$",
    re.IGNORECASE,
)
#: The header of a Python traceback: it says an error follows, not which one (the
#: exception line after the frames does).
_HEADER = re.compile(r"^Traceback \(most recent call last\):?$")
#: The line a Python traceback ends with, naming the exception raised
#: (`re.error: missing )`, `django.db.utils.OperationalError: no such table`).
_EXCEPTION_LINE = re.compile(
    r"^(?:[A-Za-z_]\w*\.)*(?:[A-Z]\w*(?:Error|Exception|Exit|Interrupt)|error)\b(?::|$)"
)
#: The line at the margin after a traceback's frames: a (dotted) name, then `:` or nothing.
_RAISED = re.compile(r"^(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?::\s|:?$)")
_ERROR_WORDS = re.compile(
    r"error|exception|traceback|failed|failure|fatal|not found|denied|invalid|cannot|"
    r"can't|refused|no such|undefined|missing",
    re.IGNORECASE,
)
#: A test run's summary line: pytest's `3 failed, 12 passed in 0.31s`, unittest's (and
#: Django's) `Ran 12 tests in 0.031s` and `FAILED (failures=1)`, jest's `Tests: 1 failed,
#: 5 total`, cargo's `test result: ok. 5 passed; ...`, go's `ok  pkg 0.01s` / `FAIL pkg`.
_TEST_SUMMARY = re.compile(
    r"\b\d+ (?:passed|failed|errors?|skipped|xfailed|xpassed|deselected|warnings?)\b.*"
    r"\bin \d+(?:\.\d+)?\s*s(?:econds)?\b"
    r"|^Ran \d+ tests? in \d"
    r"|^(?:FAILED|OK) \((?:failures|errors|skipped|expected failures)=\d+"
    r"|^Tests:\s+.*\b\d+ total\b"
    r"|^test result: (?:ok|FAILED)\. \d+ passed"
    r"|^(?:ok|FAIL)\s+\S+\s+\d+(?:\.\d+)?s\b"
)
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]?")
#: A clause that says why: the agent's diagnosis of a cause, or the reason for a choice.
_BECAUSE = re.compile(
    r"\b(?:because|since|due to|caused by|so that|in order to|the reason|which is why|"
    r"that's why|that is why|therefore|as a result)\b",
    re.IGNORECASE,
)
#: A reason shorter than this is a fragment ("Because of that."), not a sentence to ask.
_REASON_CHARS = 24
_PATH_ARGUMENTS = ("path", "file_path", "filename", "file", "notebook_path", "target_file")
#: Arguments that hold the exact text an edit replaces (OpenHands' and SWE-agent's
#: `str_replace`, Claude Code's `Edit` and `MultiEdit`, gemini-cli's `replace`).
_OLD_TEXT_ARGUMENTS = ("old_str", "old_string", "old_text")


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


def informative_line(text: str) -> str:
    """The line of an error output that says what went wrong (see the module docstring).

    Empty when the output is nothing but wrappers (a command that failed silently): it
    has no line to ask for, and a wrapper is no answer.
    """
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    telling = [line for line in lines if not _WRAPPER.match(line) and not _HEADER.match(line)]
    if any(_HEADER.match(line) for line in lines):
        # The frames' source lines may name an error too (`raise source.error(...)`):
        # the exception raised is the line after them, the last one of a chain.
        raised = _raised(text) or [line for line in telling if _EXCEPTION_LINE.match(line)]
        if raised:
            return raised[-1][:_LONGEST]
    named = next((line for line in telling if _ERROR_WORDS.search(line)), None)
    chosen = named or (telling[0] if telling else "")
    return chosen[:_LONGEST]


def test_summary_line(text: str) -> str:
    """The last test-run summary line of a tool's output, without its `=` rule; else empty."""
    found = ""
    for line in text.splitlines():
        stripped = line.strip().strip("=").strip()
        if stripped and _TEST_SUMMARY.search(stripped):
            found = stripped[:_LONGEST]
    return found


def _raised(text: str) -> list[str]:
    """The exception line each Python traceback of `text` ends with, in order.

    The first line back at the margin after a traceback's indented frames, if it reads
    like an exception (`KeyError: 'id'`, `django.core.exceptions.ImproperlyConfigured:
    ...`, `StopIteration`): the exception's name need not end in `Error`. A traceback
    shown indented (inside a gutter or a report) has no such line.
    """
    raised: list[str] = []
    frames = False
    for line in text.splitlines():
        stripped = line.strip()
        if _HEADER.match(stripped):
            frames = True
        elif frames and stripped and not line[:1].isspace():
            frames = False
            if _RAISED.match(stripped):
                raised.append(stripped)
    return raised


def edited_lines(call_arguments: str) -> list[str]:
    """The line each edit of a call replaces: the longest line of its old text, stripped.

    Empty for a call that gives no old text (a new file, a shell command, a patch).
    """
    try:
        value = json.loads(call_arguments)
    except ValueError:
        return []
    if not isinstance(value, dict):
        return []
    olds = [value.get(key) for key in _OLD_TEXT_ARGUMENTS]
    edits = value.get("edits")
    if isinstance(edits, list):
        olds += [e.get(k) for e in edits if isinstance(e, dict) for k in _OLD_TEXT_ARGUMENTS]
    found: list[str] = []
    for old in olds:
        if isinstance(old, str):
            lines = [line.strip() for line in old.splitlines() if len(line.strip()) >= SHORTEST]
            if lines:
                found.append(max(lines, key=len)[:_LONGEST])
    return found


def _edits_answered(events: Sequence[AgentEvent], calls: frozenset[int]) -> dict[int, list[str]]:
    """By call: the lines the edits of the call's answer replace (the first `LIMIT`)."""
    found: dict[int, list[str]] = {}
    waiting: int | None = None  # the latest call its answer has not come for
    made = 0
    for fed, event in enumerate(events, start=1):
        if isinstance(event, AssistantTurn) and waiting is not None:
            lines = [line for call in event.tool_calls for line in edited_lines(call.arguments)]
            lines = list(dict.fromkeys(lines))[: max(0, LIMIT - made)]
            if lines:
                found[waiting] = lines
                made += len(lines)
            waiting = None
        if fed in calls:
            waiting = fed
    return found


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
    """Tool name -> the informative line of its unresolved error."""
    results_since_error: int = 0

    def add(self, kind: str, answer: str) -> None:
        if len(answer) < SHORTEST or (kind, answer) in self.active:
            return
        if kind not in ROLLING and self.made.get(kind, 0) >= LIMIT:
            return
        self.made[kind] = self.made.get(kind, 0) + 1
        self.active[(kind, answer)] = Probe(kind, answer)

    def replace(self, kind: str, answer: str) -> None:
        """Keep one probe of `kind`: the newest."""
        self.end(kind)
        self.add(kind, answer)

    def end(self, kind: str) -> None:
        for key in [k for k in self.active if k[0] == kind]:
            del self.active[key]

    def read(self, event: AgentEvent) -> None:
        if isinstance(event, Compaction):
            self.active.clear()
            self.returned.clear()
            self.failed.clear()
        elif isinstance(event, UserTurn | SystemPrompt):
            text = _text(event)
            self.told.update(critical_entities(text))
            if isinstance(event, UserTurn):
                self._user(text)
        elif isinstance(event, AssistantTurn):
            self._assistant(event)
        elif isinstance(event, ToolResult | FileRead | SubagentResult):
            self._result(event)

    def _user(self, text: str) -> None:
        for sentence in _SENTENCE.findall(text):
            said = sentence.strip()[:_LONGEST]
            binds = _BINDING.search(sentence)
            if binds:
                self.add("constraint", said)
            if (binds or _LIMITING.search(sentence)) and _NUMBER.search(sentence):
                self.add("constraint_value", said)
        if text.strip():
            self.replace("instruction", text.strip()[:_LONGEST])

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
        for sentence in _SENTENCE.findall(text):
            said = sentence.strip()
            if len(said) >= _REASON_CHARS and _BECAUSE.search(said):
                self.add("reason", said[:_LONGEST])
        if text.strip():
            self.replace("next_step", _last_line(text))

    def _result(self, event: ToolResult | FileRead | SubagentResult) -> None:
        text = _text(event)
        if isinstance(event, FileRead):
            self.add("file", event.path)
        name = self.tools.get(event.call_id or "", "")
        self.results_since_error += 1
        if self.results_since_error > STALE_AFTER:
            self.end("last_error")
            self.end("resolution")
        summary = test_summary_line(text)
        if summary:  # a failing run's too: its counts are what the agent works from
            self.replace("test_summary", summary)
        if getattr(event, "is_error", False):
            line = informative_line(text)
            self.replace("last_error", line)
            self.end("resolution")  # it answered an older error
            self.failed[name] = line
            self.results_since_error = 0
            return
        if name in self.failed:
            del self.failed[name]
            self.replace("resolution", informative_line(text))
        for value in critical_entities(text):
            if value not in self.told and len(value) >= SHORTEST:
                self.returned.setdefault(value)


def probes(events: Sequence[AgentEvent], calls: frozenset[int]) -> Probes:
    """The probes of one session, active at each of its model calls."""
    walk = _Walk()
    at_call: dict[int, tuple[Probe, ...]] = {}
    edits = _edits_answered(events, calls)
    for fed, event in enumerate(events, start=1):
        walk.read(event)
        if fed in calls:
            asked = [Probe("edit_text", line) for line in edits.get(fed, ())]
            at_call[fed] = (*walk.active.values(), *asked)
    universe = dict.fromkeys(p.answer for active in at_call.values() for p in active)
    return Probes(tuple(universe), at_call)
