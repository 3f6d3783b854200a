"""Plain text (and anything else): the lines that carry the most identifiers.

The first line, every error line and, while a quarter of the budget allows, the markdown
headings (and a diff's file and hunk headers) stay; the rest of the budget goes to the
lines that bring the most identifiers (paths, names, numbers, error names) not kept yet,
shown in their original order.
"""

from __future__ import annotations

import re

from processors.distill._common import Doc, is_error_line, scan_range, select

__all__ = ["distill_plain"]

_HEADING = re.compile(r"^\s{0,3}#{1,6} \S|^diff --git |^@@ -\d")


def distill_plain(doc: Doc) -> str:
    """Distill text by keeping its most informative lines."""
    filled = [i for i, line in enumerate(doc.plain) if line.strip()]
    must = set(filled[:1])
    must.update(i for i in scan_range(len(doc.plain)) if is_error_line(doc.plain[i]))
    room = doc.budget // 4 - doc.cost(must)
    for index in filled:
        if _HEADING.match(doc.plain[index]):
            cost = doc.costs.of(doc.lines[index])
            if cost > room:
                break
            must.add(index)
            room -= cost
    return select(doc, must)
