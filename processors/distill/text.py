"""Plain text (and anything else): the lines that carry the most identifiers.

The first line, every error line and, while a quarter of the budget allows, the markdown
headings (and a diff's file and hunk headers) stay; the rest of the budget goes to the
lines that bring the most identifiers (paths, names, numbers, error names) not kept yet,
shown in their original order.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from processors.distill.common import Doc, is_error_line, scan_range, select

__all__ = ["distill_plain", "plain_rule"]

_HEADING = re.compile(r"^\s{0,3}#{1,6} \S|^diff --git |^@@ -\d")


def distill_plain(doc: Doc) -> str:
    """Distill text by keeping its most informative lines."""
    return plain_rule(doc)(doc)


def plain_rule(doc: Doc) -> Callable[[Doc], str]:
    """`distill_plain` for `doc`'s lines at any budget.

    The lines that must stay and the headings do not depend on the budget: they are
    found once, for the reserve's second pass at a smaller budget too.
    """
    filled = [i for i, line in enumerate(doc.plain) if line.strip()]
    must = set(filled[:1])
    must.update(i for i in scan_range(len(doc.plain)) if is_error_line(doc.plain[i]))
    headings = [index for index in filled if _HEADING.match(doc.plain[index])]

    def rule(budgeted: Doc) -> str:
        kept = set(must)
        room = budgeted.budget // 4 - budgeted.cost(kept)
        for index in headings:
            cost = budgeted.costs.of(budgeted.lines[index])
            if cost > room:
                break
            kept.add(index)
            room -= cost
        return select(budgeted, kept)

    return rule
