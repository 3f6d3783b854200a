"""`python -m benchmarks.probes_quick`: the page's fidelity probes and fill, one policy.

The benchmarks page replays every contender (about 16 minutes); this replays one
context-graph policy and AutoGen's buffered context (the peer that leads on the recency
probes) with the page's own harness (`benchmarks.compare.runner.replay_all`), at the
page's budgets, and prints per budget the probe shares, reference facts, fill at
compacted calls, retention, prefix stability and refused calls. It is how the coding
policy's figures in docs/configuration.md were taken.

    python -m benchmarks.probes_quick                    # coding, every session
    python -m benchmarks.probes_quick --policy service --only swe_agent
    python -m benchmarks.probes_quick --compact-to 0.5 0.6 0.7 --no-peer

`--compact-to` replays the policy once per low-water mark given (a row each): how fill,
retention and prefix stability trade against each other as compaction lands lower.

`--ideal-drop` adds a row per share given for the ideal drop compactor
(`benchmarks.compare.ideal_drop`): one that compacts only when a request would not fit,
down to that share of the budget, with no summary. Its prefix stability and fill are
the bound a compactor that drops what it rewrites can reach on these sessions.

    python -m benchmarks.probes_quick --budgets 50% --no-peer --ideal-drop 0.5 0.7 0.8

`--request-after-compaction TEXT` replays, instead, each session that holds another
tool's compaction with TEXT as the user's request right after it: a session continued by
Claude Code's `/compact` and then a message, which no recorded session is
(`sessions.continued_by_request`).

    python -m benchmarks.probes_quick --request-after-compaction "Go on with the epic."
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from benchmarks.compare.contenders import ContenderSpec, ContextGraphContender
from benchmarks.compare.fidelity import probe_recall, reach, reach_in_context
from benchmarks.compare.ideal_drop import ideal_drop_spec
from benchmarks.compare.probes import PROBE_KINDS
from benchmarks.compare.runner import Run, replay_all
from benchmarks.compare.sessions import BUDGET_LABELS, continued_by_request, discover
from benchmarks.compare.stats import summarize

__all__ = ["main", "parser", "table"]

DEFAULT_TRACES = Path(__file__).resolve().parents[2] / "shared" / "traces"


def _spec(policy: str, compact_to: float | None = None) -> ContenderSpec:
    """The policy as a contender; with `compact_to`, at that low-water mark instead."""
    name, settings = f"context-graph {policy}", f"get_policy({policy!r})"
    if compact_to is not None:
        name += f" compact_to={compact_to:g}"
        settings += f".replace(compact_to={compact_to!r})"
    return ContenderSpec(
        name=name,
        family="context-graph",
        make=lambda budget, counter: ContextGraphContender(
            policy, budget, counter, compact_to=compact_to
        ),
        settings=settings,
    )


def table(runs: list[Run], names: list[str], label: str) -> str:
    """One budget's rows: probe shares (a request over the budget passes none), reference
    facts, fill, retention, prefix, refused and over-budget calls."""
    head = [
        "contender",
        *PROBE_KINDS,
        "reference facts",
        "in context",
        "fill",
        "retention",
        "prefix",
    ]
    head += ["refused", "over budget"]
    rows = ["| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    for name in names:
        shares = [f"{p / a:.3f}" if a else "-" for a, p, _ in probe_recall(runs, name, label)]
        reference, kept, _ = reach(runs, name, label)
        in_context = reach_in_context(runs, name, label)
        figures = summarize(runs, name, label)
        rows.append(
            "| "
            + " | ".join(
                [
                    name,
                    *shares,
                    f"{kept / reference:.3f}" if reference else "-",
                    f"{in_context / reference:.3f}" if reference else "-",
                    f"{figures.fill or 0:.3f}",
                    f"{figures.retention or 0:.3f}",
                    f"{figures.prefix_stability or 0:.3f}",
                    str(figures.refused),
                    str(figures.over_budget),
                ]
            )
            + " |"
        )
    return "\n".join(rows)


def parser() -> argparse.ArgumentParser:
    """The command line: `--policy` names the policy, as the CLI's flag does."""
    made = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    made.add_argument("--traces", type=Path, default=DEFAULT_TRACES)
    made.add_argument("--policy", default="coding", help="a named policy")
    made.add_argument("--only", metavar="FAMILY", help="only this session family")
    made.add_argument("--budgets", nargs="+", default=list(BUDGET_LABELS))
    made.add_argument(
        "--compact-to",
        nargs="+",
        type=_share,
        metavar="SHARE",
        help="replay the policy with each of these low-water marks instead of its own",
    )
    made.add_argument(
        "--ideal-drop",
        nargs="+",
        type=_share,
        metavar="SHARE",
        help="add the ideal drop compactor down to each of these shares of the budget",
    )
    made.add_argument("--no-peer", action="store_true", help="leave out AutoGen's buffer")
    made.add_argument(
        "--request-after-compaction",
        metavar="TEXT",
        type=_request,
        help="replay only the sessions holding another tool's compaction, each with TEXT "
        "as a user request right after it",
    )
    return made


def _share(text: str) -> float:
    """A `compact_to` from the command line: a share of the budget in (0, 1]."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"expected a share of the budget in (0, 1], got {text!r}")
    return value


def _request(text: str) -> str:
    """The request `--request-after-compaction` inserts: any text but a blank one."""
    if not text.strip():
        raise argparse.ArgumentTypeError("expected the text of a request, got a blank one")
    return text


def main(argv: list[str] | None = None) -> int:
    """Replay one policy and AutoGen's buffered context; print a table per budget."""
    args = parser().parse_args(argv)
    from benchmarks.compare.autogen_peer import autogen_specs

    marks = args.compact_to or [None]
    specs = [_spec(args.policy, mark) for mark in marks]
    specs += [ideal_drop_spec(share) for share in args.ideal_drop or []]
    if not args.no_peer:
        specs += [s for s in autogen_specs() if "buffered" in s.name]
    sessions = discover(args.traces, only=args.only)
    if args.request_after_compaction is not None:
        made = (continued_by_request(s, args.request_after_compaction) for s in sessions)
        sessions = [s for s in made if s is not None]
    if not sessions:
        print(f"no sessions under {args.traces}", file=sys.stderr)
        return 1
    runs = replay_all(specs, sessions, tuple(args.budgets), memory=False, progress=lambda _: None)
    for label in args.budgets:
        print(f"Budget {label}:\n\n{table(runs, [s.name for s in specs], label)}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
