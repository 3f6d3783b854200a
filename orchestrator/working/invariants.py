"""The invariant checker: what a proposal must keep true to be applied.

`check_proposal(proposal, state)` lists every rule a proposal breaks (empty: it may be
applied); `enforce` raises `InvariantViolation` naming them all, or returns the state the
proposal leads to. No rule is advisory: one broken rule rejects the whole proposal, and a
rejected proposal changes nothing. Each message names the rule, the node and the fix.

Rules (`RULES`; how each is checked: `orchestrator.working.rules`):

- `targets_current`: every target is in the current view. Nodes never change once
  made, so a target still in view is unchanged since the proposal's `base_version`; a
  target replaced, abstracted or dropped since then makes the proposal stale.
- `whole_units`: a Drop or an Abstract covers whole units of the current view, and an
  Abstract a run of consecutive ones (units that render into the system prompt,
  `system` and `note`, may be skipped) with its targets in view order; a replacement
  keeps its target's kind, on which the shape of the unit depends.
- `calls_paired`: a replacement of a tool call keeps its `tool_call_id`, `name` and
  `seq` (the provider call id is derived from them); a replacement of an answer keeps
  its `tool_call_id`; after the edits every call and its answer still stand together:
  in one unit, in one summary, or both gone.
- `pinned_untouched`: no pinned node, and no node the caller protects, is a target.
- `tokens_reduced`: the edits remove more content tokens than they add, and the
  proposal's `tokens_before` / `tokens_after` equal the counts by the graph's counter.
  A `restore` proposal alone may add tokens (its counts must still be right).
- `safety_replaces_only`: a proposal whose `purpose` is `safety` (secret redaction)
  only replaces nodes. In exchange it may edit pinned nodes (a secret in the system
  prompt must go too, though never a node the caller protects) and need not save
  tokens; its counts must still be right.
- `lineage_consistent`: `replacement.replaces` is the target, `summary.abstracts` is
  exactly the targets, no node is the target of two edits, and no new id is taken.
  Lineage stays acyclic because a new node, under a fresh id, points only at nodes
  that already exist.
- `summaries_checked`: an Abstract stands in a node of kind `summary`, and every new
  summary carries `meta["checked"] is True`.
- `text_encodable`: every string a new node carries (its text, its meta) and the
  proposal's note encode as UTF-8. A lone surrogate (a code point in U+D800-U+DFFF,
  which a summarizer can answer with) would be applied in memory and then break every
  request body and the session journal, which are UTF-8.

- `restores_checked`: a `Restore` stands only in a proposal of purpose `restore`, which
  holds nothing else; its target is a derived node in the view (a replacement or a
  summary) or a dropped node, never a redacted copy (a secret would come back); and
  every pristine unit it brings a node of back stands whole in the view after (no
  unit is half restored).

The summaries contract: `meta["checked"] = True` is set by the summarizer path, and
only after it has checked the summary it wrote (not empty, shorter than its sources, the
critical entities of the sources kept). A summary without the mark did not come through
that path and is refused; a processor must not set the mark on text it did not check.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from types import MappingProxyType

from context_graph.errors import InvariantViolation
from orchestrator.working.restore_rules import restores_checked, restores_whole
from orchestrator.working.rules import (
    calls_keep_ids,
    changes_of,
    lineage_consistent,
    pairs_kept,
    pinned_untouched,
    safety_replaces_only,
    summaries_checked,
    targets_current,
    text_encodable,
    tokens_reduced,
    whole_units,
)
from orchestrator.working.view import WorkingView
from processors.base import Proposal

__all__ = ["RULES", "check_proposal", "enforce"]

#: Every rule the checker enforces, with what it guarantees (read-only).
RULES: Mapping[str, str] = MappingProxyType(
    {
        "targets_current": "every target is in the current view, unchanged since the snapshot",
        "whole_units": "drops and abstracts cover whole units; replacements keep their kind",
        "calls_paired": "every tool call and its answer stay together",
        "pinned_untouched": "pinned and protected nodes are never edited",
        "tokens_reduced": "the edits save tokens, and the proposal's counts are right",
        "lineage_consistent": "lineage links name the targets exactly; new ids are fresh",
        "summaries_checked": "every new summary passed the summarizer's checks",
        "safety_replaces_only": "safety edits (redaction) only replace nodes",
        "text_encodable": "the text of new nodes (and the note) encodes as UTF-8",
        "restores_checked": "restores stand alone, undo compaction only, bring whole units back",
    }
)


def check_proposal(
    proposal: Proposal, state: WorkingView, *, protected: Collection[str] = ()
) -> list[str]:
    """List every rule `proposal` breaks against `state`; empty when it may be applied.

    Args:
        proposal: The proposal to check.
        state: The working view it would be applied to (the current one, not the
            snapshot the processor read).
        protected: Ids the caller protects besides pinned nodes (e.g. the latest turn).
    """
    return _check(proposal, state, frozenset(protected))[0]


def enforce(
    proposal: Proposal, state: WorkingView, *, protected: Collection[str] = ()
) -> WorkingView:
    """Return the view after `proposal`, or raise if the proposal breaks any rule.

    Raises:
        InvariantViolation: lists every broken rule; nothing was changed.
    """
    problems, after = _check(proposal, state, frozenset(protected))
    if after is None:
        lines = "\n".join(f"- {p}" for p in problems)
        msg = f"proposal from `{proposal.processor}` rejected:\n{lines}"
        raise InvariantViolation(msg)
    return after


def _check(
    proposal: Proposal, state: WorkingView, protected: frozenset[str]
) -> tuple[list[str], WorkingView | None]:
    changes = changes_of(proposal)
    problems = [
        *targets_current(proposal, changes, state),
        *whole_units(changes, state),
        *calls_keep_ids(changes, state),
        *pinned_untouched(changes, state, protected, safety=proposal.purpose == "safety"),
        *tokens_reduced(proposal, changes, state),
        *safety_replaces_only(proposal),
        *lineage_consistent(changes, state),
        *summaries_checked(changes, safety=proposal.purpose == "safety"),
        *text_encodable(proposal, changes),
        *restores_checked(proposal, changes, state),
    ]
    if problems:
        return problems, None
    # Pairing is also checked on the result, so that no mix of edits can split a pair.
    after = state.with_proposal(proposal)
    problems = [*pairs_kept(changes, state, after), *restores_whole(changes, state, after)]
    return problems, (None if problems else after)
