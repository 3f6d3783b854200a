"""The `Distiller`: shorter tool results by rules that know the content type.

```python
proposal = await Distiller(level="medium").propose(nodes, ctx)
```

For each answer node (tool result, file read, sub-agent result; never a pinned one) the
distiller peels the harness's wrapper lines, detects what the body is, applies the rules
of its level and proposes a `Replace` whose text starts with a one-line header such as
`[distilled python source, medium: 1,240 -> 310 tokens]`. At medium and heavy the body
closes with a reserve line naming the entities the rules left out (`_reserve`): error
names always, then the entities a later turn of the agent named (`_references`), then
paths and other identifiers while the budget allows. A result that would not be
shorter is not proposed. Without a fixed `level`, the pressure on the budget picks it:
the transcript's tokens over `ctx.budget` at most 1 is light, at most 3 medium, beyond
that heavy (no budget: light); source code stays light up to `CODE_LIGHT_PRESSURE`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Container, Sequence
from dataclasses import replace
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from context_graph.entities import critical_entities
from context_graph.errors import ConfigurationError
from context_graph.graph.content import ContentPart, TextPart
from context_graph.graph.nodes import AnswerNode, FileNode, Node
from context_graph.tokens.counting import default_counter
from processors.base import (
    ProcessorContext,
    Proposal,
    Scope,
    replace_each,
    replacement_for,
    while_needed,
)
from processors.distill.code import code_rule, distill_code, distill_python, python_rule
from processors.distill.common import (
    LEVELS,
    TARGET_RATIOS,
    Costs,
    Doc,
    Level,
    has_gutter,
    remembered_entities,
    scan_text,
    strip_gutter,
)
from processors.distill.detect import LANGUAGES, ContentType, detect
from processors.distill.distillate import Distillate
from processors.distill.envelope import peel
from processors.distill.json_ import distill_json
from processors.distill.light import light, overdraw
from processors.distill.listings import distill_grep, distill_listing
from processors.distill.logs import distill_log
from processors.distill.memo import remembered
from processors.distill.references import LaterReferences
from processors.distill.reserve import with_reserve
from processors.distill.testruns import distill_tests
from processors.distill.text import distill_plain, plain_rule
from processors.distill.tracebacks import distill_traceback
from processors.markers import DISTILLED_HEADER
from processors.registry import register_processor

__all__ = [
    "CODE_LIGHT_PRESSURE",
    "DEFAULT_MIN_TOKENS",
    "PRESSURE_THRESHOLDS",
    "Distillate",
    "Distiller",
    "detect_content_type",
    "distill_text",
    "distilled_level",
    "level_for_pressure",
]

#: Nodes with fewer content tokens than this are left alone by default.
DEFAULT_MIN_TOKENS = 200

#: `(ratio, level)`: the first level whose ratio bound (tokens / budget) is not exceeded.
PRESSURE_THRESHOLDS: tuple[tuple[float, Level], ...] = ((1.0, "light"), (3.0, "medium"))
#: Source code stays at light up to this pressure where other outputs go to medium: an
#: edit copies the lines it replaces, and the medium outline keeps only signatures.
CODE_LIGHT_PRESSURE = 1.25
_CODE: frozenset[ContentType] = frozenset({"python", "code"})

_HEAD_PATH = re.compile(r"\son (\S+?):?$|^\[File: (\S+)|^The file (\S+) has been")
_HEADER_ALLOWANCE = 20  # tokens a header line costs, set aside from the target
_TOOL_HINTS = {"grep": "grep", "rg": "grep", "glob": "glob", "ls": "glob", "find": "glob"}
_LABELS: dict[str, str] = {
    "json": "JSON",
    "test_output": "test output",
    "traceback": "traceback",
    "grep": "grep output",
    "listing": "directory listing",
    "log": "log",
    "python": "python source",
    "code": "source code",
    "text": "text",
}
_RULES: dict[str, Callable[[Doc], str | None]] = {
    "json": distill_json,
    "test_output": distill_tests,
    "traceback": distill_traceback,
    "grep": distill_grep,
    "listing": distill_listing,
    "log": distill_log,
    "python": distill_python,
    "code": distill_code,
    "text": distill_plain,
}


def level_for_pressure(tokens: int, budget: int | None) -> Level:
    """The level the budget pressure calls for: `tokens / budget` against the thresholds."""
    if budget is None:
        return "light"
    if budget <= 0:
        return "heavy"
    ratio = tokens / budget
    return next((level for bound, level in PRESSURE_THRESHOLDS if ratio <= bound), "heavy")


def distilled_level(text: str) -> Level | None:
    """The level a text was distilled at (read from its header), or None."""
    match = DISTILLED_HEADER.match(text)
    if not match:
        return None
    level = match.group(2)
    return next(known for known in LEVELS if known == level)


def _extension(path: str) -> str | None:
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    return name.rsplit(".", 1)[-1].lower() if "." in name.strip(".") else None


def _hint_of(head: Sequence[str], path: str | None, tool: str | None) -> str | None:
    """The file extension (from `path` or the wrapper's first lines), else the tool's kind."""
    if path:
        return _extension(path)
    for line in head:
        match = _HEAD_PATH.search(line.strip())
        named = match and next((g for g in match.groups() if g), None)
        if named and _extension(named):
            return _extension(named)
    return _TOOL_HINTS.get((tool or "").lower())


def detect_content_type(
    text: str, *, path: str | None = None, tool: str | None = None
) -> ContentType:
    """What `text` is, as `distill_text` sees it (wrapper lines aside)."""
    envelope = peel(text)
    body = list(envelope.body)
    plain = [strip_gutter(line) for line in body] if has_gutter(body) else body
    return detect(plain, _hint_of(envelope.head, path, tool))


def _label(content_type: ContentType, hint: str | None) -> str:
    language = LANGUAGES.get(hint or "")
    if content_type == "code" and language is not None:
        return f"{language} source"
    return _LABELS[content_type]


def _distill_body(lines: list[str], content_type: ContentType, doc: Doc) -> str:
    """The rules' body, then the reserve line naming what it left out (not for JSON)."""
    plain = [strip_gutter(line) for line in lines] if has_gutter(lines) else lines
    if content_type == "json":  # it stays valid JSON
        minified = (light(plain, content_type="json"),)
        doc = replace(doc, lines=minified, plain=minified)
        return _rule(content_type, doc)(doc)
    doc = replace(doc, lines=tuple(lines), plain=tuple(plain))
    entities = critical_entities(scan_text(plain))
    # The reserve runs the rules again at a smaller budget: prepare them once.
    return with_reserve(doc, _rule(content_type, doc), entities, doc.keep)


def _rule(content_type: ContentType, doc: Doc) -> Callable[[Doc], str]:
    """The rules for `doc`'s lines and level, at the budget of the doc they are given.

    Python that does not parse falls back to the outline of code, and a rule that finds
    nothing to keep to the rule of plain text; whether one does depends on the lines
    alone, so the choice is made here, once.
    """
    if content_type in {"python", "code"}:
        rule = python_rule(doc) if content_type == "python" else None
        rule = rule or code_rule(doc)
        return rule if rule is not None else plain_rule(doc)
    if content_type == "text":
        return plain_rule(doc)
    distill = _RULES[content_type]

    def run(budgeted: Doc) -> str:
        distilled = distill(budgeted)
        return distilled if distilled is not None else distill_plain(budgeted)

    return run


def distill_text(
    text: str,
    level: Level,
    *,
    path: str | None = None,
    tool: str | None = None,
    count: Callable[[str], int] | None = None,
    keep: Container[str] = frozenset(),
) -> Distillate:
    """Distill `text` at `level`.

    Args:
        text: The text (a tool result, a file's content...).
        level: `light`, `medium` or `heavy`.
        path: The file the text was read from, if any (its extension is a strong hint).
        tool: The name of the tool that produced it (`Grep`, `Glob` are hints).
        count: Counts tokens; the default offline tokenizer when omitted.
        keep: Entities of `text` to keep before any other at medium and heavy (the
            `Distiller` passes those a later turn of the agent names).
    """
    count = count or default_counter().count
    envelope = peel(text)
    hint = _hint_of(envelope.head, path, tool)
    body = list(envelope.body)
    gutter = has_gutter(body)
    plain = [strip_gutter(line) for line in body] if gutter else body
    content_type = detect(plain, hint)
    before = count(text)
    lines = light(body, content_type=content_type, gutter=gutter).split("\n")
    if level == "light":
        out = "\n".join(lines)
    else:
        wrapped_by = [*envelope.head, *envelope.tail, envelope.glued]
        wrapper = count("\n".join(wrapped_by)) if before else 0
        target = int(before * TARGET_RATIOS[level]) - wrapper - _HEADER_ALLOWANCE
        costs = Costs(max(1.0, len(text) / max(1, before)))
        doc = Doc((), (), level, max(target, 1), costs, keep, remembered_entities())
        out = _distill_body([overdraw(line) for line in lines], content_type, doc)
    wrapped = envelope.wrap(out)
    header, after = _header(_label(content_type, hint), level, before, count(wrapped), count)
    return Distillate(f"{header}\n{wrapped}", content_type, level, before, after)


def _header(
    label: str, level: Level, before: int, body_tokens: int, count: Callable[[str], int]
) -> tuple[str, int]:
    """The header line and the total tokens it states (its own included)."""
    stated = body_tokens
    for _ in range(4):  # the header states its own size: settle the number
        header = f"[distilled {label}, {level}: {before:,} -> {stated:,} tokens]"
        total = count(f"{header}\n") + body_tokens
        if total == stated:
            break
        stated = total
    header = f"[distilled {label}, {level}: {before:,} -> {stated:,} tokens]"
    return header, stated


class _Options(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)
    level: Level | None = None
    min_tokens: int = Field(default=DEFAULT_MIN_TOKENS, ge=0)


class Distiller:
    """Proposes shorter, content-aware versions of tool results, file reads and sub-agent answers.

    Args:
        level: `light`, `medium` or `heavy`; `None` picks it from the budget pressure
            (`level_for_pressure`).
        min_tokens: Nodes with fewer content tokens are left alone.

    Raises:
        ConfigurationError: an option is out of range.
    """

    name = "distill"
    scope: ClassVar[Scope] = "outputs"

    def __init__(self, *, level: Level | None = None, min_tokens: int = DEFAULT_MIN_TOKENS):
        try:
            options = _Options(level=level, min_tokens=min_tokens)
        except ValidationError as exc:
            problem = exc.errors()[0]
            field = ".".join(str(p) for p in problem["loc"]) or "options"
            msg = (
                f"Distiller option `{field}`: {problem['msg']} (got {problem.get('input')!r}); "
                "use level=None | 'light' | 'medium' | 'heavy' and an int min_tokens >= 0"
            )
            raise ConfigurationError(msg) from None
        self._options = options

    @property
    def level(self) -> Level | None:
        """The fixed level, or None when the budget pressure picks it."""
        return self._options.level

    @property
    def min_tokens(self) -> int:
        """Nodes with fewer content tokens are left alone."""
        return self._options.min_tokens

    def level_for(self, ctx: ProcessorContext) -> Level:
        """The level this run uses: the fixed one, or the one the budget pressure calls for."""
        if self.level is not None:
            return self.level
        # The working view's size when the orchestrator runs this, the transcript's otherwise.
        return level_for_pressure(ctx.graph.total_tokens, ctx.budget)

    async def propose(self, targets: Sequence[Node], ctx: ProcessorContext) -> Proposal:
        """Propose a distilled replacement for each eligible target that gets shorter."""
        level = self.level_for(ctx)
        code = self._code_level(level, ctx)
        at = level if code == level else f"{level} (source code at {code})"
        # Light keeps every entity; the others keep first what later turns named.
        later = LaterReferences(ctx.graph) if level != "light" else None
        return replace_each(
            self.name,
            ctx,
            # In a run to a target, the targets after its need is met are left whole.
            while_needed(
                targets, ctx, lambda node, _: self._replacement(node, level, code, ctx, later)
            ),
            note=lambda edits, before, after: (
                f"distilled {edits} node(s) at {at}: {before:,} -> {after:,} tokens"
                if edits
                else f"nothing to distill at {at}"
            ),
        )

    def _code_level(self, level: Level, ctx: ProcessorContext) -> Level:
        """The level for source code in this run (`level` for the other outputs).

        Light where the pressure picked medium for the rest, up to `CODE_LIGHT_PRESSURE`
        (the view at most a quarter over the budget); not with a fixed `level`. An agent
        edits code by copying the lines it replaces, which the medium outline drops (it
        keeps the signatures).
        """
        if self.level is not None or level != "medium" or not ctx.budget:
            return level
        if ctx.graph.total_tokens > CODE_LIGHT_PRESSURE * ctx.budget:
            return level
        return "light"

    def _replacement(
        self,
        node: Node,
        level: Level,
        code: Level,
        ctx: ProcessorContext,
        later: LaterReferences | None,
    ) -> Node | None:
        if not isinstance(node, AnswerNode) or node.pinned or not node.text.strip():
            return None
        done = distilled_level(node.text)
        if done is not None and LEVELS.index(done) >= LEVELS.index(level):
            return None
        source = _original(node, ctx)
        if source is None or ctx.count(node) < self.min_tokens:
            return None
        path = node.path if isinstance(node, FileNode) else None
        if code != level and detect_content_type(source.text, path=path, tool=node.name) in _CODE:
            if done is not None:
                return None  # at the code's level already, or deeper
            level = code
        keep = later.after(node.id) if later is not None else frozenset[str]()
        result = remembered(
            ctx.tokens,
            (source.text, level, path, node.name),
            keep,
            lambda asked: distill_text(
                source.text,
                level,
                path=path,
                tool=node.name,
                count=ctx.tokens.count_text,
                keep=asked,
            ),
        )
        hint = ctx.expand_hint(node.id, "the whole output")
        text = result.text if hint is None else f"{result.text}\n{hint}"
        content = _with_text(node.content, text)
        new = replacement_for(node, content)
        _count_parts_first(ctx, new, text)
        return new if ctx.count(new) < ctx.count(node) else None


def _count_parts_first(ctx: ProcessorContext, new: Node, text: str) -> None:
    """Count a distillate's text from its header and body, whose counts are cached.

    The header line meets the body at a tokenizer seam when the body's first line starts
    with a visible character; the node's countable text (the path's line before it, for
    a file) is then counted without encoding it whole.
    """
    header, _, body = text.partition("\n")
    ctx.tokens.count_pieces((f"{header}\n", body))
    if isinstance(new, FileNode):
        ctx.tokens.count_pieces((f"{new.path}\n", text))


def _original(node: Node, ctx: ProcessorContext) -> Node | None:
    """The node whose text to distill: back through earlier distillations to their source."""
    current = node
    while distilled_level(current.text) is not None:
        if current.replaces is None or current.replaces not in ctx.graph:
            return None
        current = ctx.graph[current.replaces]
    return current


def _with_text(parts: Sequence[ContentPart], text: str) -> list[ContentPart]:
    """`parts` with the text parts replaced by one `text` part where the first one was."""
    out: list[ContentPart] = []
    for part in parts:
        if not isinstance(part, TextPart):
            out.append(part)
        elif not any(isinstance(p, TextPart) for p in out):
            out.append(TextPart(text=text))
    return out


register_processor(Distiller)
