"""The page's planted-fact section: `python -m benchmarks.planted`, set in prose."""

from __future__ import annotations

import contextlib
import io
import json
import tempfile
from collections.abc import Callable
from pathlib import Path

from benchmarks import planted

__all__ = ["planted_section"]


def planted_section(progress: Callable[[str], None], judged: list[str] | None = None) -> str:
    """The section; each of its targets, met or not, is added to `judged` as a table row."""
    progress("planted-fact benchmark")
    with tempfile.TemporaryDirectory() as scratch:
        figures = Path(scratch) / "planted.json"
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            planted.main(["--json", str(figures)])
        data = json.loads(figures.read_text(encoding="utf-8"))
    table = out.getvalue().split("\n\n", 1)[0].strip()
    if judged is not None:
        judged.extend(
            f"| planted facts, {t['target']} | {t['measured']} | "
            f"{'met' if t['met'] else 'not met'} |"
            for t in data["targets"]
        )
    return "\n".join(
        [
            "## Planted facts: rules, values and preferences said early",
            "",
            "```bash",
            "python -m benchmarks.planted",
            "```",
            "",
            "Seeded synthetic sessions (`benchmarks/planted_sessions.py`, five seeds) state two "
            "safety rules, three constraints with values, three preferences, the goal and three "
            "facts over the user's first four turns, update one constraint and one fact in the "
            "second round, and bury everything under tool work in each of four rounds. After "
            "each round a request is asked for at 10%, 20% and 30% of the session's size so "
            "far, so each round compacts the last one's output with the new turns. An item "
            "survives when one line of the request holds its subject and its current value "
            "together; an updated item is stale when the last line stating it says the old "
            "value. Controls: the system prompt alone (null), whole events deleted at random "
            "down to the size our default sent, and an oracle that keeps exactly the items. "
            "`fill` is tokens sent over the budget, averaged over every request. The "
            "issue's targets: every kind at 95% or more at 20%, 100% at 30%, no stale value "
            "and no refusal.",
            "",
            table,
            "",
        ]
    )
