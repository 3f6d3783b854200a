"""The sessions the comparison replays, and the budgets each is replayed at.

Every file under the traces folder is loaded with `load_sessions`. A Claude Code session
file also yields its sub-agent sessions (the importer reads `<session>/subagents/`), so
the `subagents/` folders are not read a second time. Sub-agent sessions are replayed like
main sessions (they are model sessions of their own) and are marked as such.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from context_graph import AgentEvent, Compaction, ContextGraph, TiktokenCounter, UserTurn
from context_graph.importers import load_sessions
from context_graph.render import Renderer
from context_graph.testing import strict_trace
from orchestrator.replay import model_call_points

SUFFIXES = frozenset({".json", ".jsonl", ".traj"})
NOT_SESSIONS = frozenset({"MANIFEST.json", "metadata.json"})
#: Budgets as a share of each session's final raw size, and one fixed budget.
RATIOS: dict[str, float] = {"25%": 0.25, "50%": 0.5}
FIXED: dict[str, int] = {"8k": 8_000}
BUDGET_LABELS: tuple[str, ...] = ("25%", "50%", "8k")


@dataclass(frozen=True)
class Session:
    """One recorded session, ready to replay."""

    family: str
    """The top folder under the traces (`claude_code`, `tau_bench_gpt4o_airline`, ...)."""
    label: str
    """A short name that tells it apart in tables."""
    source: str
    """The file it came from, relative to the traces folder."""
    events: list[AgentEvent]
    facts: list[str]
    """Gold facts recorded by the source (tau-bench actions and outputs)."""
    subagent: bool
    raw_tokens: int
    """The final raw size: the whole session rendered (OpenAI format) with no budget."""
    calls: frozenset[int] = field(default_factory=frozenset)
    """How many events had been fed at each model call (`model_call_points`)."""

    @classmethod
    def made(
        cls, events: Sequence[AgentEvent], facts: Sequence[str] = (), raw_tokens: int = 2_000
    ) -> Session:
        """A session built in code (the tests' small sessions), called where it would be."""
        return cls(
            family="made",
            label="made",
            source="made.jsonl",
            events=list(events),
            facts=list(facts),
            subagent=False,
            raw_tokens=raw_tokens,
            calls=frozenset(model_call_points(events)),
        )

    @property
    def has_compaction(self) -> bool:
        return any(isinstance(e, Compaction) for e in self.events)

    def budgets(self, labels: Sequence[str] = BUDGET_LABELS) -> dict[str, int]:
        """The token budget for each label."""
        out: dict[str, int] = {}
        for label in labels:
            if label in RATIOS:
                out[label] = max(1, int(self.raw_tokens * RATIOS[label]))
            elif label in FIXED:
                out[label] = FIXED[label]
            else:
                msg = f"unknown budget {label!r}; use one of {', '.join(BUDGET_LABELS)}"
                raise ValueError(msg)
        return out


#: Shared trace families no importer reads yet; each family joins the comparison when its
#: importer lands (none is left out today).
UNREAD_FAMILIES: frozenset[str] = frozenset()


def session_files(traces: Path) -> list[Path]:
    """Every session file under `traces`, sub-agent folders aside (read with their parent)."""
    return [
        path
        for path in sorted(traces.rglob("*"))
        if path.is_file()
        and path.suffix in SUFFIXES
        and path.name not in NOT_SESSIONS
        and "subagents" not in path.relative_to(traces).parts
        and path.relative_to(traces).parts[0] not in UNREAD_FAMILIES
    ]


def _label(path: Path, name: str, several: bool) -> str:
    stem = path.name.split(".")[0]
    base = name if several or len(stem) > 40 else stem
    return base if len(base) <= 40 else base[:37] + "..."


def _raw_tokens(events: Sequence[AgentEvent], counter: TiktokenCounter) -> int:
    """The final raw size of `events`: rendered whole (OpenAI format), no budget."""
    graph = ContextGraph(counter=counter)
    graph.ingest(events)
    return Renderer(format="openai").render(graph).tokens


def continued_by_request(session: Session, request: str) -> Session | None:
    """`session` with `request` as a user turn right after each imported compaction.

    A session continued from another tool's compaction with a request since (Claude
    Code's `/compact`, then the user's next message) is not among the recorded ones: this
    makes one of each recorded continuation, with the label marked. `None` for a session
    that holds no compaction.
    """
    if not session.has_compaction:
        return None
    events: list[AgentEvent] = []
    for event in session.events:
        events.append(event)
        if isinstance(event, Compaction):
            events.append(UserTurn(content=request))
    return Session(
        family=session.family,
        label=f"{session.label} +request",
        source=session.source,
        events=events,
        facts=list(session.facts),
        subagent=session.subagent,
        raw_tokens=_raw_tokens(events, TiktokenCounter()),
        calls=frozenset(model_call_points(events)),
    )


def discover(traces: Path, *, only: str | None = None) -> list[Session]:
    """Load every session under `traces` (or only those of the family `only`)."""
    counter = TiktokenCounter()
    found: list[Session] = []
    for path in session_files(traces):
        family = path.relative_to(traces).parts[0]
        if only is not None and family != only:
            continue
        imported = load_sessions(path, strict=strict_trace(path))
        for session in imported:
            if not session.events:
                continue
            label = _label(path, session.name, len(imported) > 1)
            taken = sum(1 for s in found if s.label == label or s.label.startswith(f"{label} ("))
            found.append(
                Session(
                    family=family,
                    label=f"{label} ({taken + 1})" if taken else label,
                    source=path.relative_to(traces).as_posix(),
                    events=list(session.events),
                    facts=list(session.facts),
                    subagent=bool(session.meta.get("is_sidechain")),
                    raw_tokens=_raw_tokens(session.events, counter),
                    calls=frozenset(model_call_points(session.events)),
                )
            )
    return found


def fast_selection(sessions: Sequence[Session]) -> list[Session]:
    """A few small sessions: per family the smallest main one with at least 3 model calls,
    plus the smallest one that holds a recorded compaction."""
    chosen: dict[str, Session] = {}
    for session in sorted(sessions, key=lambda s: (len(s.events), s.source, s.label)):
        if session.subagent or len(session.calls) < 3:
            continue
        chosen.setdefault(session.family, session)
    picked = list(chosen.values())
    compacted = [s for s in sessions if s.has_compaction]
    if compacted:
        smallest = min(compacted, key=lambda s: len(s.events))
        if all(s is not smallest for s in picked):
            picked.append(smallest)
    return picked
