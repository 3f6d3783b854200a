"""The page's fidelity-probe section: recall by probe kind, budget and contender."""

from __future__ import annotations

from collections.abc import Sequence

from benchmarks.compare.probes import LIMIT, PROBE_KINDS
from benchmarks.compare.runner import Run

__all__ = ["probe_recall", "probe_section", "probe_table"]


def probe_recall(runs: Sequence[Run], name: str, label: str) -> list[tuple[int, int]]:
    """(active, passed) per probe kind, pooled over every answered call of `name` at `label`."""
    totals = [[0, 0] for _ in PROBE_KINDS]
    for run in runs:
        if run.contender != name or run.budget_label != label or run.error:
            continue
        for row in run.rows:
            for index, (active, passed) in enumerate(row.probed):
                totals[index][0] += active
                totals[index][1] += passed
    return [(active, passed) for active, passed in totals]


def probe_table(runs: Sequence[Run], names: Sequence[str], label: str) -> str:
    """One row per contender: the share of active probes that passed, per kind."""
    rows = [
        "| contender | " + " | ".join(f"`{kind}`" for kind in PROBE_KINDS) + " |",
        "|---|" + "---:|" * len(PROBE_KINDS),
    ]
    for name in names:
        cells = [
            f"{passed / active:.3f}" if active else "-"
            for active, passed in probe_recall(runs, name, label)
        ]
        rows.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def probe_section(runs: Sequence[Run], names: Sequence[str], budgets: Sequence[str]) -> list[str]:
    """The page's section: what a probe is, then a table per budget."""
    out = [
        "### Fidelity probes",
        "",
        "Beyond whether an entity is present: per session, deterministic questions of five "
        "kinds, each with the answer string a request must hold (`benchmarks/compare/"
        "probes.py` documents the generator): a value a tool returned that the agent used "
        "later (`tool_value`), a user constraint (`constraint`), the files touched "
        "(`file`), the last error (`last_error`) and the result that resolved it "
        "(`resolution`), and the step the agent said comes next (`next_step`). At a call "
        "a probe passes when its answer is in the request verbatim; the share is pooled "
        f"over every call at which the probe was active (at most {LIMIT} of a kind per "
        "session). A refused call passes none.",
        "",
    ]
    for label in budgets:
        out += [f"Budget {label}:", "", probe_table(runs, names, label), ""]
    return out
