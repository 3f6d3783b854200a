"""One PNG per session family: the sawtooth of one session, and retention per budget."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from benchmarks.compare.dollars import PRICES, cost_of
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


def plot_dollars(
    runs: Sequence[Run], names: Sequence[str], budgets: Sequence[str], path: Path
) -> str | None:
    """Write one panel per budget: each contender's Anthropic input dollars (prompt caching
    priced as in the dollars section) against its within-budget retention. Return the
    caption (`None` when no contender has a run to price)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    price = PRICES[0]
    points: dict[str, list[tuple[int, float, float]]] = {label: [] for label in budgets}
    for label in budgets:
        for index, name in enumerate(names):
            chosen = [
                r for r in runs if r.contender == name and r.budget_label == label and not r.error
            ]
            retention = summarize(runs, name, label).retention_within
            if not chosen or retention is None:
                continue
            dollars = sum(cost_of(run.rows, price).dollars for run in chosen)
            points[label].append((index, dollars, retention))
    if not any(points.values()):
        return None
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    drawn = [label for label in budgets if points[label]]
    width = 4.0 * len(drawn) + 2.6  # the legend takes the right-hand 2.6 inches
    fig, axes = plt.subplots(1, len(drawn), figsize=(width, 4.2), squeeze=False)
    for ax, label in zip(axes[0], drawn, strict=True):
        for index, dollars, retention in points[label]:
            ours = names[index].startswith("context-graph")
            ax.scatter(
                dollars,
                retention,
                marker="o" if ours else "s",
                color=f"C{index % 10}",
                label=names[index],
                zorder=3,
            )
        ax.set_xscale("log")
        ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"${value:,.3g}"))
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_ylim(0, 1.02)
        ax.set_xlabel(f"{price.provider} input dollars, all sessions (log)")
        ax.set_ylabel("retention within budget")
        ax.set_title(f"budget {label}", fontsize=9)
        ax.grid(alpha=0.3)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=7, loc="center right")
    fig.tight_layout(rect=(0, 0, 1 - 2.6 / width, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return (
        f"Input dollars at {price.provider}'s prompt-caching prices ({price.model}) against "
        "within-budget retention, every contender at each budget: up and to the left is better"
    )
