"""The processor contract: targets and a context in, a proposal out, nothing mutated.

A processor reads target nodes (read-only) and a `ProcessorContext`, and returns a
`Proposal`: a list of edits (replace one node, abstract several into one, drop some;
or, only for `context_expand`, restore what a compacted piece stands for), each new
node carrying its lineage, plus the tokens the edits save. It never changes
the graph: the orchestrator checks a proposal against the invariants and applies it,
or rejects it whole.

```python
proposal = await ToolOutputTruncator(max_tokens=2_000).propose(nodes, ctx)
```
"""

from __future__ import annotations

import inspect
import re
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import (
    Annotated,
    Any,
    Literal,
    Protocol,
    TypeAlias,
    TypedDict,
    Unpack,
    runtime_checkable,
)

from pydantic import BaseModel, ConfigDict, Field

from context_graph._keywords import check_keywords
from context_graph.errors import ConfigurationError, ProcessorError
from context_graph.graph.content import ContentPart
from context_graph.graph.context_graph import ContextGraph
from context_graph.graph.ids import content_digest
from context_graph.graph.node_tokens import NodeTokenCache
from context_graph.graph.nodes import AnyNode, Node, SummaryNode, ToolCallNode
from context_graph.graph.units import Unit

__all__ = [
    "Abstract",
    "ContextFields",
    "Drop",
    "Edit",
    "Finding",
    "GraphView",
    "Processor",
    "ProcessorContext",
    "Proposal",
    "Redactor",
    "Replace",
    "Resizable",
    "Restore",
    "Scope",
    "Summarizer",
    "as_redactor",
    "replace_each",
    "replacement_for",
    "run_processor",
    "scope_of",
    "screen_of",
    "while_needed",
]


@runtime_checkable
class Summarizer(Protocol):
    """Writes a summary of some nodes.

    Contract: returns the summary text; never mutates its inputs; raises on failure
    (a failed summary is never committed in place of the history it would replace).
    `previous` is the summary this one updates (rolling summaries), if any.
    """

    async def summarize(
        self, nodes: Sequence[Node], *, previous: str | None, instructions: str | None
    ) -> str:
        """Return a summary of `nodes`, updating `previous` when given."""


class GraphView:
    """Read-only access to the graph for processors: neighbours, lineage, units.

    It exposes queries only; there is no way to add or change anything through it.
    """

    __slots__ = ("_graph",)

    def __init__(self, graph: ContextGraph) -> None:
        self._graph = graph

    def __getitem__(self, node_id: str) -> Node:
        return self._graph[node_id]

    def __contains__(self, node_id: object) -> bool:
        return node_id in self._graph

    def __len__(self) -> int:
        return len(self._graph)

    @property
    def version(self) -> int:
        """The graph's version when this view was taken (changes with every edit)."""
        return self._graph.version

    @property
    def turns(self) -> int:
        """How many user turns the session has had."""
        return self._graph.turns

    def transcript(self) -> tuple[str, ...]:
        """Transcript node ids in order."""
        return self._graph.transcript()

    @property
    def total_tokens(self) -> int:
        """Content tokens of what would be rendered (here: the whole transcript)."""
        return sum(self._graph.tokens(node_id) for node_id in self._graph.transcript())

    def units(self) -> tuple[Unit, ...]:
        """Interaction units in order."""
        return self._graph.units()

    def unit_of(self, node_id: str) -> Unit:
        """The unit holding `node_id`."""
        return self._graph.unit_of(node_id)

    def tokens(self, node_id: str) -> int:
        """A node's content tokens."""
        return self._graph.tokens(node_id)

    def answer_to(self, call_node_id: str) -> Node | None:
        """The answer to a call node, if any."""
        return self._graph.answer_to(call_node_id)

    def call_of(self, answer_node_id: str) -> ToolCallNode | None:
        """The call an answer node answers, if any."""
        return self._graph.call_of(answer_node_id)

    def is_superseded(self, node_id: str) -> bool:
        """Whether a later read of the same file covers this file node."""
        return self._graph.is_superseded(node_id)

    def by_path(self, path: str) -> tuple[str, ...]:
        """File nodes that read `path`, oldest first."""
        return self._graph.by_path(path)

    def targets(self, node_id: str, kind: Any) -> tuple[str, ...]:
        """Older nodes `node_id` points at by edges of `kind`."""
        return self._graph.targets(node_id, kind)

    def sources(self, node_id: str, kind: Any) -> tuple[str, ...]:
        """Newer nodes pointing at `node_id` by edges of `kind`."""
        return self._graph.sources(node_id, kind)


class ContextFields(TypedDict, total=False):
    """The keywords `ProcessorContext.for_graph` takes: the fields besides graph and tokens."""

    budget: int | None
    summarizer: Summarizer | None
    instructions: str | None
    clock: Callable[[], float]
    target: int | None
    expand_hints: bool
    to_free: int | None


@dataclass(frozen=True)
class ProcessorContext:
    """Everything a processor may use besides its targets; per-run state lives here.

    Attributes:
        graph: Read-only access to the graph.
        tokens: Counts tokens (cached); `tokens.count_text(text)`.
        budget: The render budget in tokens, if one is set.
        target: The size in tokens the run aims to bring the view down to (the
            orchestrator's low-water mark, below `budget`), if one is set. A processor
            that sizes what it writes (a summary) aims at it.
        to_free: How many tokens the request is over `target` as the stage starts, in a
            run that compacts to its target (`None` otherwise). A processor that can
            size its edit (how much of an output a cut keeps, how many units a summary
            takes) frees about that much rather than all its settings allow: room the
            budget leaves is kept content, not thrown away.
        summarizer: The summarizer to use, if any.
        instructions: Free-text guidance from the user (`compact("focus on the DB")`).
        clock: Seconds since the epoch; injectable for tests.
        expand_hints: The model can call `context_expand` (the manager's
            `agent_tools`): a placeholder, truncation, distillate or summary a processor
            writes names the id to pass it (`expand_hint`).
    """

    graph: GraphView
    tokens: NodeTokenCache
    budget: int | None = None
    summarizer: Summarizer | None = None
    instructions: str | None = None
    clock: Callable[[], float] = field(default=time.time)
    target: int | None = None
    expand_hints: bool = False
    to_free: int | None = None

    @classmethod
    def for_graph(cls, graph: ContextGraph, **fields: Unpack[ContextFields]) -> ProcessorContext:
        """A context over `graph`, counting with the graph's own token cache.

        Raises:
            TypeError: a keyword is not a field of the context (names it).
        """
        check_keywords("ProcessorContext.for_graph()", fields, ContextFields, explicit=("graph",))
        return cls(graph=GraphView(graph), tokens=graph.token_cache, **fields)

    def count(self, node: Node) -> int:
        """Content tokens of any node, in the graph or new."""
        return self.tokens.count_node(node)

    def expand_hint(self, node_id: str, what: str = "the original") -> str | None:
        """The line that tells the model how to get `what` behind `node_id` back.

        `None` unless `expand_hints` is set: without the tool the model has no way to act
        on it, and what a processor writes stays as it was.
        """
        if not self.expand_hints:
            return None
        return f"[call context_expand with id {node_id} to restore {what}]"

    def without_hint(self, text: str) -> str:
        """`text` without the `expand_hint` line it ends with, if it ends with one.

        A processor that rewrites a compacted piece (truncating a distillate) appends a
        hint of its own: the old one would be said twice. Unless `expand_hints` is set,
        `text` is returned as it is.
        """
        if not self.expand_hints:
            return text
        head, newline, last = text.rpartition("\n")
        return head if newline and _HINT.fullmatch(last) else text


_HINT = re.compile(r"\[call context_expand with id \S+ to restore [^\]\n]*\]")
"""The line `ProcessorContext.expand_hint` writes."""

_FROZEN = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)


class Replace(BaseModel):
    """Replace one node by another that stands for it (`replacement.replaces == target`)."""

    model_config = _FROZEN
    op: Literal["replace"] = "replace"
    target: str
    """The id of the node replaced."""
    replacement: AnyNode
    """The new node; its `replaces` is `target`."""


class Abstract(BaseModel):
    """Stand one new node (a summary) in for several (`summary.abstracts == targets`)."""

    model_config = _FROZEN
    op: Literal["abstract"] = "abstract"
    targets: tuple[str, ...]
    """The ids of the nodes abstracted, in transcript order."""
    summary: AnyNode
    """The new node; its `abstracts` are `targets`."""


class Drop(BaseModel):
    """Leave nodes out of the working view (the pristine record keeps them)."""

    model_config = _FROZEN
    op: Literal["drop"] = "drop"
    targets: tuple[str, ...]
    """The ids of the nodes dropped."""


class Restore(BaseModel):
    """Undo the compaction behind `target`: what it stands for shows as it was.

    `target` is a derived node in the view (a replacement or a summary) or a dropped
    node. Every compaction edit below it is undone, back to the pristine nodes (or to a
    redacted copy: a `safety` edit is never undone), which come back in their units.
    Only a proposal of purpose `restore` holds restores, and nothing else: the one kind of
    proposal that may add tokens (the model asked for the content, `context_expand`).
    """

    model_config = _FROZEN
    op: Literal["restore"] = "restore"
    target: str
    """The id of the derived node to take out of the view, or of a dropped node."""
    whole: bool = True
    """Undo every compaction below `target` (`True`), or only `target` itself: what it
    was made from comes back as it stood then (a summary's units with their outputs
    still masked, say), a smaller piece when the whole does not fit."""


Edit: TypeAlias = Annotated[Replace | Abstract | Drop | Restore, Field(discriminator="op")]


class Proposal(BaseModel):
    """What a processor proposes: edits, and what they save. Applied whole or not at all."""

    model_config = _FROZEN
    processor: str
    """The name of the processor that made it."""
    edits: tuple[Edit, ...] = ()
    """The edits, in order."""
    tokens_before: int = 0
    """Content tokens of every node the edits remove."""
    tokens_after: int = 0
    """Content tokens of every node the edits add."""
    base_version: int | None = None
    """The graph version the processor read (stale proposals are rejected or rebased)."""
    note: str = ""
    """A short human explanation (shown in the audit log)."""
    purpose: Literal["compact", "safety", "restore"] = "compact"
    """Why the edits are made. `safety` edits (secret redaction) only replace nodes;
    they may touch pinned nodes and need not save tokens (a placeholder can be longer
    than a short password), and every other invariant still holds. `restore` edits
    (`Restore` only) bring compacted content back and add tokens."""

    @property
    def tokens_saved(self) -> int:
        """`tokens_before - tokens_after` (negative when a proposal grows the context)."""
        return self.tokens_before - self.tokens_after

    @property
    def empty(self) -> bool:
        """A proposal with no edits: the processor found nothing to do."""
        return not self.edits


@runtime_checkable
class Processor(Protocol):
    """Transforms nodes by proposing edits.

    Contract: `propose(targets, ctx)` returns a `Proposal` (directly or as an awaitable);
    it never mutates `targets`, `ctx` or the graph, and keeps no per-run state on
    `self`. Options are validated when the processor is constructed.
    """

    name: str

    def propose(
        self, targets: Sequence[Node], ctx: ProcessorContext
    ) -> Proposal | Awaitable[Proposal]:
        """Return the edits this processor proposes for `targets`."""


Scope: TypeAlias = Literal["outputs", "history", "preamble", "all"]
"""Which nodes a compaction hands a processor, as it declares in its `scope` attribute.

- `outputs` (the default, for a processor that declares none): tool outputs, file reads
  and sub-agent answers, unpinned; in a run a node trigger started, only those it named.
- `history`: one contiguous span of whole old units (no pinned node, never the last two
  units), for a summarizer that replaces them with one summary; a run a node trigger
  started hands it nothing, and while the view is still over the run's target the stage
  may run again on the next span.
- `preamble`: the harness's notices before the user's first request (SWE-agent's
  demonstration, Gemini CLI's session context), unpinned; in a run a node trigger
  started, only those it named.
- `all`: every unpinned node of the view but system prompts; in a run a node trigger
  started, only those it named.
"""
SCOPES: tuple[Scope, ...] = ("outputs", "history", "preamble", "all")


def scope_of(processor: object) -> Scope:
    """The scope a processor declares (`outputs` when it declares none).

    Raises:
        ConfigurationError: its `scope` is not one of `SCOPES`.
    """
    declared = getattr(processor, "scope", "outputs")
    for scope in SCOPES:
        if declared == scope:
            return scope
    name = getattr(processor, "name", type(processor).__name__)
    msg = f"processor {name!r}: `scope` must be one of {list(SCOPES)}, got {declared!r}"
    raise ConfigurationError(msg)


class Finding(Protocol):
    """One secret a `Redactor` found in a text: its type and where it is."""

    @property
    def type(self) -> str:
        """What it is (`aws_access_key_id`, `jwt`, ...)."""

    @property
    def span(self) -> tuple[int, int]:
        """Its `(start, end)` offsets in the text searched."""


@runtime_checkable
class Redactor(Processor, Protocol):
    """A processor that hides secrets, and that a session uses to screen every new node.

    Contract: `propose` returns a `safety` proposal of redacted copies (never mutating
    its inputs); `secrets(nodes)` returns what `propose` would hide in `nodes` (each
    secret's text -> its type) and changes nothing; `knowing(known)` returns a copy that
    also hides the `known` secrets wherever they appear (a password repeated in a later
    turn without what gave it away); `redact(text, known=...)` returns `text` with
    placeholders and what it found.

    A pipeline stage declares it screens new nodes with `screens_new_nodes = True` (read
    by `screen_of`): the manager then runs it on every node before each render, as
    `redact_secrets=True` does, not only when a compaction runs. `SecretRedactor` is
    the built-in one.
    """

    def secrets(self, targets: Sequence[Node]) -> dict[str, str]:
        """The secrets found in `targets`: each secret's text -> its type."""

    def knowing(self, known: Mapping[str, str]) -> Redactor:
        """A copy that also redacts the `known` secrets (text -> type) wherever they appear."""

    def redact(
        self, text: str, *, known: Mapping[str, str] | None = None
    ) -> tuple[str, Sequence[Finding]]:
        """`text` with its secrets (and the `known` ones) replaced, and what was found."""


_REDACTOR_MEMBERS = ("propose", "secrets", "knowing", "redact")


def as_redactor(processor: object, where: str) -> Redactor:
    """`processor` as a `Redactor`, refused (naming `where`) if it lacks a member.

    Raises:
        ConfigurationError: `processor` has no `name` or lacks one of the methods.
    """
    if isinstance(processor, Redactor):
        return processor
    missing = [m for m in _REDACTOR_MEMBERS if not callable(getattr(processor, m, None))]
    if not isinstance(getattr(processor, "name", None), str):
        missing.insert(0, "name")
    listed = ", ".join(f"`{member}`" for member in missing)
    msg = (
        f"{where}: {processor!r} is not a Redactor: it has no {listed} "
        "(a Redactor has `name`, `propose`, `secrets`, `knowing` and `redact`)"
    )
    raise ConfigurationError(msg)


def screen_of(processor: object) -> Redactor | None:
    """The processor as the screen of new nodes, if it declares `screens_new_nodes = True`.

    Raises:
        ConfigurationError: the declaration is not a bool, or the processor declares it
            screens new nodes but is not a `Redactor` (the message names what it lacks).
    """
    declared = getattr(processor, "screens_new_nodes", False)
    if declared is False:
        return None
    name = getattr(processor, "name", type(processor).__name__)
    if declared is not True:
        msg = f"processor {name!r}: `screens_new_nodes` must be True or False, got {declared!r}"
        raise ConfigurationError(msg)
    return as_redactor(processor, f"processor {name!r} declares `screens_new_nodes`")


@runtime_checkable
class Resizable(Protocol):
    """A processor that cuts each output to a token cap it can be given another of.

    When a request still does not fit after a run, the compactor cuts the outputs of the
    latest step to a common cap with the pipeline's own resizable stage (its policies
    kept), or with the default truncator when the pipeline has none.
    """

    def resized(self, max_tokens: int) -> Processor:
        """The same processor with `max_tokens` as its cap."""


async def run_processor(
    processor: Processor, targets: Sequence[Node], ctx: ProcessorContext
) -> Proposal:
    """Run any processor, sync or async, and check what it returned.

    Raises:
        ProcessorError: the processor raised (chained `from` the cause) or returned
            something other than a `Proposal`.
    """
    name = getattr(processor, "name", type(processor).__name__)
    try:
        outcome = processor.propose(tuple(targets), ctx)
        if inspect.isawaitable(outcome):
            outcome = await outcome
    except ProcessorError:
        raise
    except Exception as exc:
        msg = f"failed on {len(targets)} node(s): {type(exc).__name__}: {exc}"
        raise ProcessorError(name, msg) from exc
    if not isinstance(outcome, Proposal):
        msg = f"returned {type(outcome).__name__}, expected a Proposal"
        raise ProcessorError(name, msg)
    return outcome


def while_needed(
    targets: Sequence[Node],
    ctx: ProcessorContext,
    edit: Callable[[Node, int | None], Node | None],
) -> Iterator[tuple[Node, Node | None]]:
    """Each target with its edit (`None`: left whole), for `replace_each`.

    In a run to a target (`ctx.to_free`), `edit` is told what the run still needs freed,
    the need counts down by what each edit frees, and the targets after it is met are
    left whole. Otherwise every target is edited, told `None`.
    """
    need = ctx.to_free
    for node in targets:
        if need is not None and need <= 0:
            return
        new = edit(node, need)
        if new is not None and need is not None:
            need -= ctx.count(node) - ctx.count(new)
        yield node, new


def replace_each(
    processor: str,
    ctx: ProcessorContext,
    pairs: Iterable[tuple[Node, Node | None]],
    *,
    note: Callable[[int, int, int], str],
    shrink_only: bool = True,
    purpose: Literal["compact", "safety"] = "compact",
) -> Proposal:
    """A proposal that replaces each node by its new copy, with exact token counts.

    Args:
        processor: The processor's name.
        ctx: The context the processor ran with (its counter and graph version).
        pairs: `(original, copy)`; a `None` copy means "leave this node alone".
        note: Writes the note from `(edits, tokens_before, tokens_after)`.
        shrink_only: Skip copies that are not shorter than their original.
        purpose: `compact`, or `safety` for edits that may grow a node (redaction).
    """
    edits: list[Edit] = []
    before = after = 0
    for original, copy in pairs:
        if copy is None:
            continue
        old, new = ctx.count(original), ctx.count(copy)
        if shrink_only and new >= old:
            continue
        edits.append(Replace(target=original.id, replacement=copy))
        before += old
        after += new
    return Proposal(
        processor=processor,
        edits=tuple(edits),
        tokens_before=before,
        tokens_after=after,
        base_version=ctx.graph.version,
        note=note(len(edits), before, after),
        purpose=purpose,
    )


def replacement_for(original: Node, content: Sequence[ContentPart], **updates: object) -> Node:
    """A node of the same kind that stands for `original` with new content.

    The copy keeps what pairing and rendering need (call ids, tool names, paths, error
    flags, and a tool call's position) and links back by `replaces`; its id is derived
    from the original's id and the new content, so the same edit gives the same id in
    any process.
    """
    plain = {
        name: value.model_dump(mode="json") if isinstance(value, BaseModel) else value
        for name, value in updates.items()
    }
    payload = [original.id, [part.model_dump(mode="json") for part in content], plain]
    digest = content_digest(payload)
    # A tool call keeps its position: the id a provider is sent is derived from it. An
    # imported compaction keeps it too: its position says what it stands for, and that
    # it is another tool's summary, not one of ours.
    kept = isinstance(original, ToolCallNode | SummaryNode)
    seq = original.seq if kept else None
    fields = {
        "id": f"{original.id}~{digest}",
        "content": tuple(content),
        "seq": seq,
        "replaces": original.id,
        "abstracts": (),
        **updates,
    }
    replacement: Node = original.model_copy(update=fields)
    return type(original).model_validate(replacement.model_dump())
