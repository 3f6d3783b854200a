"""`context-graph proxy sessions` and `proxy handoff`: what the proxy's store holds.

Both read the store (a folder, or a PostgreSQL database) read only, so they run beside
a serving proxy as well as after it stopped.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from orchestrator.cli.errors import EXIT_OK, UsageError
from orchestrator.cli.progress import Progress
from orchestrator.cli.proxy import default_store, run_proxy
from orchestrator.cli.session import check_outputs, write_text
from orchestrator.gateway.handoff import HandoffSource, write_handoff
from orchestrator.gateway.listing import (
    SessionListing,
    ThreadListing,
    list_sessions,
    read_thread,
)
from orchestrator.persistence.postgres.connect import redacted

__all__ = ["run_proxy_action", "run_proxy_command"]


def run_proxy_command(args: argparse.Namespace, progress: Progress) -> int:
    """`context-graph proxy`: serve (`run_proxy`), or read the store for an action."""
    if getattr(args, "proxy_action", None) is None:
        return run_proxy(args, progress)
    return run_proxy_action(args, progress)


def run_proxy_action(args: argparse.Namespace, progress: Progress) -> int:
    """Run `proxy sessions` or `proxy handoff`."""
    store: Path | str = args.store or default_store()
    if args.proxy_action == "sessions":
        return _run_sessions(store, args, progress)
    return _run_handoff(store, args, progress)


def _run_sessions(store: Path | str, args: argparse.Namespace, progress: Progress) -> int:
    progress.phase("reading the sessions...")
    sessions = list_sessions(store)
    progress.close()
    if args.json:
        print(
            json.dumps(
                {"store": redacted(str(store)), "sessions": [_json(s) for s in sessions]}, indent=2
            )
        )
    else:
        print(_table(store, sessions))
    return EXIT_OK


def _run_handoff(store: Path | str, args: argparse.Namespace, progress: Progress) -> int:
    check_outputs(out=args.out)
    progress.phase("reading the session...")
    session = _the_session(list_sessions(store), args.session, args.wire, store)
    thread = _the_thread(session, args.thread)
    with read_thread(thread.location) as restored:
        text = write_handoff(
            restored.raw, HandoffSource(session.session, session.wire, thread.number)
        )
    progress.close()
    if args.out is None:
        print(text, end="")
    else:
        write_text(args.out, text, "--out")
    return EXIT_OK


def _the_session(
    sessions: list[SessionListing], wanted: str, wire: str | None, store: Path | str
) -> SessionListing:
    found = [s for s in sessions if s.session == wanted and wire in (None, s.wire)]
    if not found:
        known = ", ".join(s.session for s in sessions[:10]) or "none"
        raise UsageError(
            f"proxy handoff {wanted}",
            f"no such session in {redacted(str(store))} (it holds: {known})",
        )
    if len(found) > 1:
        wires = ", ".join(s.wire for s in found)
        raise UsageError(f"proxy handoff {wanted}", f"is in more than one wire ({wires}): --wire")
    return found[0]


def _the_thread(session: SessionListing, number: int | None) -> ThreadListing:
    """The thread asked for, else the one whose record holds the most nodes."""
    if number is None:
        return max(session.threads, key=lambda t: (t.nodes, -t.number))
    for thread in session.threads:
        if thread.number == number:
            return thread
    numbers = ", ".join(str(t.number) for t in session.threads)
    raise UsageError(f"--thread {number}", f"session {session.session} has threads {numbers}")


def _json(session: SessionListing) -> dict[str, Any]:
    usage = session.usage
    return {
        "session": session.session,
        "wire": session.wire,
        "place": session.place,
        "last_activity": session.last_activity,
        "usage": None if usage is None else usage.model_dump(mode="json"),
        "cache_hit_rate": None if usage is None else usage.cache_hit_rate,
        "threads": [_thread_json(t) for t in session.threads],
    }


def _thread_json(thread: ThreadListing) -> dict[str, Any]:
    activity = thread.activity
    return {
        "thread": thread.number,
        "location": thread.location,
        "nodes": thread.nodes,
        "recorded_tokens": thread.recorded_tokens,
        "held_tokens": thread.held_tokens,
        "sent_tokens": None if activity is None else activity.sent_tokens,
        "last_activity": None if activity is None else activity.at,
        "usage_calls": None if thread.usage is None else thread.usage.calls,
        "cache_hit_rate": None if thread.usage is None else thread.usage.cache_hit_rate,
    }


_COLUMNS = (
    "SESSION", "WIRE", "THREADS", "NODES", "HELD", "SENT", "LAST ACTIVITY", "CALLS", "CACHE"
)  # fmt: skip


def _table(store: Path | str, sessions: list[SessionListing]) -> str:
    if not sessions:
        return f"no sessions in {redacted(str(store))}"
    rows = [_COLUMNS, *(_row(s) for s in sessions)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(_COLUMNS))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in rows]
    return "\n".join(line.rstrip() for line in lines)


def _row(session: SessionListing) -> tuple[str, ...]:
    """HELD: the working view's tokens; SENT: the last request's, of the newest thread."""
    latest = max(session.threads, key=lambda t: t.activity.at if t.activity else 0.0)
    sent = latest.activity.sent_tokens if latest.activity else None
    usage = session.usage
    when = session.last_activity
    return (
        session.session,
        session.wire,
        str(len(session.threads)),
        f"{sum(t.nodes for t in session.threads):,}",
        f"{sum(t.held_tokens for t in session.threads):,}",
        "-" if sent is None else f"{sent:,}",
        "-" if when is None else time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(when)),
        "-" if usage is None else str(usage.calls),
        "-" if usage is None or usage.cache_hit_rate is None else f"{usage.cache_hit_rate:.0%}",
    )
