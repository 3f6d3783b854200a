"""Processors on real sessions: compression, entity retention, and cost per 1,000 tokens.

For every shared trace's main session, each processor is given every node it works on
(tool results, file reads, sub-agent results; the summarizer gets the first half of the
units) and its proposal is measured:

- compression: tokens after / tokens before, over the nodes it changed;
- retention: the share of critical entities (`context_graph.entities`) of the changed
  nodes that are still in their replacements;
- cost: processing time per 1,000 tokens of input it was given.

    python -m benchmarks.processors [--traces DIR]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from benchmarks.compare.sessions import session_files
from context_graph import ContextGraph
from context_graph.entities import critical_entities
from context_graph.graph.nodes import AnswerNode, Node
from context_graph.importers import load_sessions
from context_graph.testing import strict_trace
from processors import (
    Abstract,
    HistorySummarizer,
    ObservationMasker,
    ProcessorContext,
    Replace,
    ToolOutputTruncator,
)

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TRACES = ROOT.parent / "shared" / "traces"


@dataclass
class Tally:
    """Totals for one processor over every session."""

    name: str
    input_tokens: int = 0
    changed_before: int = 0
    changed_after: int = 0
    entities: int = 0
    kept: int = 0
    seconds: float = 0.0
    edits: int = 0

    def row(self) -> str:
        ratio = self.changed_after / self.changed_before if self.changed_before else 1.0
        retention = self.kept / self.entities if self.entities else 1.0
        cost = self.seconds * 1e3 / (self.input_tokens / 1000) if self.input_tokens else 0.0
        return (
            f"| {self.name} | {self.edits:,} | {self.changed_before:,} | {self.changed_after:,} "
            f"| {ratio:.2f} | {retention:.3f} | {cost:.2f} ms |"
        )


def _contenders() -> list[tuple[str, Any, Callable[[ContextGraph], Sequence[Node]]]]:
    from processors.distill import Distiller

    def answers(graph: ContextGraph) -> list[Node]:
        return [n for n in graph if isinstance(n, AnswerNode)]

    def first_half(graph: ContextGraph) -> list[Node]:
        units = [u for u in graph.units() if u.kind not in {"system", "note"}]
        half = units[: len(units) // 2]
        nodes = [graph[i] for u in half for i in u.node_ids]
        return [] if any(n.pinned for n in nodes) else nodes

    return [
        ("truncate (max 1,000 tokens)", ToolOutputTruncator(max_tokens=1000), answers),
        ("mask (keep 3 turns)", ObservationMasker(keep_turns=3), answers),
        ("distill light", Distiller(level="light"), answers),
        ("distill medium", Distiller(level="medium"), answers),
        ("distill heavy", Distiller(level="heavy"), answers),
        ("summarize (extractive)", HistorySummarizer(), first_half),
    ]


def _measure(tally: Tally, graph: ContextGraph, processor: Any, targets: Sequence[Node]) -> None:
    if not targets:
        return
    ctx = ProcessorContext.for_graph(graph)
    tally.input_tokens += sum(graph.tokens(n.id) for n in targets)
    start = time.perf_counter()
    proposal = anyio.run(processor.propose, targets, ctx)
    tally.seconds += time.perf_counter() - start
    for edit in proposal.edits:
        if isinstance(edit, Replace):
            originals, new = [graph[edit.target]], edit.replacement
        elif isinstance(edit, Abstract):
            originals, new = [graph[i] for i in edit.targets if i in graph], edit.summary
        else:
            continue
        tally.edits += 1
        tally.changed_before += sum(ctx.count(n) for n in originals)
        tally.changed_after += ctx.count(new)
        wanted = set(critical_entities("\n".join(n.text for n in originals)))
        tally.entities += len(wanted)
        tally.kept += sum(1 for entity in wanted if entity in new.text)


def run(traces: Path) -> list[Tally]:
    """Run every processor over every main session under `traces`."""
    contenders = _contenders()
    tallies = [Tally(name) for name, _, _ in contenders]
    for path in session_files(traces):
        graph = ContextGraph()
        graph.ingest(load_sessions(path, strict=strict_trace(path))[0].events)
        for tally, (_, processor, pick) in zip(tallies, contenders, strict=True):
            _measure(tally, graph, processor, pick(graph))
    return tallies


def report(tallies: list[Tally]) -> str:
    """A Markdown table."""
    head = [
        "| processor | edits | tokens before (changed nodes) | after | after / before "
        "| entities kept | time per 1,000 input tokens |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    return "\n".join(head + [t.row() for t in tallies])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=Path, default=DEFAULT_TRACES)
    args = parser.parse_args(argv)
    print(report(run(args.traces)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
