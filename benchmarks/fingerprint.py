"""`python -m benchmarks.fingerprint`: prove that a speed change changed no request.

Replays every shared session with every built-in profile at every benchmark budget, as
`python -m benchmarks` does, and records a short hash of each request (or `null` for a
refused call). Two fingerprints taken before and after a change that should only make
the engine faster must be equal; `--diff` says where they are not.

    python -m benchmarks.fingerprint before.json          # on the old commit
    python -m benchmarks.fingerprint after.json           # on the new one
    python -m benchmarks.fingerprint --diff before.json after.json   # exit 1 if any differ
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import cast

import anyio

from benchmarks.compare.contenders import PROFILES, ContextGraphContender
from benchmarks.compare.sessions import BUDGET_LABELS, Session, discover
from benchmarks.recordings import load_recording, run_differences
from context_graph import TiktokenCounter

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TRACES = ROOT.parent / "shared" / "traces"

#: One run's requests, in call order: a hash per answered call, `None` per refused one.
Requests = list[str | None]


async def _requests(
    profile: str, budget: int, session: Session, counter: TiktokenCounter
) -> Requests:
    contender = ContextGraphContender(profile, budget, counter)
    out: Requests = []
    for fed, item in enumerate(contender.prepare(session.events), start=1):
        await contender.feed(item)
        if fed in session.calls:
            native = await contender.request(budget)
            if native is None:
                out.append(None)
            else:
                body = json.dumps(contender.payload(native), sort_keys=True)
                out.append(hashlib.sha256(body.encode()).hexdigest()[:16])
    return out


def fingerprint(
    sessions: Sequence[Session], labels: Sequence[str] = BUDGET_LABELS
) -> dict[str, Requests]:
    """Every run's requests, keyed `family/session/budget/profile`."""
    counter = TiktokenCounter()
    result: dict[str, Requests] = {}
    for session in sessions:
        for label, budget in session.budgets(labels).items():
            for profile in PROFILES:
                key = f"{session.family}/{session.label}/{label}/{profile}"
                result[key] = anyio.run(_requests, profile, budget, session, counter)
    return result


def _describe(key: str, first: int, old: Sequence[str | None], new: Sequence[str | None]) -> str:
    return f"{key}: first differing call {first + 1} of {max(len(old), len(new))}"


def differences(before: dict[str, Requests], after: dict[str, Requests]) -> list[str]:
    """One line per run that differs (or is only in one of the two), with the first call."""
    return run_differences(before, after, _describe)


def _load(path: Path) -> dict[str, Requests]:
    return cast(dict[str, Requests], load_recording(path, "fingerprint"))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.fingerprint", description=__doc__)
    parser.add_argument("out", nargs="?", type=Path, help="where to write the fingerprint")
    parser.add_argument("--diff", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    parser.add_argument("--traces", type=Path, default=DEFAULT_TRACES)
    parser.add_argument("--only", metavar="FAMILY", help="only this session family")
    args = parser.parse_args(argv)
    if args.diff:
        before, after = (_load(path) for path in args.diff)
        lines = differences(before, after)
        print(f"{len(before.keys() | after.keys())} runs, {len(lines)} differ")
        print("\n".join(lines[:50]))
        return 1 if lines else 0
    if args.out is None:
        parser.error("give a file to write, or --diff BEFORE AFTER")
    sessions = discover(args.traces, only=args.only)
    if not sessions:
        parser.error(f"no sessions found in {args.traces}")
    result = fingerprint(sessions)
    args.out.write_text(json.dumps(result, indent=0, sort_keys=True))
    print(f"{len(result)} runs written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
