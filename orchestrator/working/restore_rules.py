"""How `restores_checked` (`orchestrator.working.invariants.RULES`) is checked.

A `Restore` (what `context_expand` applies) undoes compaction: it stands alone in a
proposal of purpose `restore`, targets a compacted piece in the view (never a redacted
copy), and every pristine unit it brings a node of back stands whole afterwards. The
token counts and the pairing of what comes back are checked with the other rules
(`tokens_reduced`, `calls_paired`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from orchestrator.working.rules import Change, _ids, _say, _standing, restoring, undone_of
from orchestrator.working.view import WorkingView
from processors.base import Proposal

__all__ = ["restores_checked", "restores_whole"]


def restores_checked(
    proposal: Proposal, changes: Sequence[Change], state: WorkingView
) -> Iterator[str]:
    """Breaks of `restores_checked`: a restore mixed with compaction, or of a wrong target."""
    rule, subject = "restores_checked", f"proposal from `{proposal.processor}`"
    purpose = proposal.purpose == "restore"
    for change in changes:
        if restoring(change) != purpose:
            what = "a restore" if purpose else f"a {proposal.purpose} proposal"
            yield _say(
                rule,
                subject,
                f"is {what} but edit {change.index} is a {change.edit.op}",
                "put restores alone in a proposal of purpose 'restore'",
            )
            continue
        if not purpose:
            continue
        target = change.targets[0]
        overlay = state.overlay
        if target in overlay.kept:
            yield _say(
                rule,
                f"node `{target}`",
                "is a redacted copy: restoring it would bring a secret back",
                "restore only compacted pieces; a redaction stays",
            )
        elif target in overlay.undone:
            yield _say(
                rule,
                f"node `{target}`",
                "was restored already: what it stood for is back in the view",
                "leave the edit out",
            )
        elif target in overlay.derived and not (
            state.is_current(target) or target in overlay.dropped
        ):
            yield _say(
                rule,
                f"node `{target}`",
                "is not in the view: something that stands for it now is",
                "restore the node that stands in the view (Overlay.resolve)",
            )
        elif target not in overlay.derived and target not in overlay.dropped and target in state:
            yield _say(
                rule,
                f"node `{target}`",
                "is a pristine node that nothing compacted away",
                "restore a replacement, a summary or a dropped node",
            )


def restores_whole(
    changes: Sequence[Change], before: WorkingView, after: WorkingView
) -> Iterator[str]:
    """Breaks of `restores_checked` in the view after: a unit that came back in part."""
    pristine = before.pristine
    seen: set[str] = set()
    for change in changes:
        if not restoring(change):
            continue
        for base in undone_of(change, before)[1]:
            node = before.overlay.node(base)
            if node is not None and node.kind == "summary":
                # A summary that comes back (one level) stands as a unit of its own.
                if not after.is_current(base):
                    yield _say(
                        "restores_checked",
                        f"restore of `{change.targets[0]}`",
                        f"brings back summary `{base}`, which would not stand in the view",
                        "restore the node that stands in the view",
                    )
                continue
            for root in before.roots(base):
                unit = pristine.unit_of(root)
                if unit.head in seen:
                    continue
                seen.add(unit.head)
                missing = [m for m in unit.node_ids if _standing(m, after)[0] != "current"]
                if missing:
                    yield _say(
                        "restores_checked",
                        f"restore of `{change.targets[0]}`",
                        f"brings back part of unit `{unit.head}`: {_ids(missing)} would stay "
                        "out of the view",
                        "restore every compacted piece of the unit in one proposal",
                    )
