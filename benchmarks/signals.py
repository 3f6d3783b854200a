"""`python -m benchmarks.signals`: prove that a refactor changed no signal the bus sends.

`benchmarks.fingerprint` pins every rendered request; this pins what the orchestrator
says while it gets there. It feeds the bundled example session to a `ContextManager`
(every built-in profile, three formats, a budget of a quarter and of half the session's
tokens), renders before each assistant turn and records every bus signal with a
`Recorder`. Each signal is kept as its name and a short hash of its payload (pydantic
models and dataclasses by their fields; wall-clock fields such as an audit entry's
`time` are left out, because they differ from one run to the next).

    python -m benchmarks.signals before.json          # on the old commit
    python -m benchmarks.signals after.json           # on the new one
    python -m benchmarks.signals --diff before.json after.json   # exit 1 if any differ

A sub-agent result's node id is made from its fields, which include where its transcript
file is, so the session is copied to one fixed folder first: two checkouts at different
paths record the same ids.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import enum
import hashlib
import json
import shutil
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from pydantic import BaseModel

from benchmarks.recordings import load_recording, run_differences
from context_graph import ProviderFormat, TiktokenCounter
from context_graph.errors import BudgetExceededError
from context_graph.examples import EXAMPLE_SESSION
from context_graph.importers import load_events
from context_graph.testing import Recorder
from orchestrator import ContextManager

PROFILES: tuple[str, ...] = ("coding", "service", "chat")
FORMATS: tuple[ProviderFormat, ...] = ("openai", "anthropic", "gemini")
SHARES: tuple[float, ...] = (0.25, 0.5)

#: Payload fields that hold wall-clock readings, which differ between two equal runs.
CLOCK_FIELDS = frozenset({"time", "elapsed", "seconds", "started", "finished"})

#: One run's signals, in the order sent: `name:payload-hash`.
Signals = list[str]


def plain(value: Any) -> Any:
    """`value` as JSON-ready data with the clock fields left out (recursively)."""
    if isinstance(value, BaseModel):
        return plain(value.model_dump(mode="python"))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {field.name: getattr(value, field.name) for field in dataclasses.fields(value)}
        return plain(fields)
    if isinstance(value, Mapping):
        return {
            str(key): plain(item) for key, item in value.items() if str(key) not in CLOCK_FIELDS
        }
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [plain(item) for item in value]
        return sorted(items, key=repr) if isinstance(value, (set, frozenset)) else items
    if isinstance(value, enum.Enum):
        return plain(value.value)
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return type(value).__name__


def _digest(payload: Mapping[str, Any]) -> str:
    body = json.dumps(plain(payload), sort_keys=True, default=repr)
    return hashlib.sha256(body.encode()).hexdigest()[:12]


def _session() -> Path:
    """The bundled example, copied (with its sub-agents) to a folder of a fixed name."""
    folder = Path(tempfile.gettempdir()) / "context-graph-signals"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    shutil.copy(EXAMPLE_SESSION, folder / EXAMPLE_SESSION.name)
    shutil.copytree(EXAMPLE_SESSION.with_suffix(""), folder / EXAMPLE_SESSION.stem)
    return folder / EXAMPLE_SESSION.name


def _run(
    profile: str, fmt: ProviderFormat, budget: int, counter: TiktokenCounter, session: Path
) -> Signals:
    manager = ContextManager(format=fmt, budget=budget, counter=counter, policy=profile)
    events = load_events(session)
    with Recorder(manager.bus) as recorder:
        for event in events:
            if event.type == "assistant":
                # A refused call is part of the sequence: no render_done follows it.
                with contextlib.suppress(BudgetExceededError):
                    manager.render_sync()
            manager.ingest([event])
        manager.report_usage(max(1, budget // 3))
        with contextlib.suppress(BudgetExceededError):
            manager.render_sync()
    return [f"{event.name}:{_digest(event.payload)}" for event in recorder.events]


def record() -> dict[str, Signals]:
    """Every run's signals, keyed `format/share/profile`."""
    counter = TiktokenCounter()
    session = _session()
    total = sum(counter.count(str(event.model_dump())) for event in load_events(session))
    result: dict[str, Signals] = {}
    for fmt in FORMATS:
        for share in SHARES:
            for profile in PROFILES:
                budget = max(1_000, int(total * share))
                result[f"{fmt}/{share}/{profile}"] = _run(profile, fmt, budget, counter, session)
    return result


def _describe(key: str, first: int, old: Sequence[str], new: Sequence[str]) -> str:
    was = old[first] if first < len(old) else "(end)"
    now = new[first] if first < len(new) else "(end)"
    return f"{key}: signal {first + 1} was {was}, is {now}"


def differences(before: dict[str, Signals], after: dict[str, Signals]) -> list[str]:
    """One line per run whose signals differ, naming the first signal that does."""
    return run_differences(before, after, _describe)


def _load(path: Path) -> dict[str, Signals]:
    return cast(dict[str, Signals], load_recording(path, "signals recording"))


def main(argv: Sequence[str] | None = None) -> int:
    """Record the signals to a file, or compare two recordings."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.signals", description=__doc__)
    parser.add_argument("files", nargs="+", type=Path, help="OUT.json, or BEFORE AFTER")
    parser.add_argument("--diff", action="store_true", help="compare two recordings")
    args = parser.parse_args(argv)
    if args.diff:
        if len(args.files) != 2:
            parser.error("--diff takes two files")
        before, after = (_load(path) for path in args.files)
        lines = differences(before, after)
        runs = len(before.keys() | after.keys())
        sent = sum(len(signals) for signals in before.values())
        print(f"{len(lines)} of {runs} runs differ ({sent} signals before)")
        for line in lines:
            print(line)
        return 1 if lines else 0
    if len(args.files) != 1:
        parser.error("give one output file (or --diff BEFORE AFTER)")
    recorded = record()
    args.files[0].write_text(json.dumps(recorded, indent=1, sort_keys=True))
    sent = sum(len(signals) for signals in recorded.values())
    print(f"{len(recorded)} runs, {sent} signals -> {args.files[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
