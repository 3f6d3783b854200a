"""The entity reserve: a closing line naming what the distilled body left out.

The content-type rules keep lines; the entities on the lines they leave out (paths, error
names, identifiers) would be gone. Part of the budget is set aside for one closing line,
`[also in the original: KeyError, a.py, parse_row, +12 more]`, that names them in order
of what an agent needs most: error names (few and short, always listed), the entities a
later turn of the agent named, file paths and URLs, other identifiers, numbers. A
5,000-file listing thus keeps its summary and first entries in the body and, in the
reserve, the paths the agent went on to use before any other.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Container, Sequence
from dataclasses import replace

from processors.distill.common import Doc

__all__ = ["RESERVE_LABEL", "rank_entities", "with_reserve"]

#: How the reserve line starts.
RESERVE_LABEL = "[also in the original: "

#: The share of the body's budget the reserve may take for paths and identifiers...
_SHARE = 0.25
#: ...and for the entities a later turn named, which outrank the body's own fill...
_NAMED_SHARE = 0.5
#: ...but never less than this many tokens for those, over the target if need be: a
#: small output at heavy has almost no budget, and what the agent went on to use stays.
_NAMED_FLOOR = 30

_ERROR_NAME = re.compile(r"^[A-Z][A-Za-z]*(?:Error|Exception|Warning|Fault)$")
_FILE_LIKE = re.compile(r"^(?:/|\.{1,2}/|~/|[a-z]+://)|/.*/|/[^/]*\.\w+$|^[\w-]+\.[a-z]{1,5}$")
_NUMBER = re.compile(r"^\$?[\d,]+(?:\.\d+)?$")

#: The tiers, in reserve order.
ERROR_NAMES, NAMED_LATER, PATHS, NAMES, NUMBERS = range(5)


def _tier(entity: str, named: Container[str]) -> int:
    if _ERROR_NAME.match(entity):
        return ERROR_NAMES
    if entity in named:
        return NAMED_LATER
    if _FILE_LIKE.search(entity):
        return PATHS
    return NUMBERS if _NUMBER.match(entity) else NAMES


def rank_entities(entities: Sequence[str], named: Container[str] = ()) -> list[tuple[int, str]]:
    """`(tier, entity)` pairs in reserve order (error names, named later, paths, names, numbers).

    Within a tier the original order stays.
    """
    return sorted(((_tier(e, named), e) for e in dict.fromkeys(entities)), key=lambda t: t[0])


def with_reserve(
    doc: Doc,
    body: Callable[[Doc], str],
    entities: Sequence[str],
    named: Container[str] = (),
) -> str:
    """`body(doc)`, made within a smaller budget when needed, and the reserve line after it.

    Error names the body left out are always listed (they are few and short; a
    pathological text with hundreds of them gets at most the budget again for them); the
    entities a later turn named get up to half the budget, and at least `_NAMED_FLOOR`
    tokens; paths, other names and numbers share what a quarter of the budget leaves.

    Args:
        doc: What to distill, with the full budget.
        body: Applies the content-type rules to a doc.
        entities: The original's entities, in order.
        named: Those of them a later turn of the agent named.
    """
    out = body(doc)
    ranked = rank_entities(entities, named)
    missing = [(tier, e) for tier, e in ranked if e not in out]
    if not missing:
        return out
    label = doc.costs.of(RESERVE_LABEL)
    wanted = label + sum(doc.costs.of(f"{e}, ") for _, e in missing)
    first = label + sum(doc.costs.of(f"{e}, ") for t, e in missing if t <= NAMED_LATER)
    reserve = min(wanted, max(int(doc.budget * _SHARE), min(first, int(doc.budget * _NAMED_SHARE))))
    out = body(replace(doc, budget=max(1, doc.budget - reserve)))
    # A body over its budget (what the rules must keep) does not eat the reserve.
    room = max(reserve, doc.budget - doc.costs.of(out), min(first, _NAMED_FLOOR)) - label
    left = [(tier, e) for tier, e in ranked if e not in out]
    shown = _fit(doc, left, room)
    if not shown:
        return out
    more = f", +{len(left) - len(shown):,} more" if len(left) > len(shown) else ""
    return f"{out}\n{RESERVE_LABEL}{', '.join(shown)}{more}]"


def _fit(doc: Doc, ranked: Sequence[tuple[int, str]], room: int) -> list[str]:
    """The entities that fit in `room` tokens, in rank order; error names may overdraw it."""
    overdraft = max(doc.budget, _NAMED_FLOOR)
    shown: list[str] = []
    for tier, entity in ranked:
        cost = doc.costs.of(f"{entity}, ")
        if cost <= room or (tier == ERROR_NAMES and cost <= room + overdraft):
            shown.append(entity)
            room -= cost
    return shown
