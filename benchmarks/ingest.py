"""Ingest speed: the engine against the floor of tokenizing each event once.

Replays a recorded session event by event into a fresh `ContextGraph` (validation,
ids, pairing, units, edges and token counting included) and, in the same run, times the
floor: tiktoken-encoding the countable text of each event once with the same encoding.
Reports time per event, totals and their ratio (the issue's target is <= 1.5x).

    python -m benchmarks.ingest                 # the largest session in ../shared/traces
    python -m benchmarks.ingest PATH [--repeat 5]
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from benchmarks.compare.sessions import session_files
from context_graph import AgentEvent, ContextGraph, TiktokenCounter
from context_graph.graph.node_tokens import countable_text
from context_graph.importers import load_sessions
from context_graph.testing import strict_trace

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TRACES = ROOT.parent / "shared" / "traces"


@dataclass(frozen=True)
class IngestResult:
    """One benchmark run's figures (nanoseconds unless named otherwise)."""

    trace: str
    events: int
    nodes: int
    tokens: int
    engine_total_ns: int
    floor_total_ns: int
    engine_per_event_ns: float
    floor_per_event_ns: float
    ratio: float


def largest_session(traces: Path) -> Path:
    """The biggest main session file under `traces` (sub-agent transcripts excluded)."""
    candidates = session_files(traces)
    if not candidates:
        msg = f"no traces under {traces}"
        raise SystemExit(msg)
    return max(candidates, key=lambda p: p.stat().st_size)


def _event_texts(events: list[AgentEvent]) -> list[list[str]]:
    """The texts the floor encodes: each event's content, and each call's name and args."""
    probe = ContextGraph(counter=_NullCounter())
    texts: list[list[str]] = []
    for event in events:
        ids = probe.add(event)
        texts.append([countable_text(probe[i])[0] for i in ids])
    return texts


class _NullCounter:
    name = "null"

    def count(self, text: str) -> int:
        return 0


def _time_engine(events: list[AgentEvent], counter: TiktokenCounter) -> tuple[int, ContextGraph]:
    graph = ContextGraph(counter=counter)
    gc.collect()
    start = time.perf_counter_ns()
    for event in events:
        graph.add(event)
    return time.perf_counter_ns() - start, graph


def _time_floor(texts: list[list[str]], counter: TiktokenCounter) -> int:
    gc.collect()
    start = time.perf_counter_ns()
    for pieces in texts:
        for text in pieces:
            counter.count(text)
    return time.perf_counter_ns() - start


def run(trace: Path, repeat: int = 5) -> IngestResult:
    """Benchmark one trace file's first session; the best of `repeat` runs each."""
    events = load_sessions(trace, strict=strict_trace(trace))[0].events
    texts = _event_texts(events)
    counter = TiktokenCounter()
    counter.count("warm up")
    engine_runs: list[int] = []
    floor_runs: list[int] = []
    graph = None
    for _ in range(repeat):
        # Interleave so that both see the same machine state.
        floor_runs.append(_time_floor(texts, counter))
        elapsed, graph = _time_engine(events, counter)
        engine_runs.append(elapsed)
    assert graph is not None
    engine, floor = min(engine_runs), min(floor_runs)
    n = len(events)
    return IngestResult(
        trace=str(trace.relative_to(trace.parents[2])) if len(trace.parents) > 2 else str(trace),
        events=n,
        nodes=len(graph),
        tokens=graph.total_tokens,
        engine_total_ns=engine,
        floor_total_ns=floor,
        engine_per_event_ns=engine / n,
        floor_per_event_ns=floor / n,
        ratio=engine / floor if floor else float("inf"),
    )


def format_result(result: IngestResult) -> str:
    """A small Markdown table of one result."""
    return "\n".join(
        [
            f"trace: {result.trace} ({result.events} events, {result.nodes} nodes, "
            f"{result.tokens:,} tokens)",
            "",
            "| measure | engine | floor (tiktoken once per event) | ratio |",
            "|---|---:|---:|---:|",
            f"| total | {result.engine_total_ns / 1e6:.1f} ms | "
            f"{result.floor_total_ns / 1e6:.1f} ms | {result.ratio:.2f}x |",
            f"| per event | {result.engine_per_event_ns / 1e3:.1f} us | "
            f"{result.floor_per_event_ns / 1e3:.1f} us | |",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trace", nargs="?", type=Path)
    parser.add_argument("--traces", type=Path, default=DEFAULT_TRACES)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", action="store_true", help="print the raw figures as JSON")
    args = parser.parse_args(argv)
    trace = args.trace or largest_session(args.traces)
    result = run(trace, args.repeat)
    print(json.dumps(asdict(result), indent=2) if args.json else format_result(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
