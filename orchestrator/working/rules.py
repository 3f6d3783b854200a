"""How each rule of `orchestrator.working.invariants.RULES` is checked.

One generator per rule (`calls_paired` has two: the ids a replacement keeps, and the
pairs the view after the edits keeps), each yielding one message per break; the rule of
restores is checked in `orchestrator.working.restore_rules`. A message
names the rule, the node and the fix: `"<rule>: <subject> <problem>; fix: <fix>"`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from context_graph.graph.nodes import AnswerNode, Node, ToolCallNode
from orchestrator.working.view import WorkingView
from processors.base import Abstract, Drop, Proposal, Replace, Restore

__all__ = [
    "Change",
    "calls_keep_ids",
    "changes_of",
    "lineage_consistent",
    "pairs_kept",
    "pinned_untouched",
    "restored_pairs",
    "restoring",
    "safety_replaces_only",
    "summaries_checked",
    "targets_current",
    "text_encodable",
    "tokens_reduced",
    "undone_of",
    "whole_units",
]

_SYSTEM_KINDS = frozenset({"system", "note"})


@dataclass(frozen=True, slots=True)
class Change:
    """One edit, flattened: its position, what it removes and what it adds."""

    index: int
    edit: Replace | Abstract | Drop | Restore
    targets: tuple[str, ...]
    added: Node | None


def changes_of(proposal: Proposal) -> list[Change]:
    """The edits of `proposal`, flattened, in order."""
    changes: list[Change] = []
    for index, edit in enumerate(proposal.edits):
        if isinstance(edit, Replace):
            changes.append(Change(index, edit, (edit.target,), edit.replacement))
        elif isinstance(edit, Abstract):
            changes.append(Change(index, edit, edit.targets, edit.summary))
        elif isinstance(edit, Restore):
            changes.append(Change(index, edit, (edit.target,), None))
        else:
            changes.append(Change(index, edit, edit.targets, None))
    return changes


def restoring(change: Change) -> bool:
    """Whether `change` is a `Restore` (`orchestrator.working.restore_rules` checks those)."""
    return isinstance(change.edit, Restore)


def undone_of(change: Change, state: WorkingView) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """What a restore change undoes in `state`: `Overlay.undone_by` of its target."""
    whole = change.edit.whole if isinstance(change.edit, Restore) else True
    return state.overlay.undone_by(change.targets[0], whole=whole)


def restored_pairs(
    changes: Sequence[Change], before: WorkingView, after: WorkingView
) -> Iterator[tuple[str, str]]:
    """The call-answer pairs of what the restores among `changes` bring back, in `after`."""
    for change in changes:
        if not restoring(change) or change.targets[0] not in before:
            continue
        for base in undone_of(change, before)[1]:
            node = after[base]
            if not after.is_current(base):
                continue
            if isinstance(node, ToolCallNode) and (answer := after.answer_to(base)) is not None:
                yield base, answer.id
            elif isinstance(node, AnswerNode) and (call := after.call_of(base)) is not None:
                yield call.id, base


def _say(rule: str, subject: str, problem: str, fix: str) -> str:
    return f"{rule}: {subject} {problem}; fix: {fix}"


def _ids(ids: Sequence[str], shown: int = 3) -> str:
    named = ", ".join(f"`{i}`" for i in ids[:shown])
    return named if len(ids) <= shown else f"{named} and {len(ids) - shown} more"


def targets_current(
    proposal: Proposal, changes: Sequence[Change], state: WorkingView
) -> Iterator[str]:
    """Breaks of `targets_current`: a target out of the view, or a stale base version."""
    rule, base = "targets_current", proposal.base_version
    if base is not None and base > state.version:
        yield _say(
            rule,
            f"proposal from `{proposal.processor}`",
            f"has base_version {base}, newer than the working graph's version {state.version}",
            "give the processor a snapshot() of the working graph it is applied to",
        )
    for change in changes:
        if not change.targets:
            yield _say(
                rule,
                f"edit {change.index} ({change.edit.op})",
                "has no targets",
                "name the nodes it covers, or leave the edit out",
            )
        for target in change.targets:
            if restoring(change) and target in state.overlay.dropped:
                continue  # a restore brings a dropped node back
            if not state.is_current(target):
                yield _stale(target, state, base)


def _stale(target: str, state: WorkingView, base: int | None) -> str:
    rule, subject = "targets_current", f"node `{target}`"
    departure = state.departure(target)
    if departure is not None:
        how, version = departure
        if base is None or version > base:
            since = f", after the proposal's base version {base}" if base is not None else ""
            problem = f"was {how} at version {version}{since}: the proposal is stale"
        else:
            problem = f"was {how} at version {version}, before the proposal's base version"
        fix = "run the processor again on a fresh snapshot of the working graph"
        return _say(rule, subject, problem, fix)
    if target in state:
        return _say(
            rule,
            subject,
            "is not in the current view (an imported compaction covers it)",
            "target only nodes of the view's units()",
        )
    fix = "target nodes of the snapshot the processor was given"
    return _say(rule, subject, "is in neither the pristine nor the working graph", fix)


def whole_units(changes: Sequence[Change], state: WorkingView) -> Iterator[str]:
    """Breaks of `whole_units`: part of a unit edited, a run with a gap, a kind changed."""
    rule = "whole_units"
    for change in changes:
        if restoring(change):
            continue  # restores_whole checks what comes back
        current = [t for t in change.targets if state.is_current(t)]
        added = change.added
        if isinstance(change.edit, Replace):
            old = state[current[0]] if current else None
            if old is not None and added is not None and added.kind != old.kind:
                yield _say(
                    rule,
                    f"replacement `{added.id}`",
                    f"is a {added.kind} but its target `{old.id}` is a {old.kind}",
                    "keep the target's kind (replacement_for does)",
                )
            continue
        chosen = set(change.targets)
        heads: dict[str, None] = {}
        for target in current:
            unit = state.unit_of(target)
            if unit.head in heads:
                continue
            heads[unit.head] = None
            missing = [m for m in unit.node_ids if m not in chosen]
            if missing:
                yield _say(
                    rule,
                    f"node `{target}`",
                    f"is in unit `{unit.head}`, but edit {change.index} ({change.edit.op}) "
                    f"leaves out its nodes {_ids(missing)}",
                    "target every node of the unit, or none of them",
                )
        if isinstance(change.edit, Abstract) and current:
            yield from _abstract_is_a_run(change, current, state, list(heads))


def _abstract_is_a_run(
    change: Change, current: Sequence[str], state: WorkingView, heads: Sequence[str]
) -> Iterator[str]:
    rule, subject = "whole_units", f"summary `{change.added.id if change.added else '?'}`"
    position = {node_id: i for i, node_id in enumerate(state.current_ids())}
    places = [position[t] for t in current]
    if places != sorted(places):
        yield _say(rule, subject, "lists its targets out of view order", "list them in order")
    units = state.units()
    index = {unit.head: i for i, unit in enumerate(units)}
    covered = {index[h] for h in heads}
    for i in range(min(covered), max(covered) + 1):
        if i not in covered and units[i].kind not in _SYSTEM_KINDS:
            yield _say(
                rule,
                subject,
                f"abstracts units on both sides of unit `{units[i].head}` but not that unit",
                "abstract a run of consecutive units, or use one Abstract per run",
            )


def calls_keep_ids(changes: Sequence[Change], state: WorkingView) -> Iterator[str]:
    """Breaks of `calls_paired` by a replacement: a call or answer losing its ids."""
    rule = "calls_paired"
    for change in changes:
        if not isinstance(change.edit, Replace) or not state.is_current(change.edit.target):
            continue
        target, new = state[change.edit.target], change.edit.replacement
        fields: tuple[str, ...]
        if isinstance(target, ToolCallNode) and isinstance(new, ToolCallNode):
            fields = ("tool_call_id", "name", "seq")
        elif isinstance(target, AnswerNode) and isinstance(new, AnswerNode):
            fields = ("tool_call_id",)
        else:
            continue
        for name in fields:
            was, now = getattr(target, name), getattr(new, name)
            if was != now:
                yield _say(
                    rule,
                    f"replacement `{new.id}`",
                    f"changes {name} of `{target.id}` from {was!r} to {now!r}",
                    f"keep {name} as it is (pass {name}=target.{name} to replacement_for)",
                )


def pinned_untouched(
    changes: Sequence[Change], state: WorkingView, protected: frozenset[str], *, safety: bool
) -> Iterator[str]:
    """Breaks of `pinned_untouched`: a pinned or protected node targeted."""
    for change in changes:
        if restoring(change):
            continue  # restores_checked refuses a redacted target
        for target in change.targets:
            node = state.get(target)
            pinned = node is not None and node.pinned and not safety
            why = "is pinned" if pinned else None
            if why is None and target in protected:
                why = "is protected by the caller"
            if why is not None:
                yield _say(
                    "pinned_untouched",
                    f"node `{target}`",
                    f"{why} but edit {change.index} ({change.edit.op}) targets it",
                    "leave it out of the proposal: it is never compacted or dropped",
                )


def tokens_reduced(
    proposal: Proposal, changes: Sequence[Change], state: WorkingView
) -> Iterator[str]:
    """Breaks of `tokens_reduced`: nothing saved, or counts the graph does not agree with."""
    rule, subject = "tokens_reduced", f"proposal from `{proposal.processor}`"
    if not changes:
        fix = "skip an empty proposal (Proposal.empty) instead of applying it"
        yield _say(rule, subject, "has no edits, so it saves nothing", fix)
        return
    removed, added = _removed_added(changes, state)
    if any(t not in state for t in removed):
        return  # targets_current names them; their tokens cannot be counted
    count = state.token_cache.count_node
    before = sum(count(state[t]) for t in removed)
    after = sum(count(node) for node in added)
    fix = "count with the processor context's counter (ctx.count)"
    if proposal.tokens_before != before:
        problem = (
            f"claims tokens_before={proposal.tokens_before}, but {_ids(removed)} count {before}"
        )
        yield _say(rule, subject, problem, fix)
    if proposal.tokens_after != after:
        added_ids = [n.id for n in added]
        problem = (
            f"claims tokens_after={proposal.tokens_after}, but {_ids(added_ids)} count {after}"
        )
        yield _say(rule, subject, problem, fix)
    if after >= before and proposal.purpose not in ("safety", "restore"):
        yield _say(
            rule,
            f"{subject} on {_ids(removed)}",
            f"adds {after} tokens for the {before} it removes",
            "propose only edits that make the context smaller",
        )


def _removed_added(changes: Sequence[Change], state: WorkingView) -> tuple[list[str], list[Node]]:
    """The ids the edits take out of the view, and the nodes they put in."""
    removed: list[str] = []
    added: list[Node] = []
    for change in changes:
        if not restoring(change):
            removed.extend(change.targets)
            if change.added is not None:
                added.append(change.added)
            continue
        target = change.targets[0]
        if target not in state:
            removed.append(target)  # unknown: targets_current names it
            continue
        undone, bases = undone_of(change, state)
        removed.extend(i for i in undone if state.is_current(i))
        added.extend(state[i] for i in bases)
    return removed, added


def safety_replaces_only(proposal: Proposal) -> Iterator[str]:
    """Breaks of `safety_replaces_only`: a safety proposal that abstracts or drops."""
    if proposal.purpose != "safety":
        return
    for index, edit in enumerate(proposal.edits):
        if not isinstance(edit, Replace):
            yield _say(
                "safety_replaces_only",
                f"proposal from `{proposal.processor}`",
                f"is a safety proposal but edit {index} is a {edit.op}",
                "make safety edits replacements only, or make the proposal a compaction",
            )


def lineage_consistent(changes: Sequence[Change], state: WorkingView) -> Iterator[str]:
    """Breaks of `lineage_consistent`: a node targeted twice, a taken id, wrong links."""
    rule = "lineage_consistent"
    targeted = Counter(t for c in changes for t in c.targets)
    for target, times in targeted.items():
        if times > 1:
            yield _say(
                rule,
                f"node `{target}`",
                f"is targeted {times} times",
                "replace, abstract or drop a node at most once per proposal",
            )
    fresh: set[str] = set()
    for change in changes:
        node = change.added
        if node is None:
            continue
        subject = f"new node `{node.id}`"
        taken = node.id in state.overlay.derived or node.id in state.pristine or node.id in fresh
        fresh.add(node.id)
        if taken:
            fix = "derive a fresh id from the lineage and content (replacement_for does)"
            yield _say(rule, subject, "takes an id that is already in use", fix)
        if isinstance(change.edit, Replace) and (
            node.replaces != change.edit.target or node.abstracts
        ):
            yield _say(
                rule,
                subject,
                f"has replaces={node.replaces!r}, abstracts={node.abstracts!r} but replaces "
                f"`{change.edit.target}`",
                "set replaces to the target and abstracts to () (replacement_for does)",
            )
        if isinstance(change.edit, Abstract) and (
            node.abstracts != change.edit.targets or node.replaces is not None
        ):
            yield _say(
                rule,
                subject,
                f"has abstracts={_ids(node.abstracts)} but the edit's targets are "
                f"{_ids(change.edit.targets)}",
                "set abstracts to exactly the targets, in order, and replaces to None",
            )


def summaries_checked(changes: Sequence[Change], *, safety: bool = False) -> Iterator[str]:
    """Breaks of `summaries_checked`: an abstract that is no summary, an unchecked summary.

    A safety edit's replacement of a summary is that summary with its secrets redacted
    (`safety_replaces_only` holds such a proposal to replacements): no new text to check.
    An imported compaction was never checked, and holding a secret must not make it
    unredactable.
    """
    rule = "summaries_checked"
    for change in changes:
        node = change.added
        if node is None:
            continue
        if isinstance(change.edit, Abstract) and node.kind != "summary":
            fix = "stand a SummaryNode in for the abstracted nodes"
            yield _say(rule, f"new node `{node.id}`", f"abstracts nodes but is a {node.kind}", fix)
        redacted_copy = safety and isinstance(change.edit, Replace)
        if node.kind == "summary" and not redacted_copy and node.meta.get("checked") is not True:
            yield _say(
                rule,
                f"summary `{node.id}`",
                "does not carry meta['checked'] == True",
                "write summaries through the summarizer path, which checks them and sets it",
            )


def text_encodable(proposal: Proposal, changes: Sequence[Change]) -> Iterator[str]:
    """Breaks of `text_encodable`: a note or new node text UTF-8 cannot encode."""
    fix = "have the processor (or its summarizer) return valid Unicode text"
    found = _unencodable(proposal.note)
    if found is not None:
        yield _say("text_encodable", "the proposal's note", found, fix)
    for change in changes:
        node = change.added
        if node is None or _encodes(node):
            continue
        stack: list[tuple[object, str]] = [(node.model_dump(), "")]
        while stack:
            value, where = stack.pop()
            if isinstance(value, dict):
                stack.extend((v, f"{where}.{k}".lstrip(".")) for k, v in value.items())
            elif isinstance(value, list | tuple):
                stack.extend((v, f"{where}.{i}") for i, v in enumerate(value))
            elif isinstance(value, str) and (found := _unencodable(value)) is not None:
                yield _say("text_encodable", f"new node `{node.id}`", f"{found} in `{where}`", fix)
                break


def _encodes(node: Node) -> bool:
    """Whether every string of `node` surely encodes as UTF-8, found in one pass in C.

    Dumping the node as JSON encodes each string it holds, and fails on a lone
    surrogate anywhere; the walk of `text_encodable` (a loop over every value) then says
    where. Any other failure leaves the decision to the walk too.
    """
    try:
        node.model_dump_json()
    except Exception:  # the walk decides, as without this pass
        return False
    return True


def _unencodable(text: str) -> str | None:
    """Why `text` is not UTF-8 encodable (a lone surrogate), or `None`."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"holds {text[exc.start]!r}, which UTF-8 cannot encode,"
    return None


def pairs_kept(changes: Sequence[Change], before: WorkingView, after: WorkingView) -> Iterator[str]:
    """Breaks of `calls_paired` in the view after: a call and its answer split apart."""
    # What a restore brings back is paired in the view after, where it stands again.
    pairs: dict[tuple[str, str], None] = dict.fromkeys(restored_pairs(changes, before, after))
    for target in (t for change in changes if not restoring(change) for t in change.targets):
        node = before[target]
        partner = before.answer_to(target) if isinstance(node, ToolCallNode) else None
        if partner is not None:
            pairs[(target, partner.id)] = None
        caller = before.call_of(target) if isinstance(node, AnswerNode) else None
        if caller is not None:
            pairs[(caller.id, target)] = None
    for call, answer in pairs:
        call_now, answer_now = _standing(call, after), _standing(answer, after)
        if call_now[0] == "current" and answer_now[0] == "current":
            paired = after.answer_to(call_now[1])
            together = after.unit_of(call_now[1]) is after.unit_of(answer_now[1])
            if together and paired is not None and paired.id == answer_now[1]:
                continue
        elif call_now[0] == answer_now[0] == "dropped" or (
            call_now[0] == "summarized" and call_now == answer_now
        ):
            continue
        yield _say(
            "calls_paired",
            f"call `{call}`",
            f"would stand {call_now[0]} as `{call_now[1]}` and its answer `{answer}` "
            f"{answer_now[0]} as `{answer_now[1]}`",
            "edit a call and its answer together (drop or abstract their whole unit)",
        )


def _standing(node_id: str, view: WorkingView) -> tuple[str, str]:
    """Where a node stands in `view`: ("current" | "summarized" | "dropped", id)."""
    now, via_summary = view.overlay.resolve(node_id)
    if now in view.overlay.dropped:
        return "dropped", now
    if via_summary:
        return "summarized", now
    return ("current" if view.is_current(now) else "dropped"), now
