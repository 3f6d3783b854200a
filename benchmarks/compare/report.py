"""Markdown tables of the comparison, and the issue's targets judged on the numbers."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from benchmarks.compare.compaction import CompactionRow
from benchmarks.compare.fidelity import probe_recall
from benchmarks.compare.hotspots import Hotspot
from benchmarks.compare.probes import PROBE_KINDS
from benchmarks.compare.runner import Run
from benchmarks.compare.stats import Summary, kind_shares, session_retention, summarize


def share(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def millis(ns: int) -> str:
    return f"{ns / 1e6:,.1f} ms" if ns < 1e10 else f"{ns / 1e9:,.1f} s"


def size(value: int | None) -> str:
    if value is None:
        return "n/a"
    return f"{value / 1e6:.1f} MB" if value >= 1e6 else f"{value / 1e3:.0f} kB"


def summary_table(runs: Sequence[Run], names: Sequence[str], budget_label: str) -> str:
    """One row per contender at one budget."""
    out = [
        "| contender | calls | refused | over budget | invalid: ours / SDK | sent / raw "
        "| fill (compacted) | retention | within budget | prefix stability | engine time "
        "| x floor | per call | peak memory (max / median) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name in names:
        s = summarize(runs, name, budget_label)
        if not s.calls:
            continue
        per_call = s.engine_ns / s.calls
        out.append(
            f"| {name} | {s.calls:,} | {s.refused:,} | {s.over_budget:,} "
            f"| {s.invalid_ours:,} / {s.invalid_sdk:,} | {share(s.sent_share, 2)} "
            f"| {share(s.fill, 2)} | {share(s.retention)} | {share(s.retention_within)} "
            f"| {share(s.prefix_stability, 2)} | {millis(s.engine_ns)} "
            f"| {share(s.time_ratio, 1)} | {per_call / 1e3:,.0f} us "
            f"| {size(s.peak_max)} / {size(s.peak_median)} |"
        )
    return "\n".join(out)


@dataclass(frozen=True)
class TimeSplit:
    """One contender's engine time over some runs, split into the tokenizer and the rest."""

    engine_ns: int
    feed_ns: int
    """The part of `engine_ns` spent taking events."""
    tokenize_ns: int
    feed_tokenize_ns: int
    """The part of `tokenize_ns` spent taking events."""
    tokenize_chars: int
    floor_ns: int
    floor_chars: int

    def _over_floor(self, ns: int) -> float:
        return ns / self.floor_ns if self.floor_ns else 0.0

    @property
    def engine(self) -> float:
        return self._over_floor(self.engine_ns)

    @property
    def feed(self) -> float:
        """Taking the events, over the floor."""
        return self._over_floor(self.feed_ns)

    @property
    def answer(self) -> float:
        """Answering the calls (triggers, compaction, render), over the floor."""
        return self._over_floor(self.engine_ns - self.feed_ns)

    @property
    def tokenizer(self) -> float:
        return self._over_floor(self.tokenize_ns)

    @property
    def feed_tokenizer(self) -> float:
        """The tokenizer while taking the events, over the floor."""
        return self._over_floor(self.feed_tokenize_ns)

    @property
    def rest(self) -> float:
        return self.engine - self.tokenizer

    @property
    def text(self) -> float:
        """Characters tokenized, over the floor's."""
        return self.tokenize_chars / self.floor_chars if self.floor_chars else 0.0

    @property
    def per_char(self) -> float | None:
        """The tokenizer's cost per character, over the floor's; `None` with no text."""
        if not self.tokenize_chars or not self.floor_ns or not self.floor_chars:
            return None
        return (self.tokenize_ns / self.tokenize_chars) / (self.floor_ns / self.floor_chars)


def time_split(runs: Sequence[Run], name: str, budget_label: str | None = None) -> TimeSplit:
    """`name`'s time split over its runs at `budget_label` (every budget when `None`)."""
    chosen = [
        r
        for r in runs
        if r.contender == name and (budget_label is None or r.budget_label == budget_label)
    ]
    return TimeSplit(
        engine_ns=sum(r.engine_ns for r in chosen),
        feed_ns=sum(r.feed_ns for r in chosen),
        tokenize_ns=sum(r.tokenize_ns for r in chosen),
        feed_tokenize_ns=sum(r.feed_tokenize_ns for r in chosen),
        tokenize_chars=sum(r.tokenize_chars for r in chosen),
        floor_ns=sum(r.floor_ns for r in chosen),
        floor_chars=sum(r.floor_chars for r in chosen),
    )


def call_times(runs: Sequence[Run], name: str, budget_label: str) -> tuple[int, int, int]:
    """(median, 99th percentile, max) engine time of one call of `name`, in ns.

    A call's time is the events fed since the previous call and the request itself.
    """
    times = sorted(
        row.time_ns
        for r in runs
        if r.contender == name and r.budget_label == budget_label
        for row in r.rows
    )
    if not times:
        return 0, 0, 0
    p99 = times[min(len(times) - 1, math.ceil(0.99 * len(times)) - 1)]
    return int(statistics.median(times)), p99, times[-1]


def _micros(ns: int) -> str:
    return f"{ns / 1e3:,.0f} us" if ns < 1e6 else f"{ns / 1e6:,.1f} ms"


def time_table(runs: Sequence[Run], names: Sequence[str], budgets: Sequence[str]) -> str:
    """Per contender and budget: engine time, the tokenizer's part and the rest, x floor,
    and how long one call takes."""
    out = [
        "| contender | budget | engine time x floor | tokenizer x floor | text tokenized "
        "/ floor's | tokenizer cost per character / floor's | the rest x floor "
        "| one call: median / p99 / max |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name in names:
        for label in budgets:
            t = time_split(runs, name, label)
            if not t.floor_ns:
                continue
            median, p99, worst = call_times(runs, name, label)
            out.append(
                f"| {name} | {label} | {t.engine:.1f} | {t.tokenizer:.2f} | {t.text:.2f} "
                f"| {share(t.per_char, 2)} | {t.rest:.2f} "
                f"| {_micros(median)} / {_micros(p99)} / {_micros(worst)} |"
            )
    return "\n".join(out)


def family_table(
    runs: Sequence[Run], names: Sequence[str], families: Sequence[str], budget_label: str
) -> str:
    """Within-budget retention (and refused calls) per contender and session family."""
    out = [
        "| contender | " + " | ".join(families) + " |",
        "|---|" + "---:|" * len(families),
    ]
    for name in names:
        cells = []
        for family in families:
            s = summarize([r for r in runs if r.family == family], name, budget_label)
            refused = f" ({s.refused} refused)" if s.refused else ""
            cells.append(f"{share(s.retention_within, 2)}{refused}" if s.calls else "n/a")
        out.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def kinds_table(runs: Sequence[Run], names: Sequence[str], budget_label: str) -> str:
    """Per contender, the share of each kind of expected entity kept within budget."""
    out = [
        "| contender | from user turns | from tool errors | gold facts (tau) |",
        "|---|---:|---:|---:|",
    ]
    for name in names:
        cells = " | ".join(share(v) for v in kind_shares(runs, name, budget_label))
        out.append(f"| {name} | {cells} |")
    return "\n".join(out)


def hotspot_table(spots: Sequence[Hotspot]) -> str:
    out = ["| function | in it and below | in its own body |", "|---|---:|---:|"]
    out += [f"| `{h.function}` | {h.inclusive:.0%} | {h.own:.0%} |" for h in spots]
    return "\n".join(out)


def rules_table(runs: Sequence[Run], names: Sequence[str]) -> str:
    """Per contender, every rule of our validator its requests broke, with the call count."""
    out = ["| contender | calls breaking each rule (every budget) |", "|---|---|"]
    for name in names:
        counts: dict[str, int] = {}
        for run in runs:
            if run.contender == name:
                for row in run.rows:
                    for rule in row.rules:
                        counts[rule] = counts.get(rule, 0) + 1
        listed = ", ".join(f"`{rule}` {n:,}" for rule, n in sorted(counts.items())) or "none"
        out.append(f"| {name} | {listed} |")
    return "\n".join(out)


def compaction_table(rows: Sequence[CompactionRow]) -> str:
    out = [
        "| session | at event | span events | watched entities | kept: Claude Code / ours "
        "| every entity of the span | kept: Claude Code / ours | tokens: Claude Code / ours |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        out.append(
            f"| {r.session} | {r.at_event} | {r.span_events} | {r.watched} "
            f"| {r.theirs_watched} / {r.ours_watched} | {r.every:,} "
            f"| {r.theirs_every} / {r.ours_every} | {r.theirs_tokens:,} / {r.ours_tokens:,} |"
        )
    return "\n".join(out)


@dataclass(frozen=True)
class Verdict:
    """One target for one profile."""

    target: str
    budget: str
    profile: str
    met: bool
    detail: str


def _best_peer(summaries: Sequence[Summary]) -> Summary | None:
    scored = [s for s in summaries if s.retention_within is not None]
    return max(scored, key=lambda s: s.retention_within or 0.0) if scored else None


def judge(
    runs: Sequence[Run], ours: Sequence[str], peers: Sequence[str], budgets: Sequence[str]
) -> list[Verdict]:
    """Every target of the issue for every profile of ours."""
    verdicts: list[Verdict] = []
    for name in ours:
        every = [summarize(runs, name, label) for label in budgets]
        calls = sum(s.calls for s in every)
        bad = sum(s.invalid_ours + s.invalid_sdk for s in every)
        verdicts.append(
            Verdict("zero validity errors", "all", name, bad == 0, f"{bad} of {calls:,} calls")
        )
        for s in every:
            best = _best_peer([summarize(runs, peer, s.budget_label) for peer in peers])
            mine = s.retention_within or 0.0
            if best is not None:
                theirs = best.retention_within or 0.0
                verdicts.append(
                    Verdict(
                        "retention >= every peer",
                        s.budget_label,
                        name,
                        mine >= theirs,
                        f"{mine:.3f} vs {theirs:.3f} ({best.contender})",
                    )
                )
            verdicts.append(_probes_verdict(runs, name, peers, s.budget_label))
            verdicts.append(_fill_verdict(s))
            if s.budget_label == "50%":
                verdicts.append(
                    Verdict("retention > 0.95", "50%", name, mine > 0.95, f"{mine:.3f}")
                )
                stable = s.prefix_stability or 0.0
                verdicts.append(
                    Verdict("prefix stability >= 0.9", "50%", name, stable >= 0.9, f"{stable:.2f}")
                )
    return verdicts


#: The least mean share of the budget a compacted call should send.
FILL_TARGET = 0.8


def _fill_verdict(s: Summary) -> Verdict:
    """Fill at the compacted calls at or above `FILL_TARGET`; met when none compacted
    (every request was the whole history)."""
    target = f"fill >= {FILL_TARGET}"
    if s.fill is None:
        return Verdict(target, s.budget_label, s.contender, True, "no call compacted")
    return Verdict(target, s.budget_label, s.contender, s.fill >= FILL_TARGET, f"{s.fill:.3f}")


def _probe_shares(runs: Sequence[Run], name: str, label: str) -> dict[str, float]:
    """Each probe kind's share passed by `name` at `label` (kinds never asked left out)."""
    recall = probe_recall(runs, name, label)
    return {
        kind: passed / active
        for kind, (active, passed, _) in zip(PROBE_KINDS, recall, strict=True)
        if active
    }


def _probes_verdict(runs: Sequence[Run], name: str, peers: Sequence[str], label: str) -> Verdict:
    """Every probe kind at or above the best peer's share of it at `label`.

    The detail names each kind that trails, with the peer that leads it; met, the number
    of kinds judged.
    """
    mine = _probe_shares(runs, name, label)
    theirs = [(peer, _probe_shares(runs, peer, label)) for peer in peers]
    behind = []
    for kind, share in mine.items():
        leader = max(
            ((peer, shares[kind]) for peer, shares in theirs if kind in shares),
            key=lambda item: item[1],
            default=None,
        )
        if leader is not None and share < leader[1]:
            behind.append(f"`{kind}` {share:.3f} vs {leader[1]:.3f} ({leader[0]})")
    detail = "; ".join(behind) if behind else f"{len(mine)} kinds"
    return Verdict("every probe kind >= the best peer", label, name, not behind, detail)


def verdict_table(verdicts: Sequence[Verdict], ours: Sequence[str]) -> str:
    keys: list[tuple[str, str]] = []
    for v in verdicts:
        if (v.target, v.budget) not in keys:
            keys.append((v.target, v.budget))
    cells = {(v.target, v.budget, v.profile): v for v in verdicts}
    out = [
        "| target | budget | " + " | ".join(ours) + " |",
        "|---|---|" + "---|" * len(ours),
    ]
    for target, budget in keys:
        row = []
        for name in ours:
            cell = cells.get((target, budget, name))
            if cell is None:
                row.append("")
            else:
                row.append(f"{'met' if cell.met else '**not met**'}: {cell.detail}")
        out.append(f"| {target} | {budget} | " + " | ".join(row) + " |")
    return "\n".join(out)


def worst_sessions(runs: Sequence[Run], name: str, budget_label: str, count: int = 5) -> str:
    """The sessions where `name` kept least, with what happened at their calls."""
    lines = []
    for run, value in session_retention(runs, name, budget_label)[:count]:
        refused = sum(row.refused for row in run.rows)
        lines.append(
            f"- {run.family}/{run.session}: {value:.2f} over {len(run.rows)} calls "
            f"({refused} refused, budget {run.budget:,} tokens)"
        )
    return "\n".join(lines)
