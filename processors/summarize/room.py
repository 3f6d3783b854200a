"""How much room a summary has, and how much of the history it needs to take.

`summary_room` sizes the brief from what the budget leaves beside everything it does not
replace; `words_room` is the share the user's own words claim in it. In a run that
compacts to its target, `shorter_plan` leaves out of the span the newest units the
target has room for, when the brief is smaller than the room: they then stay verbatim.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from context_graph.graph.anchors import SUMMARY_HEADER, floor_anchors
from context_graph.graph.nodes import SummaryNode, UserNode
from context_graph.graph.units import Unit
from processors.base import ProcessorContext
from processors.summarize.brief import parse
from processors.summarize.targets import Plan, imported_text

__all__ = ["MESSAGE_OVERHEAD", "shorter_plan", "summary_room", "words_room"]

#: Tokens a rendered message adds around its content, about (role markers, tool-call
#: wrappers): the room is measured in content tokens and must leave space for them.
MESSAGE_OVERHEAD = 8
#: The smallest brief worth writing: the heading, a line of identifiers, the next step.
_MIN_BRIEF = 64
_FREE_SHARE = 0.6
#: What a brief holds besides the user's words and its identifiers, about: its section
#: headings, the "(n earlier items omitted)" lines and the current state and next step,
#: which is cut no shorter than 80 tokens (`brief.bound`).
_BRIEF_FRAME = 192
#: The most of the budget the user's own words may claim in a summary's room: a summary
#: that absorbs earlier requests (`plan_targets`) keeps them up to this much, even when
#: the run's target leaves less (the tool loop after the latest request is summarized
#: next in the same run, and is what gives way).
_USER_SHARE = 0.25


def summary_room(plan: Plan, ctx: ProcessorContext, keep: Sequence[str] = ()) -> int | None:
    """The most tokens the summary may take so that the view lands where the run aims.

    Everything the summary does not replace stays, so the room is the run's target (or,
    when what stays already fills the target, the budget) less what stays. A brief
    larger than that would leave the request over the budget, and the renderer would
    drop the summary whole: better a brief that keeps the identifiers and drops the
    prose. The summary is rendered under `SUMMARY_HEADER`, which its room leaves out.
    The user's words the summary takes (their messages, and those the briefs it updates
    carry) are the exception: the room holds them and the identifiers it must `keep`, up
    to `_USER_SHARE` of the budget, however little the target leaves; a rolling summary
    would otherwise shed the user's requests to make room for a tool loop that the next
    summary of the run takes anyway.
    Never more than what it replaces (a summary must save tokens). `None` without
    a budget: the summarizer's own bound applies.
    """
    if ctx.budget is None:
        return None
    anchored = _anchor_units(ctx.graph.units())
    stays = kept = 0
    for index, node_id, tokens in _staying(plan, ctx):
        stays += tokens
        kept += tokens if index in anchored or ctx.graph[node_id].pinned else 0
    own = _own(ctx)
    free = ctx.budget - stays - own
    room = _MIN_BRIEF
    if ctx.target is not None and ctx.target - stays - own >= _MIN_BRIEF:
        room = ctx.target - stays - own
    elif free >= _MIN_BRIEF:
        room = max(_MIN_BRIEF, int(free * _FREE_SHARE))
    room = max(room, words_room(plan, ctx, keep))
    beside_kept = ctx.budget - kept - own
    if beside_kept >= _MIN_BRIEF:
        # The user's words may take the summary past the target, not past what the
        # budget leaves beside what no stage shrinks and the renderer never drops: a
        # summary over that is dropped whole by the renderer, and every turn it stood
        # for with it (a chat whose system prompt takes most of the budget).
        room = min(room, beside_kept)
    return max(1, min(room, plan.tokens_before - 1))


def _anchor_units(units: Sequence[Unit]) -> frozenset[int]:
    """The positions of the system prompt and of the user turns the render's floor keeps.

    Those are `render.fit`'s first and latest requests and latest user-role unit. The
    work after the latest turn is in the floor too, but the run's later stages shrink it.
    """
    system = {i for i, unit in enumerate(units) if unit.kind == "system"}
    anchors = floor_anchors([unit.kind for unit in units])
    return frozenset(system if anchors is None else system | set(anchors))


def words_room(plan: Plan, ctx: ProcessorContext, keep: Sequence[str] = ()) -> int:
    """The room the user's words and the identifiers to `keep` claim in the summary.

    What they take with the brief's frame, up to `_USER_SHARE` of the budget; 0 without
    a budget or without words of the user's in what the summary takes.
    """
    said = _user_words(plan, ctx) if ctx.budget is not None else 0
    if not said or ctx.budget is None:
        return 0
    listed = ctx.tokens.count_text(", ".join(keep)) if keep else 0
    return min(said + listed + _BRIEF_FRAME, int(ctx.budget * _USER_SHARE))


def _user_words(plan: Plan, ctx: ProcessorContext) -> int:
    """Tokens of what the user said that the summary takes.

    The span's messages, the goal, messages and constraints of the briefs it updates
    or absorbs, and another tool's summary that it takes alone.
    """
    texts = [n.text for n in plan.span if isinstance(n, UserNode) and not n.notice]
    for summary in plan.summaries:
        brief = parse(summary.text)
        if brief is not None:
            texts += [brief.goal, *brief.requests, *brief.constraints]
        elif imported_text(summary) and all(isinstance(n, SummaryNode) for n in plan.span):
            # Another tool's summary taken alone (a continued session's, before its
            # first request): it holds the requests of the conversation it stands for.
            # Everything after it still stays, so the room the budget leaves beside
            # that would be a few dozen tokens; with new material in the span, the
            # room comes from the run's target as for any span.
            texts.append(summary.text)
    return sum(ctx.tokens.count_text(text) for text in texts if text)


def _own(ctx: ProcessorContext) -> int:
    """The summary's message besides its brief: the wrapping, and the header above it."""
    return MESSAGE_OVERHEAD + ctx.tokens.count_text(f"{SUMMARY_HEADER}\n\n")


def _staying(plan: Plan, ctx: ProcessorContext) -> Iterator[tuple[int, str, int]]:
    """Each node a summary of `plan` leaves: its unit's position, its id, its tokens."""
    replaced = set(plan.abstract_ids)
    for index, unit in enumerate(ctx.graph.units()):
        for node_id in unit.node_ids:
            if node_id not in replaced:
                yield index, node_id, ctx.count(ctx.graph[node_id]) + MESSAGE_OVERHEAD


def shorter_plan(plan: Plan, ctx: ProcessorContext, brief: int) -> Plan | None:
    """`plan` without the newest units the run's target leaves room for; `None`: none.

    A summary of `plan` with a brief of `brief` tokens lands `target - stays - brief`
    below the target (`summary_room`'s count); the newest units of the span that fit
    in that slack (less `_MARGIN` of the budget) stay verbatim instead, and the brief
    keeps its size. Every plan keeps the summaries `plan` absorbs (one left after the
    new summary would stand beside it) and at least one unit of new material, and
    leaves out at least `_WORTH` of the budget.
    """
    if ctx.target is None or ctx.budget is None:
        return None
    stays = sum(tokens for _, _, tokens in _staying(plan, ctx))
    slack = ctx.target - stays - _own(ctx) - brief - int(ctx.budget * _MARGIN)
    units = plan.units
    absorbed = [i for i, unit in enumerate(units) if any(_is_summary(n) for n in unit)]
    fresh = next(
        (i for i, unit in enumerate(units) if not all(_is_summary(n) for n in unit)), len(units)
    )
    least = max([fresh, *absorbed]) + 1
    count, left_out = len(units), 0
    while count > least:
        cost = sum(ctx.count(node) + MESSAGE_OVERHEAD for node in units[count - 1])
        if left_out + cost > slack:
            break
        left_out += cost
        count -= 1
    if left_out < ctx.budget * _WORTH:
        return None  # not worth writing the brief again
    kept = units[:count]
    before = sum(ctx.count(node) for unit in kept for node in unit)
    if plan.previous is not None:
        before += ctx.count(plan.previous)
    return Plan(plan.previous, kept, before)


#: What a span sized to the run's target leaves below it, as a share of the budget: the
#: brief of fewer units is written again and may come out a little longer.
_MARGIN = 0.01
#: The least a shorter span must leave verbatim, as a share of the budget, to be worth
#: a second brief (each costs a pass over the span; a long session writes hundreds).
_WORTH = 0.02


def _is_summary(node: object) -> bool:
    return isinstance(node, SummaryNode)
