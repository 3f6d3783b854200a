"""The overflow fallback: a degraded request instead of a refusal.

When even the compacted view does not fit the budget (a system prompt larger than the
budget, an image the floor cannot drop, a huge latest turn), refusing the call stops the
agent. Seed 004's answer is to degrade step by step and fail only at the end; here each
step is a read-only view over the working view, so nothing is recorded, no invariant is
bent, and the next render starts from the full view again:

1. `media`: images and documents become a one-line notice;
2. `outputs`: every tool output (and every harness notice, which is tool output sent in
   the user's role) is cut to its head (`OUTPUT_CHARS`) with a notice;
3. `inputs`: every tool call's arguments longer than `OUTPUT_CHARS` (a file the agent
   wrote, a patch) are cut to their heads with a notice, each argument on its own, so
   the call stays a JSON object with its path and flags;
4. `pinned`: the text of everything the fitter never drops (the system prompt, pinned
   nodes, the first and latest requests, the latest turn with the assistant's steps and
   their outputs, and the arguments of its calls) keeps its head, cut shorter and
   shorter (never below `MIN_HEAD_CHARS`) until the request fits;
5. `steps`: the latest turn's earlier steps (an assistant message with its calls and
   their results, whole) are left out, the newest step kept, and the turn says how many
   went; the heads as long as the budget then allows;
6. `newest`: the newest step goes too, and the turn says that every step so far went
   and which tools the newest called: what is left is the least a call can be answered
   from, the system prompt and the user's requests cut to their heads.

Each request sent this way says so in its text (the notices) and on the bus
(`overflow_fallback`, with the steps taken). When even the shortest heads of the system
prompt and the requests do not fit, the original `BudgetExceededError` stands.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from pydantic import JsonValue

from context_graph.errors import BudgetExceededError
from context_graph.graph.anchors import floor_anchors
from context_graph.graph.content import ContentPart, DocumentPart, ImagePart, TextPart
from context_graph.graph.nodes import Node, ToolCallNode, UserNode
from context_graph.graph.units import Unit
from context_graph.render import RenderResult
from context_graph.render.turns import RenderSource, is_custom_call

__all__ = ["MIN_HEAD_CHARS", "OUTPUT_CHARS", "Overflow", "degrade"]

#: What a tool output keeps in the `outputs` step (seed 004's TOOL_OUTPUT_MAX_CHARS).
OUTPUT_CHARS = 2_000
#: The shortest head the `pinned` step cuts a node to.
MIN_HEAD_CHARS = 200
#: The ratio between one head length the `pinned` step tries and the next.
HEAD_STEP = 1.125
_MEDIA_NOTICE = "[{kind} omitted: the request was over its token budget]"
_CUT_NOTICE = "\n[... {cut:,} characters cut: the request was over its token budget ...]"
_STEPS_NOTICE = (
    "\n[{count} earlier {noun} of this turn omitted (each with its tool calls and their"
    " results){summary}: the request was over its token budget]"
)
_STEPS_SUMMARY = ", and the summary of the steps before them"
_EVERY_STEP_NOTICE = (
    "\n[every step of this turn so far omitted ({count} {noun}, each with its tool calls and"
    " their results; the latest {called}){summary}: the request was over its token budget]"
)
_SUMMARY_NOTICE = (
    "\n[the summary of this turn's earlier steps omitted: the request was over its token budget]"
)
_ANSWERS = frozenset({"tool_result", "file", "subagent_result"})


@dataclass(frozen=True)
class Overflow:
    """A request sent degraded: the steps that made it fit."""

    steps: tuple[str, ...]
    result: RenderResult


class _View:
    """A working view with some nodes shown as degraded copies (a `RenderSource`).

    A copy has an id of its own: the renderer keeps what it made of a node (its
    messages, its count, the system prompt's) by the node's id, which in the engine
    names one content for good. The units named in `hidden` (by their heads) are left
    out whole, each with every node it holds, so no call loses its result.
    """

    def __init__(
        self,
        view: RenderSource,
        copies: Mapping[str, Node],
        step: int,
        hidden: frozenset[str] = frozenset(),
    ) -> None:
        self._view = view
        self._renamed = {
            old: node.model_copy(update={"id": f"{old}~overflow-{step}"})
            for old, node in copies.items()
        }
        for node in self._renamed.values():
            node.__dict__.pop("text", None)
        self._by_id = {node.id: node for node in self._renamed.values()}
        self._original = {node.id: old for old, node in self._renamed.items()}
        self._hidden = hidden
        self._version = hash((view.version, "overflow", step))

    @property
    def version(self) -> int:
        """Another version for every attempt: the renderer caches by it."""
        return self._version

    def _id(self, node_id: str) -> str:
        copy = self._renamed.get(node_id)
        return node_id if copy is None else copy.id

    def units(self) -> tuple[Unit, ...]:
        """The view's units, with the copies' ids in place of the originals'."""
        return tuple(
            Unit(self._id(u.head), u.kind, tuple(map(self._id, u.node_ids)))
            if any(i in self._renamed for i in u.node_ids)
            else u
            for u in self._view.units()
            if u.head not in self._hidden
        )

    def __getitem__(self, node_id: str) -> Node:
        found = self._by_id.get(node_id)
        return found if found is not None else self._view[node_id]

    def answer_to(self, call_node_id: str) -> Node | None:
        # A copied assistant message asks by its copy's id; the view knows the original.
        answer = self._view.answer_to(self._original.get(call_node_id, call_node_id))
        return None if answer is None else self._renamed.get(answer.id, answer)

    def first_call_with_id(self, tool_call_id: str) -> str | None:
        found = self._view.first_call_with_id(tool_call_id)
        return None if found is None else self._id(found)


def _with_content(node: Node, parts: tuple[ContentPart, ...]) -> Node:
    """A copy of `node` (the same id) with other content.

    `model_copy` copies what the node computed and cached from its content (its `text`),
    which would then describe the old content: the copy computes it again.
    """
    copy = node.model_copy(update={"content": parts})
    copy.__dict__.pop("text", None)
    return copy


def _without_media(node: Node) -> Node | None:
    if not any(isinstance(p, ImagePart | DocumentPart) for p in node.content):
        return None
    parts = tuple(
        TextPart(text=_MEDIA_NOTICE.format(kind=p.type))
        if isinstance(p, ImagePart | DocumentPart)
        else p
        for p in node.content
    )
    return _with_content(node, parts)


def _with_text(node: Node, text: str) -> Node:
    """`node` with one text part in place of its first (and its other text parts gone).

    The other parts keep their places: an assistant message's thinking stays before its
    text, where providers that check it want it.
    """
    parts: list[ContentPart] = []
    for part in node.content:
        if not isinstance(part, TextPart):
            parts.append(part)
        elif not any(isinstance(p, TextPart) for p in parts):
            parts.append(TextPart(text=text))
    if not any(isinstance(p, TextPart) for p in parts):
        parts.append(TextPart(text=text))
    return _with_content(node, tuple(parts))


def _head(node: Node, chars: int) -> Node | None:
    """`node` with its text cut to `chars` and a notice; `None` when it is that short.

    A tool call has no text: its arguments are what is cut (`_call_head`).
    """
    if isinstance(node, ToolCallNode):
        return _call_head(node, chars)
    text = node.text
    if len(text) <= chars:
        return None
    return _with_text(node, _cut(text, chars))


def _cut(text: str, chars: int) -> str:
    kept = text[:chars].rstrip()
    return kept + _CUT_NOTICE.format(cut=len(text) - len(kept))


def _size(node: Node) -> int:
    """What the `pinned` step cuts of `node`, in characters: its text, or a call's arguments."""
    return len(node.arguments) if isinstance(node, ToolCallNode) else len(node.text)


def _call_head(node: ToolCallNode, chars: int) -> ToolCallNode | None:
    """`node` with each argument longer than `chars` cut to its head and a notice.

    The arguments stay what they were: a JSON object whose short values (a path, a
    flag) are as sent, or a custom call's raw text. A value that is not text (a nested
    list of edits) becomes the head of its JSON text. The call keeps its signature: a
    Gemini call of the latest turn sent without one is refused, and the overflow cuts
    the latest turn's calls. `None` when nothing is that long.
    """
    parsed = node.parsed_arguments
    if is_custom_call(node) or not isinstance(parsed, dict):
        if len(node.arguments) <= chars:
            return None
        text = _cut(node.arguments, chars)
        arguments = text if is_custom_call(node) else json.dumps({"arguments": text})
    else:
        cut: dict[str, JsonValue] = {}
        for key, value in parsed.items():
            text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
            cut[key] = _cut(text, chars) if len(text) > chars else value
        if cut == parsed:
            return None
        arguments = json.dumps(cut, ensure_ascii=False)
    copy = node.model_copy(update={"arguments": arguments})
    copy.__dict__.pop("parsed_arguments", None)
    return copy


def _nodes(view: RenderSource) -> list[Node]:
    return [view[i] for unit in view.units() for i in unit.node_ids]


def _is_output(node: Node) -> bool:
    """A tool's output: a result, or a harness notice (output sent in the user's role)."""
    return node.kind in _ANSWERS or (isinstance(node, UserNode) and node.notice)


@dataclass(frozen=True)
class _Floor:
    """What the fitter never drops, read off the view's units as `fit` reads them."""

    nodes: tuple[Node, ...]
    """Every node of the floor's units, in order: the text the `pinned` step cuts."""
    turn: Node | None
    """The latest user-role node: the one that says how many steps were left out."""
    earlier_steps: tuple[Unit, ...]
    """The latest turn's units before its newest step (never a pinned one)."""
    newest_step: Unit | None = None
    """The latest turn's newest step (an assistant unit), unless it is pinned."""


def _floor(view: RenderSource) -> _Floor:
    units = view.units()
    pinned = [any(view[i].pinned for i in u.node_ids) for u in units]
    kept = {i for i, p in enumerate(pinned) if p}
    anchors = floor_anchors([u.kind for u in units])
    if anchors is None:
        kept |= {len(units) - 1} if units else set()
        return _Floor(tuple(view[n] for i in sorted(kept) for n in units[i].node_ids), None, ())
    first, request, latest = anchors
    kept |= {first, request, *range(latest, len(units))}
    nodes = tuple(view[n] for i in sorted(kept) for n in units[i].node_ids)
    steps = [i for i in range(latest + 1, len(units)) if units[i].kind == "assistant"]
    earlier = range(latest + 1, steps[-1]) if steps else range(0)
    earlier_steps = tuple(units[i] for i in earlier if not pinned[i])
    newest = units[steps[-1]] if steps and not pinned[steps[-1]] else None
    return _Floor(nodes, view[units[latest].head], earlier_steps, newest)


def degrade(
    view: RenderSource,
    render: Callable[[RenderSource], RenderResult],
    refused: BudgetExceededError,
) -> Overflow:
    """The first degraded view `render` fits, and the steps that made it.

    Raises:
        BudgetExceededError: `refused`, when even the shortest heads do not fit.
    """
    nodes = _nodes(view)
    copies: dict[str, Node] = {}
    steps: list[str] = []
    attempt = 0

    def tried(
        step: str, changed: Mapping[str, Node], hidden: frozenset[str] = frozenset()
    ) -> RenderResult | None:
        nonlocal attempt
        if not changed and not hidden:
            return None
        copies.update(changed)
        if step not in steps:
            steps.append(step)
        attempt += 1
        try:
            return render(_View(view, dict(copies), attempt, hidden))
        except BudgetExceededError:
            return None

    found = tried("media", {n.id: c for n in nodes if (c := _without_media(n)) is not None})
    if found is None:
        outputs = {
            n.id: c
            for n in nodes
            if _is_output(n) and (c := _head(copies.get(n.id, n), OUTPUT_CHARS)) is not None
        }
        found = tried("outputs", outputs)
    if found is None:
        inputs = {
            n.id: c
            for n in nodes
            if isinstance(n, ToolCallNode) and (c := _call_head(n, OUTPUT_CHARS)) is not None
        }
        found = tried("inputs", inputs)
    if found is None:
        floor = _floor(view)
        outputs_cut = dict(copies)
        # The outputs are cut with the floor's text from here on: a latest turn's own
        # result can be what does not fit.
        pinned = _longest_heads(list(floor.nodes), copies, lambda heads: tried("pinned", heads))
        found = None if pinned is None else pinned[0]
        if found is None and floor.turn is not None and floor.earlier_steps:
            found = _without_earlier_steps(floor, floor.turn, outputs_cut, tried)
        newest = floor.newest_step
        if found is None and floor.turn is not None and newest is not None:
            found = _without_every_step(view, floor, newest, floor.turn, outputs_cut, tried)
    if found is None:
        raise refused
    return Overflow(tuple(steps), found)


def _without_earlier_steps(
    floor: _Floor,
    turn: Node,
    copies: Mapping[str, Node],
    tried: Callable[[str, Mapping[str, Node], frozenset[str]], RenderResult | None],
) -> RenderResult | None:
    """The request with the fewest of the latest turn's earlier steps left out.

    The heads are first made as long as the budget allows with every earlier step left
    out: the user's words and the system prompt come before the turn's older steps.
    Then the fewest of the oldest steps go that let the request fit at those heads,
    and push no more of the history before the turn out (found by bisection: a step
    more never makes the request longer). `copies` are the nodes as the steps before
    `pinned` left them. The turn's own node says how many steps were left out: cut to
    its head like the rest, the notice after.
    """
    steps = floor.earlier_steps

    def shown(count: int) -> tuple[list[Node], Callable[[Mapping[str, Node]], RenderResult | None]]:
        return _steps_left_out(floor, turn, steps[:count], _steps_notice(steps[:count]), tried)

    left, with_notice = shown(len(steps))
    every = _longest_heads(left, copies, with_notice)
    if every is None:
        return None
    best, chars = every

    def at_heads(count: int) -> RenderResult | None:
        nodes, attempt = shown(count)
        found = attempt(_heads_of({n.id: copies.get(n.id, n) for n in nodes}, chars))
        return None if found is None or len(found.dropped) > len(every[0].dropped) else found

    low, high = 0, len(steps)  # `high` steps left out fit; `low` did not (pinned failed)
    while high - low > 1:
        middle = (low + high) // 2
        found = at_heads(middle)
        if found is None:
            low = middle
        else:
            best, high = found, middle
    return best


def _without_every_step(
    view: RenderSource,
    floor: _Floor,
    newest: Unit,
    turn: Node,
    copies: Mapping[str, Node],
    tried: Callable[[str, Mapping[str, Node], frozenset[str]], RenderResult | None],
) -> RenderResult | None:
    """The request with every step of the latest turn left out, `newest` too.

    The last resort before a refusal: the model is not shown what its newest call
    returned, only told that it made the call, which serves the agent better than no
    answer at all (a budget of a few hundred tokens beside a long first request and a
    file read in full). The heads are as long as the budget then allows.
    """
    steps = (*floor.earlier_steps, newest)
    called = [
        node.name for node in (view[i] for i in newest.node_ids) if isinstance(node, ToolCallNode)
    ]
    left, with_notice = _steps_left_out(
        floor, turn, steps, _every_step_notice(steps, called), tried, step="newest"
    )
    every = _longest_heads(left, copies, with_notice)
    return None if every is None else every[0]


def _steps_left_out(
    floor: _Floor,
    turn: Node,
    steps: Sequence[Unit],
    notice: str,
    tried: Callable[[str, Mapping[str, Node], frozenset[str]], RenderResult | None],
    step: str = "steps",
) -> tuple[list[Node], Callable[[Mapping[str, Node]], RenderResult | None]]:
    """The floor's nodes left with `steps` gone, and a try of the view without them.

    The try hides the steps' units and puts `notice` after the turn's own text (the
    turn cut to its head like the rest, the notice after).
    """
    hidden = frozenset(u.head for u in steps)
    gone = {i for u in steps for i in u.node_ids}

    def with_notice(heads: Mapping[str, Node]) -> RenderResult | None:
        view = dict(heads)
        head = view[turn.id]
        view[turn.id] = _with_text(head, head.text + notice)
        return tried(step, view, hidden)

    return [n for n in floor.nodes if n.id not in gone], with_notice


def _every_step_notice(units: Sequence[Unit], called: Sequence[str]) -> str:
    """What the latest turn says when every one of its steps went, the newest too."""
    summaries = sum(1 for unit in units if unit.kind == "summary")
    count = len(units) - summaries
    names = ", ".join(dict.fromkeys(called))
    return _EVERY_STEP_NOTICE.format(
        count=count,
        noun="step" if count == 1 else "steps",
        called=f"called {names}" if names else "called no tool",
        summary=_STEPS_SUMMARY if summaries else "",
    )


def _steps_notice(units: Sequence[Unit]) -> str:
    """What the latest turn says of its earlier units left out.

    Steps, and a summary of steps: a summary unit stands for steps, it is not one.
    """
    summaries = sum(1 for unit in units if unit.kind == "summary")
    count = len(units) - summaries
    if not count:
        return _SUMMARY_NOTICE
    return _STEPS_NOTICE.format(
        count=count,
        noun="step" if count == 1 else "steps",
        summary=_STEPS_SUMMARY if summaries else "",
    )


def _longest_heads(
    floor: list[Node],
    copies: Mapping[str, Node],
    tried: Callable[[Mapping[str, Node]], RenderResult | None],
) -> tuple[RenderResult, int] | None:
    """The floor's nodes cut to the longest common head that fits: request and length.

    One head length for all (a node shorter than it stays whole), found by bisection
    between `MIN_HEAD_CHARS` and the longest node: the longest nodes give up the most,
    and the request fills its budget instead of landing far below it. Longer heads may
    not push history out: a head that fits only because the renderer left out more
    turns than at the shortest heads counts as not fitting (the turns the model is
    acting on matter more than the rest of a prompt it has the head of).
    """
    base = {n.id: copies.get(n.id, n) for n in floor}

    def cut(chars: int) -> RenderResult | None:
        return tried(_heads_of(base, chars))

    shortest = cut(MIN_HEAD_CHARS)
    if shortest is None:
        return None
    longest = max((_size(n) for n in base.values()), default=MIN_HEAD_CHARS)
    levels = _head_levels(longest)
    best, low, high = shortest, 0, len(levels)  # levels[low] fits; the whole did not
    while high - low > 1:
        middle = (low + high) // 2
        found = cut(levels[middle])
        if found is None or len(found.dropped) > len(shortest.dropped):
            high = middle
        else:
            best, low = found, middle
    return best, levels[low]


def _heads_of(base: Mapping[str, Node], chars: int) -> dict[str, Node]:
    """Every node of `base` cut to `chars` (those already that short as they are)."""
    heads = {i: c for i, n in base.items() if (c := _head(n, chars)) is not None}
    # Nodes an earlier, shorter try cut go back to the head this try gives them.
    return heads | {i: n for i, n in base.items() if i not in heads}


def _head_levels(longest: int) -> list[int]:
    """The head lengths tried, `MIN_HEAD_CHARS` up, each `HEAD_STEP` times the last.

    A fixed ladder, not any length: the next call (a turn longer) lands on the same
    level until it no longer fits, so the cut prompt stays the same text and the
    provider's cache keeps it.
    """
    levels = [MIN_HEAD_CHARS]
    while levels[-1] < longest:
        levels.append(int(levels[-1] * HEAD_STEP) + 1)
    return levels
