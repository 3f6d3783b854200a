"""Time per call as a long session grows: context-graph against LangChain `trim_messages`.

What users feel on a long session is the time each call takes as the history grows, so
this benchmark stitches one long coding session out of the real ones in ../shared/traces
and replays it for each contender (the harness of `benchmarks.compare`, so both hold
what an agent would and both count with the same cl100k_base counter, cached per
message or node):

- the tasks: the main (not sub-agent) sessions of the coding families, taken in turn
  from each family, largest first, `--tasks` of them (14 by default);
- a round is every task once, in that order; rounds repeat until the raw history holds
  `--tokens` tokens (3M by default; `--tokens 10M` for the long version). The first
  task's system prompt opens the session; the other system prompts and the recorded
  compactions (another tool's, which would stand for all that came before) are left out;
- a call is a point where the recorded agent called its model (right before each
  assistant turn, and after the last event). The time of a call is the time of feeding
  the events since the previous call plus the time of the request itself.

Reported per contender, in one run: total time, the mean call time of each quarter of
the calls, p50 / p99 / max, peak memory growth of the replay (each contender replays in
a process of its own, so one's memory is not counted against the other), and requests
over the budget or invalid by our validator (every 50th call and the last are checked,
so that checking does not dominate the run). The targets: total <= 0.5x trim_messages,
and the mean call time of the last quarter <= 1.3x the first.

The same command then replays context-graph alone at a small budget (`--small-budget`,
16,000 tokens by default; 0 leaves it out), where it compacts many times more often and
a rolling summary absorbs the previous one at each compaction: the time per call must
stay as flat there (last quarter <= 1.3x the first), whatever the number of summaries.

The wall time of one replay on a shared machine moves by a quarter from run to run, so
the contenders replay `--repeats` times (3 by default), taking turns (ours, theirs,
ours, ...) so that a slow stretch of the machine falls on both. Each contender's replay
with the median total is shown, with every replay's total; the targets are judged on
each call at its fastest over the replays (`Replays.fastest`): a call does the same work
in every replay, and a slow stretch that lasts minutes lands whole in one replay's
quarter.

    python -m benchmarks.long_session                    # ~3M tokens, 200k budget
    python -m benchmarks.long_session --tokens 10M --small-budget 0         # what the page runs
    python -m benchmarks.long_session --tokens 200k --tasks 4 --budget 20000 --json out.json
    python -m benchmarks.long_session --plot docs/img/long_session.png    # needs matplotlib
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import math
import multiprocessing
import resource
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from queue import Empty
from typing import Any

from benchmarks.compare.contenders import ContenderSpec, context_graph_specs
from benchmarks.compare.plots import matplotlib_available
from benchmarks.compare.sessions import Session, discover
from context_graph import AgentEvent, Compaction, SystemPrompt, TiktokenCounter
from context_graph.graph.node_tokens import NodeTokenCache
from context_graph.render import count_payload
from context_graph.validate.request import validate
from orchestrator.replay import model_call_points

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TRACES = ROOT.parent / "shared" / "traces"
CODING_FAMILIES = (
    "claude_code",
    "codex_cli",
    "gemini_cli",
    "mini_swe_agent_deepseek",
    "openhands_claude35_swebench_verified",
    "swe_agent",
)
CHECK_EVERY = 50
PLOT_WINDOWS = 100
"""The plot's points: the calls are cut into this many windows, each drawn at its mean."""
TARGET_TOTAL_RATIO = 0.5
TARGET_GROWTH = 1.3
SMALL_BUDGET = 16_000
"""The small budget's run: context-graph alone, compacting many times more often."""


@dataclass(frozen=True)
class Stitched:
    """The long session: its events, where the model was called, and what it is made of."""

    events: list[AgentEvent]
    calls: list[int]
    """How many events had been fed at each call, in order."""
    tasks: list[str]
    rounds: int
    raw_tokens: int
    """The raw size: the sum of the tasks' raw sizes, times the rounds."""


@dataclass(frozen=True)
class Timings:
    """One contender's replay of the stitched session."""

    name: str
    calls: int
    total_s: float
    quarter_means_ms: list[float]
    p50_ms: float
    p99_ms: float
    max_ms: float
    peak_memory_mb: float
    """Growth of the peak resident set over the replay (the events were loaded before)."""
    refused: int
    over_budget: int
    invalid: int
    checked: int
    window_means_ms: list[float]
    """The mean call time of each of `PLOT_WINDOWS` consecutive windows of calls."""
    call_ns: tuple[int, ...] = ()
    """The time of each call, in order (`Replays.fastest` reads them)."""

    @property
    def growth(self) -> float:
        """The last quarter's mean call time over the first quarter's."""
        first, last = self.quarter_means_ms[0], self.quarter_means_ms[-1]
        return last / first if first else math.inf


@dataclass(frozen=True)
class Replays:
    """One contender's replays of the stitched session, in the order they ran."""

    runs: list[Timings]

    def __post_init__(self) -> None:
        if not self.runs or len({r.name for r in self.runs}) != 1:
            msg = "Replays holds one or more replays of one contender"
            raise ValueError(msg)
        if len({len(r.call_ns) for r in self.runs}) != 1:
            msg = "the replays of one session time the same calls, but their counts differ"
            raise ValueError(msg)

    @property
    def name(self) -> str:
        return self.runs[0].name

    @property
    def median(self) -> Timings:
        """The replay with the median total (the lower middle one of an even count)."""
        ordered = sorted(self.runs, key=lambda r: r.total_s)
        return ordered[(len(ordered) - 1) // 2]

    @property
    def fastest(self) -> Timings:
        """Each call at its fastest over the replays, as one replay: what the targets judge.

        Every replay does the same work at each call; what differs is what the machine
        adds, and a slow stretch of a shared machine lasts minutes, so it lands whole in
        one replay's quarter and moves its last quarter over its first by more than the
        engine does. A call's fastest time is the nearest to its work alone, as `timeit`
        takes the best of its repeats. Memory and the checks are the median replay's.
        """
        median = self.median
        if len(self.runs) == 1:
            return median
        fastest = [min(times) for times in zip(*(r.call_ns for r in self.runs), strict=True)]
        return _timings(
            median.name,
            fastest,
            median.peak_memory_mb,
            median.refused,
            median.over_budget,
            median.invalid,
            median.checked,
        )


def pick_tasks(sessions: Sequence[Session], count: int) -> list[Session]:
    """`count` main coding sessions, taken in turn from each family, largest first."""
    queues = {
        family: sorted(
            (s for s in sessions if s.family == family and not s.subagent and len(s.calls) > 1),
            key=lambda s: (-s.raw_tokens, s.source, s.label),
        )
        for family in CODING_FAMILIES
    }
    picked: list[Session] = []
    while len(picked) < count and any(queues.values()):
        for family in CODING_FAMILIES:
            if queues[family] and len(picked) < count:
                picked.append(queues[family].pop(0))
    if not picked:
        msg = "no coding sessions found; pass --traces DIR (see ../shared/traces/README.md)"
        raise SystemExit(msg)
    return picked


def stitch(tasks: Sequence[Session], tokens: int) -> Stitched:
    """Repeat the tasks, in order, until the raw history holds about `tokens` tokens."""
    per_round = sum(task.raw_tokens for task in tasks)
    rounds = max(1, math.ceil(tokens / per_round))
    events: list[AgentEvent] = []
    opening = next((e for e in tasks[0].events if isinstance(e, SystemPrompt)), None)
    if opening is not None:
        events.append(opening)
    for _ in range(rounds):
        for task in tasks:
            # A call id may repeat once the earlier call was answered, so the tasks'
            # own ids stay as recorded across rounds.
            events.extend(e for e in task.events if not isinstance(e, SystemPrompt | Compaction))
    return Stitched(
        events=events,
        calls=sorted(model_call_points(events)),
        tasks=[f"{t.family}/{t.label}" for t in tasks],
        rounds=rounds,
        raw_tokens=per_round * rounds,
    )


def _resident_kb() -> int:
    """The resident set now, in KiB (Linux), else the peak so far."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _peak_kb() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


async def _replay(spec: ContenderSpec, stitched: Stitched, budget: int) -> Timings:
    counter = TiktokenCounter()
    cache = NodeTokenCache(counter)
    contender = spec.make(budget, counter)
    items = contender.prepare(stitched.events)
    start_kb = _resident_kb()
    times_ns: list[int] = []
    refused = over = invalid = checked = 0
    fed = 0
    last = len(stitched.calls) - 1
    for number, point in enumerate(stitched.calls):
        started = time.perf_counter_ns()
        for item in items[fed:point]:
            await contender.feed(item)
        fed = point
        await contender.tune(budget)
        native = await contender.request(budget)
        times_ns.append(time.perf_counter_ns() - started)
        if native is None:
            refused += 1
        elif number % CHECK_EVERY == 0 or number == last:
            payload = contender.payload(native)
            checked += 1
            invalid += bool(validate(payload, "openai"))
            over += count_payload(payload, "openai", cache) > budget
    peak_mb = max(0, _peak_kb() - start_kb) / 1024
    return _timings(spec.name, times_ns, peak_mb, refused, over, invalid, checked)


def _timings(
    name: str,
    times_ns: list[int],
    peak_mb: float,
    refused: int,
    over: int,
    invalid: int,
    checked: int,
) -> Timings:
    ms = [t / 1e6 for t in times_ns]
    quarter = max(1, len(ms) // 4)
    quarters = [ms[i * quarter : (i + 1) * quarter] for i in range(3)] + [ms[3 * quarter :]]
    windows = _windows(ms, PLOT_WINDOWS)
    ordered = sorted(ms)

    def pct(share: float) -> float:
        return ordered[min(len(ordered) - 1, int(share * len(ordered)))]

    return Timings(
        name=name,
        calls=len(ms),
        total_s=sum(ms) / 1e3,
        quarter_means_ms=[sum(q) / len(q) if q else 0.0 for q in quarters],
        p50_ms=pct(0.5),
        p99_ms=pct(0.99),
        max_ms=ordered[-1],
        peak_memory_mb=peak_mb,
        refused=refused,
        over_budget=over,
        invalid=invalid,
        checked=checked,
        window_means_ms=[sum(w) / len(w) for w in windows],
        call_ns=tuple(times_ns),
    )


def _bounds(length: int, count: int) -> list[int]:
    """Where `count` near-equal windows over `length` calls begin and end (`count + 1`
    numbers); with fewer calls than windows, one window a call."""
    count = max(1, min(count, length))
    return [round(i * length / count) for i in range(count + 1)]


def _windows(values: Sequence[float], count: int) -> list[Sequence[float]]:
    """`values` cut into `_bounds` windows (none of them empty when `values` is not)."""
    return [values[a:b] for a, b in itertools.pairwise(_bounds(len(values), count)) if b > a]


def plot(stitched: Stitched, budget: int, results: Sequence[Timings], path: Path) -> None:
    """Draw the mean call time along the session, and the time summed over the calls."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.2))
    for index, r in enumerate(results):
        style = "-" if r.name.startswith("context-graph") else "--"
        bounds = _bounds(r.calls, len(r.window_means_ms))
        middles = [(a + b) / 2 for a, b in itertools.pairwise(bounds)]
        left.plot(middles, r.window_means_ms, style, color=f"C{index}", linewidth=1, label=r.name)
        summed, total = [], 0.0
        for a, b, mean in zip(bounds, bounds[1:], r.window_means_ms, strict=False):
            total += mean * (b - a) / 1e3
            summed.append(total)
        right.plot(bounds[1:], summed, style, color=f"C{index}", linewidth=1, label=r.name)
    left.set_xlabel("model call")
    left.set_ylabel(
        f"mean time per call, ms (windows of ~{max(1, len(stitched.calls) // PLOT_WINDOWS)} calls)"
    )
    left.set_ylim(bottom=0)
    left.legend(fontsize=7)
    right.set_xlabel("model call")
    right.set_ylabel("time so far, s")
    right.set_ylim(bottom=0)
    right.legend(fontsize=7)
    fig.suptitle(
        f"{stitched.raw_tokens:,} raw tokens, {len(stitched.calls):,} calls, "
        f"budget {budget:,} tokens",
        fontsize=9,
    )
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _child(spec: ContenderSpec, stitched: Stitched, budget: int, queue: Any) -> None:
    queue.put(asdict(asyncio.run(_replay(spec, stitched, budget))))


def replay_isolated(spec: ContenderSpec, stitched: Stitched, budget: int) -> Timings:
    """Replay in a forked process of its own, so each peak memory is its own."""
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    process = context.Process(target=_child, args=(spec, stitched, budget, queue))
    process.start()
    while True:
        try:
            result = queue.get(timeout=1.0)
        except Empty:
            if process.is_alive():
                continue
            # The child died before it could report (its traceback went to stderr).
            msg = f"the replay of {spec.name} exited with {process.exitcode} before reporting"
            raise RuntimeError(msg) from None
        break
    process.join()
    return Timings(**result)


def replay_in_turns(
    specs: Sequence[ContenderSpec], stitched: Stitched, budget: int, repeats: int
) -> list[Replays]:
    """`repeats` isolated replays of each contender, the contenders taking turns."""
    runs: dict[str, list[Timings]] = {spec.name: [] for spec in specs}
    for repeat in range(repeats):
        for spec in specs:
            timings = replay_isolated(spec, stitched, budget)
            runs[spec.name].append(timings)
            print(
                f"  {spec.name}, replay {repeat + 1} of {repeats}: {timings.total_s:.1f} s",
                file=sys.stderr,
                flush=True,
            )
    return [Replays(runs[spec.name]) for spec in specs]


def contenders() -> list[ContenderSpec]:
    """context-graph's coding profile and, when langchain-core is installed, trim_messages."""
    specs = [s for s in context_graph_specs() if s.name == "context-graph coding"]
    try:
        from benchmarks.compare.langchain_peer import langchain_specs
    except ImportError:
        return specs
    try:
        return specs + langchain_specs()
    except ImportError:
        return specs


def report(
    stitched: Stitched,
    budget: int,
    replays: Sequence[Replays],
    small: tuple[int, Replays] | None = None,
) -> str:
    """The Markdown tables and the targets of one run.

    The first table holds each contender's median replay; with more than one replay, a
    second one holds each call at its fastest over them (`Replays.fastest`), which the
    targets judge. `small`: the small budget and context-graph's replays at it,
    reported after them and judged with the other targets.
    """
    results = [r.median for r in replays]
    repeats = max(len(r.runs) for r in replays) if replays else 0
    lines = [
        f"Stitched session: {len(stitched.tasks)} tasks x {stitched.rounds} rounds, "
        f"{len(stitched.events):,} events, {len(stitched.calls):,} calls, "
        f"{stitched.raw_tokens:,} raw tokens; budget {budget:,} tokens.",
        "",
        *(
            [
                f"Each contender replayed {repeats} times, taking turns. Every replay's "
                "total (and its last quarter's mean call over its first), in the order "
                "they ran: " + "; ".join(_runs(r) for r in replays) + ".",
                "",
                "Each contender's replay with the median total:",
                "",
            ]
            if repeats > 1
            else []
        ),
        *_HEADER,
        *(_row(r) for r in results),
    ]
    if repeats > 1:
        lines += [
            "",
            "Each call at its fastest over the replays (a call does the same work in every "
            "replay; a slow stretch of the machine lands in one of them): the targets are "
            "judged on these.",
            "",
            *_HEADER,
            *(_row(r.fastest) for r in replays),
        ]
    if small is not None:
        lines += [
            "",
            f"At a {small[0]:,}-token budget, context-graph alone (it compacts many times "
            "more often; each rolling summary absorbs the one before it); its replays: "
            + _runs(small[1], named=False)
            + ("; each call at its fastest over them:" if len(small[1].runs) > 1 else "."),
            "",
            *_HEADER,
            _row(small[1].fastest),
        ]
    small_fastest = None if small is None else (small[0], small[1].fastest)
    lines += ["", *targets([r.fastest for r in replays], small_fastest)]
    return "\n".join(lines)


def _runs(replays: Replays, *, named: bool = True) -> str:
    """Each replay's total and growth, in the order they ran."""
    each = ", ".join(f"{t.total_s:.1f} s ({t.growth:.2f}x)" for t in replays.runs)
    return f"{replays.name} {each}" if named else each


_HEADER = (
    "| contender | total | mean per call by quarter (ms) | p50 | p99 | max "
    "| peak memory | refused | over budget / invalid (of checked) |",
    "|---|---:|---|---:|---:|---:|---:|---:|---:|",
)


def _row(r: Timings) -> str:
    """One contender's line of the table."""
    quarters = " -> ".join(f"{q:.2f}" for q in r.quarter_means_ms)
    return (
        f"| {r.name} | {r.total_s:.1f} s | {quarters} | {r.p50_ms:.2f} ms "
        f"| {r.p99_ms:.2f} ms | {r.max_ms:.1f} ms | {r.peak_memory_mb:.0f} MB "
        f"| {r.refused} | {r.over_budget} / {r.invalid} (of {r.checked}) |"
    )


def verdicts(
    results: Sequence[Timings], small: tuple[int, Timings] | None = None
) -> list[dict[str, Any]]:
    """Each target of this run: what it says, what was measured, whether it was met.

    `results`: each contender's figures (`Replays.fastest`); `small`: the small budget
    and context-graph's figures at it.
    """
    ours = next((r for r in results if r.name.startswith("context-graph")), None)
    theirs = next((r for r in results if r.name.startswith("langchain")), None)
    found: list[dict[str, Any]] = []
    if ours is not None and theirs is not None and theirs.total_s:
        ratio = ours.total_s / theirs.total_s
        found.append(
            {
                "target": f"total <= {TARGET_TOTAL_RATIO}x trim_messages",
                "measured": f"{ratio:.2f}x",
                "met": ratio <= TARGET_TOTAL_RATIO,
            }
        )
    if ours is not None:
        found.append(
            {
                "target": f"last quarter's mean call <= {TARGET_GROWTH}x the first",
                "measured": f"{ours.growth:.2f}x",
                "met": ours.growth <= TARGET_GROWTH,
            }
        )
    if small is not None:
        budget, timings = small
        found.append(
            {
                "target": f"at a {budget:,}-token budget: last quarter's mean call "
                f"<= {TARGET_GROWTH}x the first",
                "measured": f"{timings.growth:.2f}x",
                "met": timings.growth <= TARGET_GROWTH,
            }
        )
    return found


def targets(results: Sequence[Timings], small: tuple[int, Timings] | None = None) -> list[str]:
    """Each target, met or not, for this run (a Markdown table)."""
    rows = ["| target | measured | met |", "|---|---:|---|"]
    for verdict in verdicts(results, small):
        met = "yes" if verdict["met"] else "no"
        rows.append(f"| {verdict['target']} | {verdict['measured']} | {met} |")
    return rows


def _size(text: str) -> int:
    """`3M`, `200k` or `3000000` as a number of tokens."""
    scale = {"k": 1_000, "m": 1_000_000}.get(text[-1:].lower(), 1)
    number = text[:-1] if scale != 1 else text
    try:
        value = int(float(number) * scale)
    except ValueError:
        msg = f"not a token count: {text!r} (e.g. 3M, 200k, 500000)"
        raise argparse.ArgumentTypeError(msg) from None
    if value <= 0:
        msg = f"a token count must be positive: {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return value


def _size_or_zero(text: str) -> int:
    """`_size`, or 0 (for an option that 0 turns off)."""
    return 0 if text.strip() == "0" else _size(text)


def _figures(replays: Replays) -> dict[str, Any]:
    """One contender's median replay for `--json`, with its growth and every total, and
    the figures of each call at its fastest (`Replays.fastest`); no per-call times."""
    median, fastest = replays.median, replays.fastest
    return _without_calls(median) | {
        "growth": median.growth,
        "repeat_totals_s": [t.total_s for t in replays.runs],
        "repeat_growths": [t.growth for t in replays.runs],
        "fastest": _without_calls(fastest) | {"growth": fastest.growth},
    }


def _without_calls(timings: Timings) -> dict[str, Any]:
    """`timings` as a dict, without the time of each call (thousands of numbers)."""
    return {k: v for k, v in asdict(timings).items() if k != "call_ns"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=Path, default=DEFAULT_TRACES)
    parser.add_argument("--tokens", type=_size, default=3_000_000, help="raw size (3M, 10M)")
    parser.add_argument("--tasks", type=int, default=14, help="coding sessions per round")
    parser.add_argument("--budget", type=_size, default=200_000, help="token budget per call")
    parser.add_argument(
        "--small-budget",
        type=_size_or_zero,
        default=SMALL_BUDGET,
        help="also replay context-graph alone at this budget (0: do not)",
    )
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--plot", type=Path, help="also draw the time per call here (PNG)")
    parser.add_argument(
        "--repeats", type=int, default=3, help="replays of each contender, taking turns"
    )
    args = parser.parse_args(argv)
    if args.tasks < 1:
        parser.error("--tasks must be at least 1")
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    if args.plot and not matplotlib_available():
        # Checked before the replay, which takes minutes: the plot is the last step.
        parser.error("--plot needs matplotlib, which is not installed (pip install '.[bench]')")
    sessions = [s for family in CODING_FAMILIES for s in discover(args.traces, only=family)]
    stitched = stitch(pick_tasks(sessions, args.tasks), args.tokens)
    print(
        f"replaying {len(stitched.calls):,} calls ({stitched.raw_tokens:,} tokens)",
        file=sys.stderr,
        flush=True,
    )
    specs = contenders()
    replays = replay_in_turns(specs, stitched, args.budget, args.repeats)
    small = None
    if args.small_budget:
        print(f"and at a {args.small_budget:,}-token budget", file=sys.stderr, flush=True)
        small = (
            args.small_budget,
            *replay_in_turns(specs[:1], stitched, args.small_budget, args.repeats),
        )
    print(report(stitched, args.budget, replays, small))
    if args.plot:
        plot(stitched, args.budget, [r.fastest for r in replays], args.plot)
    if args.json:
        figures = {
            "tasks": stitched.tasks,
            "rounds": stitched.rounds,
            "events": len(stitched.events),
            "calls": len(stitched.calls),
            "raw_tokens": stitched.raw_tokens,
            "budget": args.budget,
            "contenders": [_figures(r) for r in replays],
            "small_budget": None
            if small is None
            else {"budget": small[0], "contender": _figures(small[1])},
            "targets": verdicts(
                [r.fastest for r in replays],
                None if small is None else (small[0], small[1].fastest),
            ),
        }
        args.json.write_text(json.dumps(figures, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
