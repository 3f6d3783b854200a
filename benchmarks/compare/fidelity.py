"""The page's fidelity-probe section: recall by probe kind, budget and contender."""

from __future__ import annotations

from collections.abc import Sequence

from benchmarks.compare.facts import CONTEXT_CHARS, MIN_CONTEXT
from benchmarks.compare.probes import LIMIT, PROBE_KINDS
from benchmarks.compare.runner import Run

__all__ = ["probe_recall", "probe_section", "probe_table", "reach"]


def probe_recall(runs: Sequence[Run], name: str, label: str) -> list[tuple[int, int, int]]:
    """(active, passed, recoverable) per probe kind, pooled over every call of `name` at
    `label`.

    A request over the budget passes none of its probes (as a refused call): a
    contender that sends more than the budget allows is not keeping what the agent needs
    within it, and the provider would refuse the request or bill what the user capped.
    """
    totals = [[0, 0, 0] for _ in PROBE_KINDS]
    for run in _chosen(runs, name, label):
        for row in run.rows:
            for index, (active, passed, back) in enumerate(row.probed):
                totals[index][0] += active
                if not row.over_budget:
                    totals[index][1] += passed
                    totals[index][2] += back
    return [(active, passed, back) for active, passed, back in totals]


def _chosen(runs: Sequence[Run], name: str, label: str) -> list[Run]:
    return [r for r in runs if r.contender == name and r.budget_label == label and not r.error]


def reach(runs: Sequence[Run], name: str, label: str) -> tuple[int, int, int]:
    """(reference entities, kept, recoverable) pooled over every call of `name` at `label`."""
    rows = [row for run in _chosen(runs, name, label) for row in run.rows]
    return (
        sum(row.reference for row in rows),
        sum(row.kept for row in rows),
        sum(row.recoverable for row in rows),
    )


def reach_in_context(runs: Sequence[Run], name: str, label: str) -> int:
    """The reference entities kept in context, pooled over every call of `name` at
    `label` (out of `reach`'s reference): an entity counts only where the request holds
    it with what stood beside it in its source (`facts.contexts_of`), as a quote does and
    a list of names does not."""
    return sum(row.kept_in_context for run in _chosen(runs, name, label) for row in run.rows)


def probe_table(runs: Sequence[Run], names: Sequence[str], label: str) -> str:
    """One row per contender: the share of active probes that passed, per kind."""
    head = " | ".join(f"`{kind}`" for kind in PROBE_KINDS)
    rows = [
        f"| contender | {head} | reference facts | in context |",
        "|---|" + "---:|" * (len(PROBE_KINDS) + 2),
    ]
    for name in names:
        cells = [
            _cell(active, passed, back) for active, passed, back in probe_recall(runs, name, label)
        ]
        reference, kept, back = reach(runs, name, label)
        in_context = reach_in_context(runs, name, label)
        rows.append(
            f"| {name} | "
            + " | ".join(cells)
            + f" | {_cell(reference, kept, back)} | {_cell(reference, in_context, 0)} |"
        )
    return "\n".join(rows)


def _cell(total: int, present: int, recoverable: int) -> str:
    """`0.812` (in the request), `0.812 + 0.104` when one expand call brings back more."""
    if not total:
        return "-"
    shown = f"{present / total:.3f}"
    return f"{shown} + {recoverable / total:.3f}" if recoverable else shown


def probe_section(runs: Sequence[Run], names: Sequence[str], budgets: Sequence[str]) -> list[str]:
    """The page's section: what a probe is, then a table per budget."""
    out = [
        "### Fidelity probes",
        "",
        "Beyond whether an entity is present: per session, deterministic questions of "
        f"{len(PROBE_KINDS)} kinds, each with the answer string a request must hold "
        "(`benchmarks/compare/probes.py` documents the generator): a value a tool returned "
        "that the agent used later (`tool_value`), a user constraint (`constraint`) and one "
        "that holds a value, asked with its rule (`constraint_value`), the files touched "
        "(`file`), the last error's informative line (`last_error`, not its exit-status "
        "wrapper; for a Python traceback the exception it ends with, not its header or a "
        "frame's source line; an error of wrappers alone is not asked; asked "
        "for the next ten tool results) and the result that resolved it "
        "(`resolution`), the step the agent said comes next (`next_step`), the user's "
        "latest message verbatim (`instruction`) and the latest test run's summary line as "
        "the runner printed it (`test_summary`), the line of a file an edit replaces, "
        "at the call the edit answers (`edit_text`: the agent could only write it from "
        "what the request showed), and a sentence of the agent's that says why "
        "(`reason`: a cause it found or the reason for a choice). At a call a probe "
        "passes when its answer is in the request verbatim, as the model reads it (a "
        "tool call's arguments decoded from their JSON string); the share is pooled over "
        "every call at which the "
        f"probe was active (at most {LIMIT} probes of an accumulating kind per session; the "
        "kinds that keep one live probe are not capped). A refused call passes none, nor "
        "does a request over the budget (the buffered peers send some: their shares are "
        "what they keep within the budget, as for retention's *within budget*). Where "
        "a share reads `a + b`, `b` is the share not in the request but recoverable: "
        "inside what one `context_expand` call on an id the request names brings back "
        "(only a contender with agent tools names ids). The column *reference facts* is the "
        "same for the retention benchmark's reference facts "
        "(the entities of user turns, tool errors and gold facts); *in context* counts one "
        f"only where the request holds it with up to {CONTEXT_CHARS} characters of what "
        "stood beside it on its line where it was first seen (at least "
        f"{MIN_CONTEXT} other than whitespace on one side; "
        "a run of whitespace reads as one space; an entity alone on its line is its own "
        "context): the same extractor picks the reference and the names the extractive "
        "brief lists, and a list of names keeps no fact in context.",
        "",
    ]
    for label in budgets:
        out += [f"Budget {label}:", "", probe_table(runs, names, label), ""]
    return out
