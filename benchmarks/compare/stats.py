"""Figures over runs: one `Summary` per contender and budget (and family, when asked).

Retention at a call is kept / reference (the call is left out when its reference set is
empty). Two variants are reported:

- `retention`: a refused call keeps nothing (0); an answered call is scored on what it
  sent, whatever its size;
- `retention_within`: also 0 for a request over the budget, since a provider with that
  window would not accept it. The targets are judged on this one ("at the same budget").

Prefix stability: the share of calls after the first whose request starts with the
previous request's messages (a refused call does not extend anything).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from benchmarks.compare.facts import KINDS
from benchmarks.compare.runner import CallRow, Run


@dataclass(frozen=True)
class Summary:
    """The figures of one contender at one budget, over a set of runs."""

    contender: str
    budget_label: str
    sessions: int
    calls: int
    refused: int
    over_budget: int
    invalid_ours: int
    """Calls whose request breaks a rule of our validator."""
    invalid_sdk: int
    """Calls whose request breaks the SDK's types (or is empty)."""
    tokens_sent: int
    tokens_raw: int
    """Raw size at the answered calls (what was sent is compared with this)."""
    retention: float | None
    retention_within: float | None
    retention_answered: float | None
    """Over answered calls only."""
    prefix_stability: float | None
    prefix_answered: float | None
    """Prefix stability over pairs of consecutive calls that were both answered."""
    fill: float | None
    """Tokens sent over the budget, averaged over the answered calls whose request is
    smaller than the history (compacted or cut): how much of the budget it used."""
    engine_ns: int
    floor_ns: int
    peak_max: int | None
    peak_median: int | None
    crashed: tuple[str, ...]
    """`session: error` for runs that stopped early."""

    @property
    def time_ratio(self) -> float | None:
        return self.engine_ns / self.floor_ns if self.floor_ns else None

    @property
    def sent_share(self) -> float | None:
        return self.tokens_sent / self.tokens_raw if self.tokens_raw else None


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _share(row: CallRow, *, within: bool) -> float:
    if row.refused or (within and row.over_budget):
        return 0.0
    return row.kept / row.reference


def summarize(runs: Iterable[Run], contender: str, budget_label: str) -> Summary:
    """The figures of `contender` at `budget_label` over `runs` (others are ignored)."""
    chosen = [r for r in runs if r.contender == contender and r.budget_label == budget_label]
    rows = [row for run in chosen for row in run.rows]
    scored = [row for row in rows if row.reference]
    answered = [row for row in rows if not row.refused]
    later = [row for run in chosen for row in run.rows[1:]]
    pairs = [
        now
        for run in chosen
        for before, now in zip(run.rows, run.rows[1:], strict=False)
        if not before.refused and not now.refused
    ]
    peaks = [run.peak_bytes for run in chosen if run.peak_bytes is not None]
    return Summary(
        contender=contender,
        budget_label=budget_label,
        sessions=len(chosen),
        calls=len(rows),
        refused=sum(row.refused for row in rows),
        over_budget=sum(row.over_budget for row in rows),
        invalid_ours=sum(row.our_errors > 0 for row in rows),
        invalid_sdk=sum(row.sdk_errors > 0 for row in rows),
        tokens_sent=sum(row.tokens or 0 for row in answered),
        tokens_raw=sum(row.raw_tokens for row in answered),
        retention=_mean([_share(row, within=False) for row in scored]),
        retention_within=_mean([_share(row, within=True) for row in scored]),
        retention_answered=_mean([row.kept / row.reference for row in scored if not row.refused]),
        prefix_stability=_mean([float(row.prefix_reused) for row in later]),
        prefix_answered=_mean([float(row.prefix_reused) for row in pairs]),
        fill=_mean(
            [
                row.tokens / run.budget
                for run in chosen
                for row in run.rows
                if row.tokens is not None and row.tokens < row.raw_tokens and run.budget
            ]
        ),
        engine_ns=sum(run.engine_ns for run in chosen),
        floor_ns=sum(run.floor_ns for run in chosen),
        peak_max=max(peaks) if peaks else None,
        peak_median=int(statistics.median(peaks)) if peaks else None,
        crashed=tuple(f"{run.session}: {run.error}" for run in chosen if run.error),
    )


def session_retention(
    runs: Iterable[Run], contender: str, budget_label: str
) -> list[tuple[Run, float]]:
    """Each session's within-budget retention for one contender, lowest first."""
    out: list[tuple[Run, float]] = []
    for run in runs:
        if run.contender != contender or run.budget_label != budget_label:
            continue
        scored = [row for row in run.rows if row.reference]
        if scored:
            out.append((run, sum(_share(r, within=True) for r in scored) / len(scored)))
    return sorted(out, key=lambda item: item[1])


def kind_shares(runs: Iterable[Run], contender: str, budget_label: str) -> list[float | None]:
    """Per kind of entity (`facts.KINDS`), the share kept within budget, pooled over calls."""
    totals = [[0, 0] for _ in KINDS]
    for run in runs:
        if run.contender != contender or run.budget_label != budget_label:
            continue
        for row in run.rows:
            for total, (reference, kept) in zip(totals, row.by_kind, strict=False):
                total[0] += reference
                total[1] += 0 if row.over_budget else kept
    return [kept / reference if reference else None for reference, kept in totals]


@dataclass(frozen=True)
class FitSplit:
    """Retention (within budget) at the calls where the whole history fitted, and not."""

    fit_calls: int
    fit_retention: float | None
    fit_lossy: int
    """Answered calls that lost an entity although everything would have fitted."""
    over_calls: int
    over_retention: float | None


def fit_split(runs: Iterable[Run], contender: str, budget_label: str) -> FitSplit:
    fit: list[CallRow] = []
    over: list[CallRow] = []
    for run in runs:
        if run.contender == contender and run.budget_label == budget_label:
            for row in run.rows:
                if row.reference:
                    (fit if row.raw_tokens <= run.budget else over).append(row)
    return FitSplit(
        fit_calls=len(fit),
        fit_retention=_mean([_share(row, within=True) for row in fit]),
        fit_lossy=sum(1 for row in fit if not row.refused and row.kept < row.reference),
        over_calls=len(over),
        over_retention=_mean([_share(row, within=True) for row in over]),
    )
