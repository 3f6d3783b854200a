"""Session stores under load: N PostgreSQL workers over M sessions, against SQLite.

Each call is what an agent worker does per model call: refresh the session (bring in
what other workers appended), ingest one event, render the request. Workers are
processes; each call picks one of the M sessions at random, so with several workers two
of them meet on a session and one retries after a `StoreConflictError` (the retry is
part of the call's latency). The baseline is one process over M SQLite session files.
Reports throughput and p50/p99 latency per call, and the bytes each store holds per
event against the event's own JSON.

    python -m benchmarks.store --url postgresql://user@host/db [--workers 1,2,4,8]
    python -m benchmarks.store --pg-bin /usr/lib/postgresql/15/bin   # a throwaway cluster

The events are synthetic user turns of about 600 bytes (no tool calls, so any order of
them is a valid history).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from benchmarks.store_server import throwaway_server
from context_graph import UserTurn
from context_graph.errors import StoreConflictError
from context_graph.testing import WordCounter
from orchestrator import ContextManager

_WORDS = "the tests ran again and the parser kept the last line of each report".split()


@dataclass(frozen=True)
class StoreRun:
    """One configuration's figures."""

    backend: str
    workers: int
    sessions: int
    calls: int
    seconds: float
    calls_per_second: float
    p50_ms: float
    p99_ms: float
    conflicts: int
    bytes_per_event: float
    raw_bytes_per_event: float


def _event(rng: random.Random, number: int) -> UserTurn:
    words = " ".join(rng.choice(_WORDS) for _ in range(110))
    return UserTurn(content=f"call {number}: {words}")


def _raw_bytes(event: UserTurn) -> int:
    return len(event.model_dump_json().encode("utf-8"))


def _work(locations: list[str], calls: int, seed: int, out: Path) -> None:
    """One worker: `calls` calls over the sessions; latencies and conflicts to `out`."""
    rng = random.Random(seed)
    managers = [
        ContextManager.open(location, counter=WordCounter(), durable=False)
        for location in locations
    ]
    latencies: list[float] = []
    conflicts = raw = 0
    try:
        for number in range(calls):
            manager = rng.choice(managers)
            event = _event(rng, number)
            start = time.perf_counter()
            manager.refresh()
            while True:
                try:
                    manager.ingest([event])
                    break
                except StoreConflictError:
                    conflicts += 1
                    manager.refresh()
            manager.render_sync()
            latencies.append(time.perf_counter() - start)
            raw += _raw_bytes(event)
    finally:
        for manager in managers:
            manager.close()
    out.write_text(json.dumps({"latencies": latencies, "conflicts": conflicts, "raw": raw}))


def _run(
    backend: str, locations: list[str], workers: int, calls: int
) -> tuple[float, list[dict[str, Any]]]:
    with tempfile.TemporaryDirectory() as folder:
        outs = [Path(folder) / f"{n}.json" for n in range(workers)]
        start = time.perf_counter()
        if workers == 1:
            _work(locations, calls, 0, outs[0])
        else:
            pids = []
            for n in range(workers):
                pid = os.fork()
                if pid == 0:  # the child
                    code = 0
                    try:
                        _work(locations, calls // workers, n, outs[n])
                    except BaseException:
                        code = 1
                    os._exit(code)
                pids.append(pid)
            for pid in pids:
                _, status = os.waitpid(pid, 0)
                if os.waitstatus_to_exitcode(status) != 0:
                    raise SystemExit(f"a {backend} worker failed")
        seconds = time.perf_counter() - start
        return seconds, [json.loads(out.read_text()) for out in outs]


def _figures(
    backend: str,
    workers: int,
    sessions: int,
    seconds: float,
    results: list[dict[str, Any]],
    stored: int,
) -> StoreRun:
    latencies = sorted(x for r in results for x in r["latencies"])
    calls = len(latencies)
    raw = sum(r["raw"] for r in results)
    return StoreRun(
        backend=backend,
        workers=workers,
        sessions=sessions,
        calls=calls,
        seconds=round(seconds, 2),
        calls_per_second=round(calls / seconds, 1),
        p50_ms=round(statistics.median(latencies) * 1000, 2),
        p99_ms=round(latencies[min(calls - 1, int(calls * 0.99))] * 1000, 2),
        conflicts=sum(r["conflicts"] for r in results),
        bytes_per_event=round(stored / calls, 1),
        raw_bytes_per_event=round(raw / calls, 1),
    )


def measure_sqlite(sessions: int, calls: int) -> StoreRun:
    """One process over `sessions` SQLite files."""
    with tempfile.TemporaryDirectory() as folder:
        paths = [str(Path(folder) / f"s{n}.db") for n in range(sessions)]
        seconds, results = _run("sqlite", paths, 1, calls)
        stored = sum(Path(path).stat().st_size for path in paths)
        return _figures("sqlite", 1, sessions, seconds, results, stored)


def measure_postgres(url: str, workers: int, sessions: int, calls: int) -> StoreRun:
    """`workers` processes over `sessions` sessions of a fresh database at `url`."""
    import psycopg

    name = f"cg_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}".encode())
    database = url.rsplit("/", 1)[0] + f"/{name}"
    try:
        locations = [f"{database}#s{n}" for n in range(sessions)]
        seconds, results = _run("postgres", locations, workers, calls)
        with psycopg.connect(database, autocommit=True) as conn:
            sizes = conn.execute(
                "SELECT sum(pg_total_relation_size(t)) FROM unnest(ARRAY['cg_log',"
                " 'cg_content', 'cg_state', 'cg_sessions']) AS t"
            ).fetchone()
        stored = int(sizes[0]) if sizes is not None else 0
        return _figures("postgres", workers, sessions, seconds, results, stored)
    finally:
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE {name} WITH (FORCE)".encode())


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; print one JSON object per configuration, and a table."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.store", description=__doc__)
    parser.add_argument("--url", help="a PostgreSQL database the benchmark may create databases on")
    parser.add_argument("--pg-bin", help="start a throwaway cluster with these binaries instead")
    parser.add_argument("--workers", default="1,2,4,8", help="worker counts (default: %(default)s)")
    parser.add_argument("--sessions", type=int, default=4, help="sessions M (default: 4)")
    parser.add_argument("--calls", type=int, default=400, help="calls per run (default: 400)")
    args = parser.parse_args(argv)
    counts = [int(n) for n in args.workers.split(",")]
    with contextlib.ExitStack() as stack:
        url = args.url
        if url is None:
            if args.pg_bin is None:
                parser.error("give --url or --pg-bin")
            url = stack.enter_context(throwaway_server(Path(args.pg_bin)))
        runs = [measure_sqlite(args.sessions, args.calls)]
        for workers in counts:
            print(f"postgres, {workers} workers...", file=sys.stderr)
            runs.append(measure_postgres(url, workers, args.sessions, args.calls))
    for run in runs:
        print(json.dumps(asdict(run)))
    print(_table(runs))
    return 0


def _table(runs: list[StoreRun]) -> str:
    lines = [
        "| backend | workers | sessions | calls/s | p50 ms | p99 ms | conflicts "
        "| bytes/event | raw bytes/event |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {r.backend} | {r.workers} | {r.sessions} | {r.calls_per_second} | {r.p50_ms} "
        f"| {r.p99_ms} | {r.conflicts} | {r.bytes_per_event} | {r.raw_bytes_per_event} |"
        for r in runs
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
