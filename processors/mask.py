"""Observation masking: old tool output gives way to a one-line placeholder.

`ObservationMasker` replaces a tool result, a file read or a sub-agent's answer by a
short placeholder of the same kind that still answers the same call, once the content
is old (at least `keep_turns` user turns ago), superseded by a later read of the same
file, or (when asked) consumed by a later assistant turn. The placeholder keeps the
tool name and a gist (size, exit code, first error line); when the model can call
`context_expand` (`ProcessorContext.expand_hints`) it also names the id to pass it. The
pristine record keeps the original.

```python
proposal = await ObservationMasker(keep_turns=2).propose(nodes, ctx)
```
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Iterator, Sequence
from typing import ClassVar, Literal, TypeAlias

from context_graph.entities import critical_entities
from context_graph.errors import ConfigurationError
from context_graph.graph.content import ImagePart, TextPart
from context_graph.graph.nodes import ANSWER_KINDS, AnswerNode, FileNode, Node, SubagentResultNode
from processors.base import GraphView, ProcessorContext, Proposal, Replace, Scope, replacement_for
from processors.exit_status import exit_code_of
from processors.registry import register_processor

__all__ = ["MASKABLE_KINDS", "ObservationMasker"]

#: The node kinds the masker may replace: what tools and sub-agents returned.
MASKABLE_KINDS: frozenset[str] = ANSWER_KINDS

Reason: TypeAlias = Literal["superseded", "old", "consumed"]

# Each with a string every match of it holds: an output without that string is not
# searched (a search walks every position of a long output).
_EXIT_PATTERNS = (
    ("<returncode>", re.compile(r"<returncode>\s*(-?\d+)\s*</returncode>")),
    ("[Command finished", re.compile(r"\[Command finished with exit code (-?\d+)\]")),
    (
        "xit ",
        re.compile(r"^\s*(?:Exit code|exit code|Exit status|exit status):? (-?\d+)\s*$", re.M),
    ),
)
_ERROR_LINE = re.compile(
    r"\b[A-Z]\w*(?:Error|Exception)\b|Traceback \(most recent call last\)"
    r"|(?i:\b(?:error|fatal|panic)\b\s*[:\[]|^\s*(?:error|fail(?:ed)?|fatal)\b)",
    re.MULTILINE,
)
# Lines of source that name an error without being one: code, numbered listings, diffs.
_CODE_LINE = re.compile(
    r"^\s*(?:\d+\s*[→:|\t-]|[-+](?=\s)|#|//)"
    r"|\b(?:raise|except|catch|throws?|class|def|import|new|assert)\b"
)
# The unindented line that ends a Python traceback: `pkg.mod.SomeError: message`.
_EXCEPTION_LINE = re.compile(r"^(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?::.*)?\r?$", re.M)
# What every match of `_ERROR_LINE` holds, lowercased: the cheap test that skips its
# scan of an output with none (the scan walks every position of a long output). Under
# IGNORECASE two characters besides `i` and `I` match `i` (U+0130, U+0131, whose
# `lower()` is no `i`): a text holding one is scanned whatever the test says.
_ERROR_WORDS = ("error", "exception", "traceback", "fatal", "panic", "fail")
_OTHER_IS = ("\u0130", "\u0131")
_WORD_CHAR = re.compile(r"\w")
_SPACE_CHAR = re.compile(r"\s")
_GIST_CHARS = 120
# Entities a failed call's placeholder names at most (about 100 tokens).
_ERROR_ENTITIES = 24


class ObservationMasker:
    """Replaces old, superseded or consumed observations by a short placeholder.

    Only tool results, file reads and sub-agent results among the targets are
    considered, never a pinned node. A placeholder answers the same call as the node it
    replaces, so interaction units stay whole. Nothing is masked unless the placeholder
    has fewer tokens than the original.

    Args:
        keep_turns: Keep everything from the last `keep_turns` user turns; a node at
            least that many user turns old is masked. `None` turns age off.
        mask_consumed: Also mask a result once a later assistant turn exists. Off by
            default: the model has read the result, but may still need its details
            (a stack frame, a line number) several steps later.
        mask_superseded: Mask a file read that a later read of the same file covers.
        min_tokens: Leave outputs with fewer content tokens alone: masking them saves
            too little to be worth losing them.
        kinds: The node kinds to consider; a subset of `MASKABLE_KINDS`.
        exclude_tools: Tool names whose output is never masked.

    Raises:
        ConfigurationError: an option is out of range or of the wrong type.
    """

    name = "mask"
    scope: ClassVar[Scope] = "outputs"

    def __init__(
        self,
        *,
        keep_turns: int | None = 3,
        mask_consumed: bool = False,
        mask_superseded: bool = True,
        min_tokens: int = 100,
        kinds: Collection[str] = MASKABLE_KINDS,
        exclude_tools: Collection[str] = (),
    ) -> None:
        if keep_turns is not None:
            keep_turns = _count(
                "keep_turns", keep_turns, minimum=1, hint=" or None to turn age off"
            )
        self.keep_turns = keep_turns
        self.mask_consumed = _flag("mask_consumed", mask_consumed)
        self.mask_superseded = _flag("mask_superseded", mask_superseded)
        self.min_tokens = _count("min_tokens", min_tokens, minimum=0)
        self.kinds = _string_set("kinds", kinds)
        self.exclude_tools = _string_set("exclude_tools", exclude_tools)
        unknown = sorted(self.kinds - MASKABLE_KINDS)
        if unknown or not self.kinds:
            allowed = ", ".join(sorted(MASKABLE_KINDS))
            msg = f"kinds must be a non-empty subset of {{{allowed}}}, got {sorted(self.kinds)}"
            raise ConfigurationError(msg)

    async def propose(self, targets: Sequence[Node], ctx: ProcessorContext) -> Proposal:
        """Propose a placeholder for each target that is due for masking.

        Args:
            targets: Candidate nodes; kinds other than `kinds`, pinned nodes and nodes
                too small to be worth it are skipped.
            ctx: The context; its graph decides age, supersession and consumption.

        Returns:
            One `Replace` per masked node, or an empty proposal.
        """
        order = _Order(ctx.graph, consumed=self.mask_consumed)
        edits: list[Replace] = []
        reasons: dict[str, int] = {}
        before = after = 0
        seen: set[str] = set()
        for node in targets:
            if node.id in seen or not self._eligible(node):
                continue
            seen.add(node.id)
            masked = self._mask(node, ctx, order)
            if masked is None:
                continue
            edit, reason, tokens, masked_tokens = masked
            edits.append(edit)
            before += tokens
            after += masked_tokens
            reasons[reason] = reasons.get(reason, 0) + 1
        why = ", ".join(f"{count} {reason}" for reason, count in sorted(reasons.items()))
        return Proposal(
            processor=self.name,
            edits=tuple(edits),
            tokens_before=before,
            tokens_after=after,
            base_version=ctx.graph.version,
            note=f"masked {len(edits)} observation(s): {why}" if edits else "nothing to mask",
        )

    def _mask(
        self, node: Node, ctx: ProcessorContext, order: _Order
    ) -> tuple[Replace, Reason, int, int] | None:
        """The edit masking `node`, its reason and token counts; `None` to keep it."""
        reason = self._reason(node, ctx.graph, order)
        if reason is None:
            return None
        tokens = ctx.count(node)
        if tokens < self.min_tokens:
            return None
        # A failed call's identifiers (the paths, names and numbers of its traceback) are
        # what the agent needs when it meets the error again: an error's placeholder
        # names them, unless that would not save anything.
        for with_entities in (True, False) if _is_error(node) else (False,):
            text = _placeholder(
                node, tokens, reason, with_entities=with_entities, tool=ctx.expand_hints
            )
            masked = replacement_for(
                node,
                [TextPart(text=text)],
                meta={**node.meta, "masked": {"reason": reason, "tokens": tokens}},
            )
            masked_tokens = ctx.count(masked)
            if masked_tokens < tokens:
                return Replace(target=node.id, replacement=masked), reason, tokens, masked_tokens
        return None

    def _eligible(self, node: Node) -> bool:
        if node.pinned or node.kind not in self.kinds or not isinstance(node, AnswerNode):
            return False
        return node.name is None or node.name not in self.exclude_tools

    def _reason(self, node: Node, view: GraphView, order: _Order) -> Reason | None:
        origin = _origin(node, view)
        if self.mask_superseded and isinstance(node, FileNode):
            if _superseded(view, node) or _superseded(view, origin):
                return "superseded"
        if self.keep_turns is not None and view.turns - node.turn >= self.keep_turns:
            return "old"
        if self.mask_consumed and order.followed_by_assistant(origin.id):
            return "consumed"
        return None


class _Order:
    """Transcript positions, read once per proposal (per-run state stays off `self`)."""

    __slots__ = ("_last_assistant", "_positions")

    def __init__(self, view: GraphView, *, consumed: bool) -> None:
        transcript = view.transcript() if consumed else ()
        self._positions = {node_id: i for i, node_id in enumerate(transcript)}
        self._last_assistant = max(
            (i for i, node_id in enumerate(transcript) if view[node_id].kind == "assistant"),
            default=-1,
        )

    def followed_by_assistant(self, node_id: str) -> bool:
        """Whether an assistant turn comes after `node_id` in the transcript."""
        position = self._positions.get(node_id)
        return position is not None and position < self._last_assistant


def _is_error(node: Node) -> bool:
    return bool(getattr(node, "is_error", False)) and not isinstance(node, FileNode)


def _placeholder(
    node: Node, tokens: int, reason: Reason, *, with_entities: bool = False, tool: bool = False
) -> str:
    """The one-line text that stands in for a masked observation.

    Args:
        node: The node masked.
        tokens: Its content tokens.
        reason: Why it is masked (only `superseded` is spelled out: it tells the model
            that a newer copy is in the context).
        with_entities: Also name the critical entities of the text (at most
            `_ERROR_ENTITIES`), for a failed call.
        tool: The model can call `context_expand`: say so, with the id to pass it.
            Without the tool the placeholder names no id: the model has no way to act on it.

    Returns:
        e.g. `[output of bash masked: 812 lines, 9,340 tokens, exit 1, first error:
        ...]`, or with the tool `[... — call context_expand with id <id> to restore]`.
    """
    text = node.text
    facts = [_plural(len(text.splitlines()), "line"), _plural(tokens, "token")]
    images = sum(isinstance(part, ImagePart) for part in node.content)
    if images:
        facts.append(_plural(images, "image"))
    code = _exit_code(node)
    if code is not None:
        facts.append(f"exit {code}")
    error = None
    if not isinstance(node, FileNode):  # a file's text is content, not a report
        error = _first_error_line(text, is_error=getattr(node, "is_error", False))
    if error:
        facts.append(f"first error: {error}")
    if with_entities:
        entities = critical_entities(text, limit=_ERROR_ENTITIES)
        if entities:
            facts.append("mentions " + " ".join(entities))
    if reason == "superseded":
        facts.append("superseded by a later read")
    how = f" — call context_expand with id {node.id} to restore" if tool else ""
    return f"[{_label(node)} masked: {', '.join(facts)}{how}]"


def _exit_code(node: Node) -> int | None:
    """The exit code a command reported: recorded with the node, else found in its text."""
    code = exit_code_of(node)
    if code is not None:
        return code
    text = node.text
    for needed, pattern in _EXIT_PATTERNS:
        match = pattern.search(text) if needed in text else None
        if match:
            return int(match.group(1))
    return None


def _first_error_line(text: str, *, is_error: bool = False) -> str | None:
    """The first line that looks like an error, squeezed to one short line.

    Source lines that merely mention an error (`raise ValueError(...)`, numbered
    listings, diffs) are skipped; a traceback is represented by the exception line that
    ends it. When the tool flagged an error but no line looks like one, the first
    non-empty line is the best gist there is.
    """
    line = _error_line(text)
    if line is None and is_error:
        line = next((ln for ln in text.splitlines() if ln.strip()), None)
    if line is None:
        return None
    line = " ".join(line.split())
    if len(line) > _GIST_CHARS:
        line = line[: _GIST_CHARS - 1].rstrip() + "…"
    return line or None


def _error_line(text: str) -> str | None:
    """The first line `_ERROR_LINE` finds that is no source line (a traceback's end)."""
    if any(other in text for other in _OTHER_IS):
        return _pick(text, _ERROR_LINE.finditer(text))
    lowered = text.lower()
    if not any(word in lowered for word in _ERROR_WORDS):
        return None  # no match holds none of the words
    if len(lowered) != len(text):  # positions in `lowered` would not be those of `text`
        return _pick(text, _ERROR_LINE.finditer(text))
    return _pick(text, _matches_near_words(text, lowered))


def _pick(text: str, matches: Iterable[re.Match[str]]) -> str | None:
    line = None
    for match in matches:
        candidate = _line_at(text, match.start())
        if _CODE_LINE.search(candidate):
            continue
        line = candidate
        if match.group(0).startswith("Traceback"):
            raised = _EXCEPTION_LINE.search(text, match.end())
            line = raised.group(0) if raised else candidate
        break
    return line


def _matches_near_words(text: str, lowered: str) -> Iterator[re.Match[str]]:
    """The matches `_ERROR_LINE.finditer(text)` gives, tried only next to the words.

    The scan tries every position of the text, slowly; most outputs name an error word
    a few times in many thousand characters. Every match holds one of `_ERROR_WORDS`
    (lowercased, at the same position when lowering keeps the length), and starts at
    the word or before it across word characters only (`FooError`) or whitespace only
    (a line start, then indentation, then `error`). So no match starts before the run of
    word or of space characters that ends at the first word at or after the scan's
    position: the match is tried there, position by position up to the word.
    """
    position = 0
    found = {word: lowered.find(word) for word in _ERROR_WORDS}
    while True:
        for word, at in found.items():
            if 0 <= at < position:
                found[word] = lowered.find(word, position)
        word_at = min((at for at in found.values() if at >= 0), default=-1)
        if word_at < 0:
            return
        start = min(
            _run_start(text, word_at, _WORD_CHAR, position),
            _run_start(text, word_at, _SPACE_CHAR, position),
        )
        for candidate in range(start, word_at + 1):
            match = _ERROR_LINE.match(text, candidate)
            if match is not None:
                yield match
                position = match.end()
                break
        else:
            position = word_at + 1


def _run_start(text: str, end: int, char: re.Pattern[str], floor: int) -> int:
    """Where the run of `char` characters that ends at `end` starts (not before `floor`)."""
    start = end
    while start > floor and char.match(text, start - 1):
        start -= 1
    return start


def _plural(count: int, noun: str) -> str:
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def _line_at(text: str, index: int) -> str:
    start = text.rfind("\n", 0, index) + 1
    end = text.find("\n", index)
    return text[start : end if end != -1 else len(text)]


def _label(node: Node) -> str:
    if isinstance(node, FileNode):
        span = ""
        if node.line_range is not None:
            first, last = node.line_range
            span = f" lines {first}-{last if last is not None else 'end'}"
        return f"file {node.path}{span}"
    if isinstance(node, SubagentResultNode):
        who = node.agent_id or (node.name if isinstance(node.name, str) else None)
        return f"result of sub-agent {who}" if who else "sub-agent result"
    name = node.name if isinstance(node, AnswerNode) else None
    return f"output of {name}" if name else "tool output"


def _origin(node: Node, view: GraphView) -> Node:
    """The transcript node a derived node stands for (itself when it is one)."""
    seen = {node.id}
    while node.seq is None and node.replaces is not None and node.replaces not in seen:
        if node.replaces not in view:
            break
        seen.add(node.replaces)
        node = view[node.replaces]
    return node


def _superseded(view: GraphView, node: Node) -> bool:
    return node.id in view and view.is_superseded(node.id)


def _count(option: str, value: object, *, minimum: int, hint: str = "") -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        msg = f"{option} must be an integer >= {minimum}{hint}, got {value!r}"
        raise ConfigurationError(msg)
    return value


def _flag(option: str, value: object) -> bool:
    if not isinstance(value, bool):
        msg = f"{option} must be True or False, got {value!r}"
        raise ConfigurationError(msg)
    return value


def _string_set(option: str, values: Collection[str]) -> frozenset[str]:
    if isinstance(values, str) or not all(isinstance(v, str) for v in values):
        msg = f"{option} must be a collection of strings (not one string), got {values!r}"
        raise ConfigurationError(msg)
    return frozenset(values)


register_processor(ObservationMasker)
