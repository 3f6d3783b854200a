"""Claude Code's own compaction, recorded in its sessions, against ours at the same size.

For every `Compaction` event (Claude Code's summary, written by its model when the
context ran out), the span it replaced is the events since the previous compaction. Two
reference sets are taken from that span: the entities the retention measure watches
(user turns and tool errors, see `facts`), and every critical entity of every event.
Claude Code's summary and ours, `ExtractiveSummarizer(max_tokens=<the size of Claude
Code's summary>)` over the same span, are each checked for which of them they contain
verbatim.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from benchmarks.compare.facts import event_text, watched_entities
from benchmarks.compare.sessions import Session
from context_graph import Compaction, ContextGraph, SummaryNode, TiktokenCounter
from context_graph.entities import critical_entities
from processors.summarize import ExtractiveSummarizer


@dataclass(frozen=True)
class CompactionRow:
    """One recorded compaction and our summary of the same span."""

    session: str
    at_event: int
    span_events: int
    watched: int
    """Entities of the span's user turns and tool errors."""
    every: int
    """Every critical entity of the span."""
    theirs_tokens: int
    theirs_watched: int
    theirs_every: int
    ours_tokens: int
    ours_watched: int
    ours_every: int


def _kept(entities: Sequence[str], text: str) -> int:
    return sum(1 for entity in entities if entity in text)


def compare_compactions(
    sessions: Sequence[Session], counter: TiktokenCounter
) -> list[CompactionRow]:
    """One row per compaction recorded in `sessions`."""
    rows: list[CompactionRow] = []
    for session in sessions:
        start = 0
        for index, event in enumerate(session.events):
            if not isinstance(event, Compaction):
                continue
            rows.append(_compare(session, start, index, counter))
            start = index + 1
    return rows


def _compare(session: Session, start: int, index: int, counter: TiktokenCounter) -> CompactionRow:
    span = session.events[start:index]
    watched = list(dict.fromkeys(e for event in span for e in watched_entities(event)))
    every = critical_entities("\n".join(event_text(event) for event in span))
    theirs = event_text(session.events[index])
    theirs_tokens = counter.count(theirs)
    graph = ContextGraph(counter=counter)
    graph.ingest(session.events[:index])
    nodes = list(graph)
    summaries = [i for i, node in enumerate(nodes) if isinstance(node, SummaryNode)]
    if summaries:
        nodes = nodes[summaries[-1] + 1 :]
    summarizer = ExtractiveSummarizer(max_tokens=max(64, theirs_tokens), counter=counter)
    ours = summarizer.brief(nodes)
    return CompactionRow(
        session=session.label,
        at_event=index,
        span_events=len(span),
        watched=len(watched),
        every=len(every),
        theirs_tokens=theirs_tokens,
        theirs_watched=_kept(watched, theirs),
        theirs_every=_kept(every, theirs),
        ours_tokens=counter.count(ours),
        ours_watched=_kept(watched, ours),
        ours_every=_kept(every, ours),
    )
