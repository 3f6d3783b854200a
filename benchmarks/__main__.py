"""`python -m benchmarks`: measure everything and write docs/benchmarks.md.

Replays every session in ../shared/traces at every model call for context-graph (each
built-in profile) and the peers that are installed (LangChain `trim_messages`, AutoGen's
model contexts, OpenHands-style observation masking), compares Claude Code's recorded
compactions with ours, reruns the ingest, render, processor and distiller benchmarks,
and writes the page with its plots (docs/img/). Progress goes to stderr.

    python -m benchmarks                     # everything (about half an hour on 2 cores)
    python -m benchmarks --fast --out /tmp/b.md   # a few small sessions, one budget
    python -m benchmarks --only tau_bench_gpt4o_airline
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.compare.compaction import compare_compactions
from benchmarks.compare.contenders import ContenderSpec, context_graph_specs
from benchmarks.compare.hotspots import hotspots
from benchmarks.compare.ideal_drop import IDEAL_DROP_SHARES, ideal_drop_spec
from benchmarks.compare.legacy import (
    ingest_section,
    long_session_section,
    processors_section,
    render_section,
)
from benchmarks.compare.openhands_peer import openhands_specs
from benchmarks.compare.page import Measured, build_page
from benchmarks.compare.planted_section import planted_section
from benchmarks.compare.plots import matplotlib_available, plot_dollars, plot_family
from benchmarks.compare.proxy_section import proxy_section
from benchmarks.compare.runner import replay_all, setup
from benchmarks.compare.sessions import BUDGET_LABELS, Session, discover, fast_selection
from context_graph import TiktokenCounter

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TRACES = ROOT.parent / "shared" / "traces"
DEFAULT_OUT = ROOT / "docs" / "benchmarks.md"


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def available_specs() -> tuple[list[ContenderSpec], list[str]]:
    """Every contender whose library is installed, and a note for each one skipped."""
    from benchmarks.compare.autogen_peer import autogen_specs
    from benchmarks.compare.langchain_peer import langchain_specs

    specs = context_graph_specs()
    notes: list[str] = []
    for label, package, load in (
        ("LangChain trim_messages", "langchain-core", langchain_specs),
        ("AutoGen model contexts", "autogen-core", autogen_specs),
    ):
        try:
            specs += load()
        except ImportError:
            notes.append(
                f"{label} skipped: `{package}` is not installed "
                "(`pip install '.[bench]'` in the checkout)."
            )
    return specs + openhands_specs(), notes


def _plots(measured: Measured, out: Path) -> None:
    if not matplotlib_available():
        measured.notes.append("Plots skipped: matplotlib is not installed.")
        return
    names = [spec.name for spec in measured.specs]
    sawtooth = "50%" if "50%" in measured.budgets else measured.budgets[0]
    for family in sorted({s.family for s in measured.sessions}):
        image = out.parent / "img" / f"compare_{family}.png"
        caption = plot_family(
            measured.runs, family, names, measured.budgets, image, sawtooth_budget=sawtooth
        )
        if caption is not None:
            measured.plots.append((f"img/{image.name}", caption))
    image = out.parent / "img" / "dollars.png"
    caption = plot_dollars(measured.runs, names, measured.budgets, image)
    if caption is not None:
        measured.section_plots["dollars"] = (f"img/{image.name}", caption)


def _profile(measured: Measured) -> None:
    """Profile one replay of the largest session for each of our profiles."""
    largest = max(measured.sessions, key=lambda s: (len(s.events), s.label))
    label = "50%" if "50%" in measured.budgets else measured.budgets[0]
    budget = largest.budgets((label,))[label]
    counter = TiktokenCounter()
    ctx = setup(largest, counter)
    for spec in measured.specs:
        if spec.ours:
            progress(f"profiling {spec.name} on {largest.label}")
            measured.hotspots[spec.name] = hotspots(spec, ctx, label, budget, counter)
    measured.hotspot_run = f"{largest.family}/{largest.label} at {label} ({budget:,} tokens)"


def _tail(traces: Path, out: Path, judged: list[str]) -> tuple[list[str], list[str]]:
    """The other benchmarks' sections, and a note for each one that failed.

    The targets those sections judge are added to `judged` (rows of the targets table).

    A section that fails is reported in its place; the page is still written, so that a
    late failure does not throw away the comparison measured before it.
    """
    image = out.parent / "img" / "render_time.png"
    long_image = out.parent / "img" / "long_session.png"
    sections: list[Callable[[], str]] = [
        lambda: ingest_section(traces, progress),
        lambda: render_section(traces, image, f"img/{image.name}", progress),
        lambda: long_session_section(
            traces, long_image, f"img/{long_image.name}", progress, judged
        ),
        lambda: processors_section(traces, progress),
        lambda: planted_section(progress, judged),
        lambda: proxy_section(progress),
    ]
    written: list[str] = []
    failed: list[str] = []
    for section in sections:
        try:
            written.append(section())
        except Exception as exc:
            note = f"a section of the page failed: {type(exc).__name__}: {exc}"
            progress(note)
            failed.append(note)
    return written, failed


def _sessions(traces: Path, *, fast: bool, only: str | None) -> list[Session]:
    sessions = discover(traces, only=only) if traces.is_dir() else []
    if not sessions:
        where = f"family {only!r} under {traces}" if only else str(traces)
        msg = f"no sessions found in {where}; pass --traces DIR (see ../shared/traces/README.md)"
        raise SystemExit(msg)
    return fast_selection(sessions) if fast else sessions


def collect(traces: Path, out: Path, *, fast: bool, only: str | None = None) -> Measured:
    """Replay the sessions, compare the compactions, draw the plots (next to `out`)."""
    started = time.perf_counter()
    sessions = _sessions(traces, fast=fast, only=only)
    budgets = ("50%",) if fast else BUDGET_LABELS
    specs, notes = available_specs()
    progress(f"{len(sessions)} sessions, {len(specs)} contenders, budgets {', '.join(budgets)}")
    runs = replay_all(specs, sessions, budgets, memory=True, progress=progress)
    bound = tuple(b for b in budgets if b == "50%")
    progress(f"the ideal drop compactor at {', '.join(bound) or 'no budget'}")
    drops = [ideal_drop_spec(share) for share in IDEAL_DROP_SHARES]
    ideal = replay_all(drops, sessions, bound, memory=False, progress=lambda _: None)
    compacted = [s for s in sessions if s.has_compaction]
    measured = Measured(
        specs=specs,
        sessions=sessions,
        budgets=budgets,
        runs=runs,
        ideal_drop=ideal,
        compactions=compare_compactions(compacted, TiktokenCounter()),
        plots=[],
        notes=notes,
        fast=fast,
    )
    _plots(measured, out)
    _profile(measured)
    measured.seconds = time.perf_counter() - started
    return measured


def write(measured: Measured, out: Path, tail: list[str]) -> None:
    """Write the page to `out`."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(build_page(measured, tail), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=Path, default=DEFAULT_TRACES)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--fast", action="store_true", help="a few small sessions, one budget")
    parser.add_argument("--only", metavar="FAMILY", help="only this session family")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    measured = collect(args.traces, args.out, fast=args.fast, only=args.only)
    tail: list[str] = []
    failed: list[str] = []
    if args.fast or args.only:
        measured.notes.append(
            "The ingest, render and processor benchmarks run only in the full run "
            "(`python -m benchmarks`)."
        )
    else:
        tail, failed = _tail(args.traces, args.out, measured.later_targets)
        measured.notes.extend(failed)
    measured.seconds = time.perf_counter() - started
    write(measured, args.out, tail)
    progress(f"wrote {args.out} in {measured.seconds:.0f}s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
