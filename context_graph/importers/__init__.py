"""Importers: build events from recorded sessions and provider payloads, auto-detected.

```python
from context_graph.importers import load_graph
graph = load_graph("session.jsonl")        # any supported format, detected
```

Formats, in the order detection tries them (most specific first): Qwen Code session
JSONL (its records carry Claude Code's ids around Gemini `Content` messages), Claude Code
session JSONL, Codex CLI rollout JSONL, tau2-bench runs, tau-bench runs, OpenHands LLM call logs,
mini-swe-agent and SWE-agent trajectories, Gemini CLI chat recordings, opencode exports and
databases, Cline CLI session files, then the bare provider
payloads: Anthropic Messages, Gemini `contents`, OpenAI Responses items and bodies, OpenAI
Chat Completions.

Every loader is strict by default: input an importer cannot place (a stray, such as a
tool result that no call asked for) is refused with `IngestError`. `strict=False` reads
leniently where the importer supports it (Gemini `contents`, Gemini CLI recordings): each
stray becomes a `Note` event saying what it was, and `ImportedSession.strays` lists them.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from context_graph.errors import IngestError, SourceLocation
from context_graph.formats.wires import READ_ORDER
from context_graph.graph.context_graph import ContextGraph
from context_graph.graph.events import AgentEvent
from context_graph.importers._base import ImportedSession, RawInput, Stray, read_raw
from context_graph.importers._opencode_db import is_opencode_database
from context_graph.importers._opencode_storage import storage_of
from context_graph.tokens.counting import TokenCounter

__all__ = [
    "FORMATS",
    "ImportedSession",
    "RawInput",
    "Stray",
    "detect_format",
    "load_events",
    "load_graph",
    "load_sessions",
    "read_raw",
    "reads_database",
    "reads_folder",
    "select_session",
]

#: The agent trace formats, each an importer module of this package, in detection order.
TRACE_FORMATS: tuple[str, ...] = (
    "qwen_code",
    "claude_code",
    "codex_cli",
    "tau2",
    "tau_bench",
    "openhands",
    "mini_swe_agent",
    "swe_agent",
    "gemini_cli",
    "opencode",
    "cline",
)

#: Every supported input format, in detection order: the agent traces, then the wire
#: formats' request bodies (`context_graph.formats.wires.READ_ORDER`).
FORMATS: tuple[str, ...] = (*TRACE_FORMATS, *READ_ORDER)


def _module(fmt: str) -> ModuleType:
    """The importer of `fmt`: a trace importer here, or a wire format's reader."""
    if fmt in TRACE_FORMATS:
        return importlib.import_module(f"context_graph.importers.{fmt}")
    # Asked here, not at the top: see `context_graph.formats.registry`.
    from context_graph.formats.registry import READERS

    return READERS[fmt]


def _as_raw(source: Any, *, strict: bool = True) -> RawInput:
    if isinstance(source, RawInput):
        return source
    if isinstance(source, str | Path):
        return read_raw(source, strict=strict)
    return RawInput(source)


def detect_format(source: Any) -> str:
    """Return the name of the format of `source` (a path, parsed JSON or a `RawInput`).

    Raises:
        IngestError: no importer recognizes the input.
    """
    raw = _as_raw(source)
    for fmt in FORMATS:
        if _module(fmt).sniff(raw):
            return fmt
    msg = (
        "unrecognized input: expected one of "
        + ", ".join(FORMATS)
        + " (docs/ingest.md in the context-graph repository shows what each looks like)"
    )
    raise IngestError(msg, SourceLocation(raw.file))


def load_sessions(
    source: Any, *, format: str | None = None, strict: bool = True
) -> list[ImportedSession]:
    """Read every session in `source`.

    Args:
        source: A file path, parsed JSON (a payload dict or a message list) or a `RawInput`.
        format: One of `FORMATS`; detected when omitted.
        strict: Refuse strays (the default); `False` keeps each as a note and lists it in
            the session's `strays`, where the importer supports it, and reads a JSONL
            file up to a last line cut off (a session still being written), which each
            session's `meta["incomplete_last_line"]` names.

    Raises:
        IngestError: the input cannot be read or is malformed (names the place).
    """
    raw = dataclasses.replace(_as_raw(source, strict=strict), strict=strict)
    if format is None:
        format = detect_format(raw)
    elif format not in FORMATS:
        msg = f"unknown format {format!r}; expected one of {', '.join(FORMATS)}"
        raise IngestError(msg, SourceLocation(raw.file))
    sessions: list[ImportedSession] = _module(format).to_sessions(raw)
    if raw.incomplete_line is not None:
        for session in sessions:
            session.meta["incomplete_last_line"] = raw.incomplete_line
    return sessions


def reads_database(path: str | Path) -> bool:
    """Whether `path` is a database `load_sessions` reads: opencode's `opencode.db`.

    The command line tells it from a session store of its own (also SQLite) with this.
    """
    return is_opencode_database(Path(path))


def reads_folder(path: str | Path) -> bool:
    """Whether `path` is a folder `load_sessions` reads whole.

    That is opencode's storage folder (or the data folder holding it); any other folder
    holds no session of its own.
    """
    folder = Path(path)
    return folder.is_dir() and storage_of(folder) is not None


def load_events(
    source: Any, *, format: str | None = None, session: int | str = 0, strict: bool = True
) -> list[AgentEvent]:
    """Read one session's events (the first by default; by index or by name).

    `strict` is as in `load_sessions`; a lenient read's strays are notes among the events.

    Raises:
        IngestError: the input is malformed, or has no such session.
    """
    sessions = load_sessions(source, format=format, strict=strict)
    return select_session(sessions, session, source).events


def load_graph(
    source: Any,
    *,
    format: str | None = None,
    session: int | str = 0,
    counter: TokenCounter | None = None,
    strict: bool = True,
) -> ContextGraph:
    """Build a graph from one session of `source`, whole or not at all.

    `strict` is as in `load_sessions`.
    """
    graph = ContextGraph(counter=counter)
    graph.ingest(load_events(source, format=format, session=session, strict=strict))
    return graph


def select_session(
    sessions: Sequence[ImportedSession], which: int | str, source: Any = None
) -> ImportedSession:
    """Return the session at index `which`, or the one named `which`.

    Raises:
        IngestError: there is no such session (the message lists the names).
    """
    file = str(source) if isinstance(source, str | Path) else None
    if isinstance(which, int):
        if 0 <= which < len(sessions):
            return sessions[which]
        msg = f"session index {which} is out of range: the input has {len(sessions)} sessions"
        raise IngestError(msg, SourceLocation(file))
    for found in sessions:
        if found.name == which:
            return found
    names = ", ".join(s.name for s in sessions[:10])
    msg = f"no session named {which!r}; sessions: {names}"
    raise IngestError(msg, SourceLocation(file))
