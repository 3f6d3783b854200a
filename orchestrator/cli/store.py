"""`context-graph store copy SRC DST`: a session moved between SQLite and PostgreSQL."""

from __future__ import annotations

import argparse
import json

from orchestrator.cli.errors import EXIT_OK
from orchestrator.cli.progress import Progress
from orchestrator.persistence.copy import copy_session

__all__ = ["run_store"]


def run_store(args: argparse.Namespace, progress: Progress) -> int:
    """Copy the session; print what was copied (one line, or JSON)."""
    progress.phase("copying the session...")
    copied = copy_session(args.source, args.destination, counter=args.counter)
    progress.close()
    if args.json:
        print(json.dumps({"entries": copied.entries, "state_keys": copied.state}))
    else:
        print(f"copied {copied.entries:,} entries and {copied.state} state keys")
    return EXIT_OK
