"""One PNG per session family: the sawtooth of one session, and retention per budget."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from benchmarks.compare.runner import Run
from benchmarks.compare.stats import summarize


def matplotlib_available() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def _showcase(runs: Sequence[Run], family: str, budget_label: str) -> list[Run]:
    """The runs of the family's session with the most calls, at `budget_label`."""
    candidates = [r for r in runs if r.family == family and r.budget_label == budget_label]
    if not candidates:
        return []
    longest = max(candidates, key=lambda r: (len(r.rows), r.session)).session
    return [r for r in candidates if r.session == longest]


def plot_family(
    runs: Sequence[Run],
    family: str,
    names: Sequence[str],
    budgets: Sequence[str],
    path: Path,
    *,
    sawtooth_budget: str,
) -> str | None:
    """Write the family's PNG; return the caption (`None` when there is nothing to draw)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    showcase = _showcase(runs, family, sawtooth_budget)
    if not showcase:
        return None
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.2))
    first = showcase[0]
    left.plot([r.raw_tokens for r in first.rows], color="black", linestyle=":", label="raw")
    left.axhline(first.budget, color="grey", linewidth=0.8, label="budget")
    for run in sorted(showcase, key=lambda r: names.index(r.contender)):
        tokens = [float("nan") if r.tokens is None else r.tokens for r in run.rows]
        style = "-" if run.contender.startswith("context-graph") else "--"
        color = f"C{names.index(run.contender) % 10}"
        left.plot(tokens, style, color=color, linewidth=1, label=run.contender)
    left.set_xlabel("model call")
    left.set_ylabel("tokens sent (gap: refused)")
    left.set_title(f"{first.session} at {sawtooth_budget}", fontsize=9)
    left.legend(fontsize=6)
    for index, name in enumerate(names):
        values = [summarize(runs_of(runs, family), name, b).retention_within for b in budgets]
        style = "o-" if name.startswith("context-graph") else "s--"
        right.plot(
            list(budgets),
            [v if v is not None else float("nan") for v in values],
            style,
            color=f"C{index % 10}",
            linewidth=1,
            label=name,
        )
    right.set_ylim(0, 1.02)
    right.set_xlabel("budget")
    right.set_ylabel("retention within budget")
    right.set_title(f"{family}: every session", fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return (
        f"{family}: tokens sent at each call of {first.session} (budget {sawtooth_budget}, "
        f"{first.budget:,} tokens), and within-budget retention at each budget"
    )


def runs_of(runs: Sequence[Run], family: str) -> list[Run]:
    return [r for r in runs if r.family == family]
