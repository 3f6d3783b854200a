"""The `restore` proposal: compacted pieces of the view brought back, with exact counts.

Three callers undo compaction edits: `context_expand` (the model asks for a piece back),
a withdrawal (a summary over withdrawn nodes goes), and a compaction run's refill (its
own cuts of the newest outputs, once the run landed under its target). Each builds its
proposal here; the working graph checks it (`restore_rules`) like any other.
"""

from __future__ import annotations

from collections.abc import Sequence

from orchestrator.working.view import WorkingView
from processors.base import Proposal, Restore

__all__ = ["restore_proposal", "restore_tokens"]


def restore_tokens(view: WorkingView, target: str, *, whole: bool = True) -> tuple[int, int]:
    """Content tokens `Restore(target, whole)` takes out of `view`, and brings back."""
    taken, brought, _ = _restored(view, target, whole)
    return taken, brought


def _restored(view: WorkingView, target: str, whole: bool) -> tuple[int, int, tuple[str, ...]]:
    count = view.token_cache.count_node
    undone, bases = view.overlay.undone_by(target, whole=whole)
    taken = sum(count(view[i]) for i in undone if view.is_current(i))
    return taken, sum(count(view[i]) for i in bases), bases


def restore_proposal(
    view: WorkingView, targets: Sequence[str], processor: str = "restore", *, whole: bool = True
) -> Proposal:
    """The `restore` proposal undoing `targets`, with exact token counts (unchecked).

    `whole=False` undoes only the targets themselves (`Restore.whole`). `processor` names
    who restores in the audit log.
    """
    before = after = 0
    restored: list[str] = []
    for target in targets:
        taken, brought, bases = _restored(view, target, whole)
        before += taken
        after += brought
        restored.extend(bases)
    return Proposal(
        processor=processor,
        edits=tuple(Restore(target=target, whole=whole) for target in targets),
        tokens_before=before,
        tokens_after=after,
        base_version=view.version,
        note=f"restored {len(restored)} node(s) behind {', '.join(targets)}"
        + ("" if whole else " (one level)"),
        purpose="restore",
    )
