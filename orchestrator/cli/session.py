"""What every command starts from: the session it reads, the policy, the files it writes.

The output folders are checked before any work, so a command that cannot write its
results fails at once, having written nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

from context_graph.errors import ConfigurationError, IngestError, SourceLocation
from context_graph.examples import EXAMPLE_SESSION
from context_graph.importers import (
    ImportedSession,
    load_sessions,
    reads_database,
    reads_folder,
    select_session,
)
from context_graph.render.tools import ToolSpec, read_tools
from orchestrator.cli.errors import UsageError
from orchestrator.cli.progress import Progress
from orchestrator.cli.stored import is_session_file, stored_session
from orchestrator.policy import POLICIES, Policy, get_policy
from orchestrator.report.screen import OutputScreen
from processors.base import Redactor
from processors.redact import SecretRedactor

__all__ = [
    "Loaded",
    "check_outputs",
    "choose_policy",
    "load",
    "load_tools",
    "output_screen",
    "write_text",
]


@dataclass(frozen=True, slots=True)
class Loaded:
    """The session a command works on.

    Attributes:
        trace: The file it was read from.
        session: The chosen session.
        count: How many sessions the file holds.
    """

    trace: Path
    session: ImportedSession
    count: int


def output_screen(args: argparse.Namespace, redactor: Redactor | None = None) -> OutputScreen:
    """What every output of a command goes through: on with `--redact`, or `redactor`.

    Args:
        args: The command's arguments.
        redactor: The manager's (`ContextManager.redactor`: `--redact`, or a policy's
            `redact` stage); a default `SecretRedactor` with `--redact` when `None`.
    """
    if redactor is None and getattr(args, "redact", False):
        redactor = SecretRedactor()
    return OutputScreen(redactor)


def load(args: argparse.Namespace, progress: Progress, screen: OutputScreen) -> Loaded:
    """Read `args.trace` (the bundled example by default) and pick `--session`.

    What it tells the user (the file's name, the input kept as notes) goes through
    `screen`.

    Raises:
        IngestError: the file is not a readable session, or has no such session.
    """
    if isinstance(args.trace, str):  # a database URL (`parser`): the session it names
        stored = stored_session(args.trace)
        # Its name stands for the file (the URL may hold a password: never shown).
        return Loaded(Path(stored.name), stored, 1)
    trace: Path = args.trace or EXAMPLE_SESSION
    if trace.is_dir() and not reads_folder(trace):
        msg = (
            "is a folder; give one session file (JSON or JSONL) inside it"
            " (of folders, opencode's storage folder is read whole)"
        )
        raise IngestError(msg, SourceLocation(str(trace)))
    progress.phase(screen.text(f"reading {trace.name}{_size(trace)}..."))
    # A session store (a proxy's thread): its recorded events; opencode's database is
    # SQLite too, and a trace.
    if is_session_file(trace) and not reads_database(trace):
        return Loaded(trace, stored_session(trace), 1)
    sessions = load_sessions(trace, format=args.input_format, strict=not args.lenient)
    text: str = args.session
    which: int | str = int(text) if text.removeprefix("-").isdecimal() and text.isascii() else text
    chosen = select_session(sessions, which, trace)
    for stray in chosen.strays:
        # What a strict read would have refused, so the user knows the input had gaps.
        print(screen.text(f"lenient: kept as a note: {stray.describe()}"), file=sys.stderr)
    cut = chosen.meta.get("incomplete_last_line")
    if cut is not None:
        said = f"lenient: left out line {cut}, cut off (the file is still being written?)"
        print(screen.text(said), file=sys.stderr)
    return Loaded(trace, chosen, len(sessions))


def _size(path: Path) -> str:
    try:
        size = path.stat().st_size
    except OSError:
        return ""  # reading it says what is wrong
    return f" ({size / 1e6:.1f} MB)" if size >= 1e6 else ""


def choose_policy(name: str | None) -> Policy:
    """A named policy, or a TOML policy file (`--policy`); `coding` by default.

    Raises:
        ConfigurationError: no such named policy, or a policy file that is wrong.
    """
    if name is None:
        return get_policy("coding")
    if name in POLICIES:
        return get_policy(name)
    path = Path(name)
    if path.suffix == ".toml" or path.exists():
        return Policy.load(path)
    return get_policy(name)  # raises, listing the named policies


def check_outputs(**options: Path | None) -> None:
    """Refuse an output path whose folder is missing, or that is a folder itself.

    Args:
        **options: The option's spelling (`o`, `report`) to the path it was given.

    Raises:
        UsageError: naming the option, the folder and what to do.
    """
    for option, path in options.items():
        if path is None:
            continue
        flag = f"-{option}" if len(option) == 1 else f"--{option}"
        folder = path.parent
        if not folder.exists():
            reason = f"the folder {folder} does not exist; create it first or write elsewhere"
            raise UsageError(f"{flag} {path}", reason)
        if not folder.is_dir():
            raise UsageError(f"{flag} {path}", f"{folder} is a file, not a folder")
        if path.is_dir():
            raise UsageError(f"{flag} {path}", "is a folder; give the path of a file to write")


def load_tools(path: Path | None) -> tuple[ToolSpec, ...]:
    """The tool definitions of a `--tools` file (none without one).

    The file holds a JSON array of tools, or an object with one under `tools` (a
    recorded request body, or a Gemini-style holder).

    Raises:
        UsageError: the file cannot be read, is not JSON, holds no tool list, or a tool
            in it does not read (the message names which and why).
    """
    if path is None:
        return ()
    where = f"--tools {path}"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(where, f"cannot read: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UsageError(where, f"is not a JSON file ({exc})") from None
    if isinstance(data, dict) and isinstance(data.get("tools"), list):
        data = data["tools"]
    if not isinstance(data, list):
        reason = "expected a JSON array of tool definitions, or an object with one in `tools`"
        raise UsageError(where, reason)
    try:
        return read_tools(data)
    except ConfigurationError as exc:
        raise UsageError(where, str(exc)) from None


def write_text(path: Path, text: str, option: str) -> None:
    """Write `text` to `path` (UTF-8).

    Raises:
        UsageError: the file cannot be written (permissions, a full disk).
    """
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"{option} {path}", f"cannot write: {exc.strerror or exc}") from None
