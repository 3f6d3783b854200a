"""`HistorySummarizer`: abstract a run of old interaction units into one summary node.

Candidate, check, commit: the summarizer's candidate is checked (shorter than what it
replaces, no tool-call syntax, every pinned fact and critical entity kept verbatim, every
sentence of the user's later messages kept, in any language); a refused candidate gets
one retry with instructions that name what was wrong. A retry that still loses only the
user's sentences is repaired (they are appended, quoted); otherwise the deterministic
extractive brief is used instead, and is itself refused if its bound dropped one. A
timeout or a summarizer that raises falls back the same way, and an error's text never
becomes the summary. Input larger than the summarizer's window is split at unit
boundaries, summarized chunk by chunk (map) and the chunk summaries summarized together
(reduce).

```python
proposal = await HistorySummarizer(timeout=30).propose(old_units_nodes, ctx)
```
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

import anyio
from pydantic import JsonValue

from context_graph.errors import ConfigurationError
from context_graph.graph.content import TextPart
from context_graph.graph.ids import make_node_id
from context_graph.graph.native import NativeCompaction
from context_graph.graph.nodes import Node, SummaryNode, UserNode
from processors.base import Abstract, ProcessorContext, Proposal, Scope, Summarizer
from processors.markers import uncut
from processors.redact import strip_signed_secrets
from processors.registry import register_processor
from processors.summarize.brief import parse, tool_lines
from processors.summarize.checks import (
    CandidateCheck,
    check_candidate,
    required_entities,
    tool_names_of,
)
from processors.summarize.extractive import ExtractiveSummarizer, describe_use
from processors.summarize.facts import clip, dedupe
from processors.summarize.lineage import LINE_SOURCES, line_sources
from processors.summarize.providers import (
    Compacted,
    CompactionProvider,
    resolve_provider,
    safeguard_targets,
)
from processors.summarize.room import shorter_plan, summary_room, words_room
from processors.summarize.said import MESSAGE_CHARS, user_sentences
from processors.summarize.targets import Plan, plan_targets
from processors.summarize.updates import is_stale, stale_values

__all__ = ["HistorySummarizer", "summary_room", "words_room"]  # the room's, kept importable here

_MAX_REDUCE_DEPTH = 3


@dataclass(frozen=True, slots=True)
class _Job:
    """Everything one summary needs; built per call (no state on the processor)."""

    plan: Plan
    ctx: ProcessorContext
    required: tuple[str, ...]
    facts: tuple[str, ...]
    tool_names: tuple[str, ...]
    said: tuple[str, ...] = ()
    """The user's sentences every summary must keep (`said.user_sentences`)."""

    @property
    def previous(self) -> str | None:
        return self.plan.previous.text if self.plan.previous is not None else None

    @property
    def uncut(self) -> tuple[Node, ...]:
        """The span with its outputs as they were before distill and truncate cut them.

        The brief reads these: a truncation's middle and the frames a distillation left
        out hold the paths and names the agent meets again (`markers.uncut`).
        """
        graph = self.ctx.graph
        return tuple(uncut(node, graph, graph.__getitem__) for node in self.plan.span)

    def check(self, text: str) -> CandidateCheck:
        """The candidate's verdict, whoever wrote it (a model, a provider, the brief)."""
        return check_candidate(
            text,
            tokens=self.ctx.tokens.count_text(text),
            limit=self.plan.tokens_before,
            required=self.required,
            facts=self.facts,
            tool_names=self.tool_names,
            said=self.said,
        )


class _WindowError(RuntimeError):
    """The input cannot be brought under the summarizer's window."""


def _label(summarizer: object) -> str:
    name = getattr(summarizer, "name", None)
    return name if isinstance(name, str) and name else type(summarizer).__name__


def _describe(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return "timed out"
    return clip(f"{type(exc).__name__}: {exc}", 160)


def _check_options(timeout: float | None, window_tokens: int, keep: Sequence[str]) -> None:
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0
    ):
        msg = f"HistorySummarizer: `timeout` must be seconds > 0 or None, got {timeout!r}"
        raise ConfigurationError(msg)
    if isinstance(window_tokens, bool) or not isinstance(window_tokens, int) or window_tokens < 1:
        msg = f"HistorySummarizer: `window_tokens` must be an int >= 1, got {window_tokens!r}"
        raise ConfigurationError(msg)
    if isinstance(keep, str) or not all(isinstance(k, str) and k.strip() for k in keep):
        msg = "HistorySummarizer: `keep` must be a list of non-empty strings, e.g. ['ABC-1234']"
        raise ConfigurationError(msg)


class HistorySummarizer:
    """Proposes one summary node in place of a run of whole, old interaction units.

    Args:
        summarizer: Writes the candidate; when `None`, the context's summarizer, and
            when that is `None` too, `fallback` (the extractive brief).
        fallback: The deterministic summarizer used when a candidate fails twice, times
            out or raises.
        timeout: Seconds one summarizer call may take; `None` for no limit.
        window_tokens: The most input tokens one summarizer call is given; larger spans
            are split at unit boundaries (map, then reduce).
        keep: Pinned facts: strings every summary must contain verbatim.
        max_entities: At most this many critical entities are required verbatim.
        entities_per_turn: Critical entities required from each user turn, at most.
        provider: A `CompactionProvider`, or its registry name (`openai-compact`,
            `anthropic-compact`, one registered in code), tried before any summarizer;
            on failure or an empty result the extractive brief is used in safeguard
            mode (the most recent units of the span stay unsummarized).
        provider_options: Options the named provider is built with.
    """

    name = "summarize"
    scope: ClassVar[Scope] = "history"

    def __init__(
        self,
        *,
        summarizer: Summarizer | None = None,
        fallback: ExtractiveSummarizer | None = None,
        timeout: float | None = 120.0,
        window_tokens: int = 100_000,
        keep: Sequence[str] = (),
        max_entities: int = 48,
        entities_per_turn: int = 12,
        provider: str | CompactionProvider | None = None,
        provider_options: Mapping[str, JsonValue] | None = None,
    ) -> None:
        if summarizer is not None and not callable(getattr(summarizer, "summarize", None)):
            msg = "HistorySummarizer: `summarizer` must have an async `summarize` method"
            raise ConfigurationError(msg)
        if fallback is not None and not isinstance(fallback, ExtractiveSummarizer):
            msg = "HistorySummarizer: `fallback` must be an ExtractiveSummarizer (or None)"
            raise ConfigurationError(msg)
        _check_options(timeout, window_tokens, keep)
        for option, value in (
            ("max_entities", max_entities),
            ("entities_per_turn", entities_per_turn),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                msg = f"HistorySummarizer: `{option}` must be an int >= 0, got {value!r}"
                raise ConfigurationError(msg)
        self.summarizer = summarizer
        self.fallback = fallback or ExtractiveSummarizer()
        self.timeout = timeout
        self.window_tokens = window_tokens
        self.keep = tuple(keep)
        self.max_entities = max_entities
        self.entities_per_turn = entities_per_turn
        self.provider = resolve_provider(provider, provider_options)

    async def propose(self, targets: Sequence[Node], ctx: ProcessorContext) -> Proposal:
        """Propose one `Abstract` edit for `targets`, or nothing (the note says why)."""
        plan = plan_targets(self.name, targets, ctx)
        if isinstance(plan, str):
            return self._empty(ctx, f"refused: {plan}")
        job = self._job(plan, ctx)
        if self.provider is not None:
            return await self._remote(job, self.provider)
        summarizer = self.summarizer or ctx.summarizer or self.fallback
        label = _label(summarizer)
        if isinstance(summarizer, ExtractiveSummarizer):
            sized, brief = self._sized_brief(job, summarizer)
            return self._finish(sized, brief, label, "extractive", label)
        try:
            text, kind, detail = await self._model(job, summarizer)
        except Exception as exc:
            text, kind, detail = None, "fallback", _describe(exc)
        if text is None:
            note = f"fallback to extractive ({label}: {detail})"
            return self._finish(job, self._brief(job, self.fallback), "extractive", kind, note)
        notes = {"model": f"model ok ({label})", "retry": f"retry ok ({label}; {detail})"}
        note = notes.get(kind, f"repaired ({label}; {detail})")
        return self._finish(job, text, label, kind, note)

    async def _remote(self, job: _Job, provider: CompactionProvider) -> Proposal:
        """The provider's compaction; on any failure, the safeguard brief (never partial)."""
        label = _label(provider)
        result: Compacted | None
        try:
            with anyio.fail_after(self.timeout):
                returned = await provider.compact(
                    strip_signed_secrets(job.plan.span),
                    job.ctx.instructions,
                    [*job.required, *job.facts],
                )
            result, detail = _accepted(returned, job)
        except Exception as exc:
            result, detail = None, _describe(exc)
        if result is None:
            return self._safeguard(job, label, detail or "no result")
        # An opaque artifact is shown to other providers as our own brief of the span.
        text = result.text or self._brief(job, self.fallback)
        note = f"provider ok ({label}{'; ' if detail else ''}{detail})"
        return self._finish(job, text, label, "provider", note, result.native)

    def _safeguard(self, job: _Job, label: str, detail: str) -> Proposal:
        """The extractive brief of the span's older units: the recent ones stay as they are."""
        targets = safeguard_targets(job.plan.previous, job.plan.units)
        plan = plan_targets(self.name, targets, job.ctx)
        if isinstance(plan, str):
            return self._empty(job.ctx, f"provider {label} failed ({detail}); refused: {plan}")
        kept = len(job.plan.units) - len(plan.units)
        note = (
            f"fallback to extractive, safeguard mode ({label}: {detail}; "
            f"{len(plan.units)} of {len(job.plan.units)} units summarized, {kept} kept)"
        )
        safe = self._job(plan, job.ctx)
        return self._finish(safe, self._brief(safe, self.fallback), "extractive", "safeguard", note)

    def _job(self, plan: Plan, ctx: ProcessorContext) -> _Job:
        # What every summary it updates or absorbs carried, oldest first.
        carried = tuple(e for s in plan.summaries for e in _strings(s.meta.get("entities")))
        facts = tuple(f for s in plan.summaries for f in _strings(s.meta.get("pinned_facts")))
        required = required_entities(
            plan.span, carried=carried, per_turn=self.entities_per_turn, limit=self.max_entities
        )
        # A value the user replaced later is no longer a fact the summary must keep.
        messages = _user_messages(plan)
        stale = stale_values(messages)
        required = [entity for entity in required if not is_stale(entity, stale)]
        return _Job(
            plan=plan,
            ctx=ctx,
            required=tuple(required),
            facts=tuple(dedupe([*self.keep, *facts])),
            tool_names=tuple(tool_names_of(plan.span)),
            # The first request is never summarized in a managed session (it stays in
            # the floor, verbatim): the sentences of the user's later messages.
            said=tuple(
                user_sentences(_user_messages(plan, later=True), message_chars=MESSAGE_CHARS)
            ),
        )

    def _sized_brief(self, job: _Job, summarizer: ExtractiveSummarizer) -> tuple[_Job, str]:
        """The brief of `job`, or of fewer units when the target has room for the rest.

        In a run that compacts to its target (`ProcessorContext.to_free`) the pipeline
        hands over the history that makes room for a brief as large as the budget's
        reserve for it; an extractive brief is often much smaller, and the whole span
        would land the request far below the target. The newest units the target has
        room for then stay verbatim (what the agent acts on next), and the brief is
        written again for the shorter span: it is cheap, where a model's summary is not.
        """
        text = self._brief(job, summarizer)
        ctx = job.ctx
        if ctx.to_free is None:
            return job, text
        plan = shorter_plan(job.plan, ctx, ctx.tokens.count_text(text))
        if plan is None:
            return job, text
        shorter = self._job(plan, ctx)
        return shorter, self._brief(shorter, summarizer)

    def _brief(self, job: _Job, summarizer: ExtractiveSummarizer) -> str:
        keep = [*job.required, *job.facts]
        return summarizer.brief(
            job.uncut,
            previous=job.previous,
            instructions=job.ctx.instructions,
            keep=keep,
            max_tokens=summary_room(job.plan, job.ctx, keep),
            words=words_room(job.plan, job.ctx, keep),
            tokens=job.ctx.tokens,
        )

    async def _model(self, job: _Job, summarizer: Summarizer) -> tuple[str | None, str, str]:
        """Candidate, check, one retry: the text (`None` to fall back), the path, a detail."""
        instructions = _instructions(job)
        nodes = await self._fit_window(summarizer, job, job.plan.units, instructions, 0)
        first = await self._call(summarizer, nodes, job.previous, instructions)
        verdict = job.check(first)
        if verdict.ok:
            return first, "model", ""
        retry = "\n\n".join(t for t in (instructions, verdict.retry_instructions()) if t)
        second = await self._call(summarizer, nodes, job.previous, retry)
        again = job.check(second)
        if again.ok:
            return second, "retry", f"first candidate: {verdict.reason()}"
        repaired = _repaired(second, again, job)
        if repaired is not None:
            detail = f"first candidate: {verdict.reason()}; the retry {again.reason()}, appended"
            return repaired, "repaired", detail
        return None, "fallback", f"refused twice: {verdict.reason()}; then {again.reason()}"

    async def _call(
        self, summarizer: Summarizer, nodes: Sequence[Node], previous: str | None, text: str
    ) -> str:
        instructions = text or None
        nodes = strip_signed_secrets(nodes)  # signed thinking cannot be redacted
        with anyio.fail_after(self.timeout):  # no limit when None
            result = await summarizer.summarize(nodes, previous=previous, instructions=instructions)
        if not isinstance(result, str):
            msg = f"summarizer returned {type(result).__name__}, expected str"
            raise TypeError(msg)
        return result

    async def _fit_window(
        self,
        summarizer: Summarizer,
        job: _Job,
        units: Sequence[Sequence[Node]],
        instructions: str,
        depth: int,
    ) -> list[Node]:
        """The nodes for the final call: the span, or its chunk summaries (map step)."""
        flat = [node for unit in units for node in unit]
        chunks = _chunks(units, self.window_tokens, job.ctx)
        if len(chunks) <= 1:
            return flat
        if depth >= _MAX_REDUCE_DEPTH:
            msg = f"input still over the {self.window_tokens:,}-token window after {depth} reduces"
            raise _WindowError(msg)
        partials: list[list[Node]] = []
        for index, chunk in enumerate(chunks, start=1):
            text = await self._call(summarizer, chunk, None, instructions)
            partials.append([_partial(text, index, len(chunks), self.name)])
        return await self._fit_window(summarizer, job, partials, instructions, depth + 1)

    def _finish(
        self,
        job: _Job,
        text: str,
        label: str,
        kind: str,
        note: str,
        native: NativeCompaction | None = None,
    ) -> Proposal:
        """Check the text that would be committed; propose it, or nothing."""
        verdict = job.check(text)
        if not verdict.ok and kind in _BRIEF_PATHS:
            left_out = _oldest_left_out(text, verdict, job)
            if left_out:
                note = (
                    f"{note}; the oldest {left_out} of the user's messages left out whole "
                    "(over their share of the room; expandable)"
                )
                verdict = dataclasses.replace(verdict, lost=())
        if not verdict.ok:
            return self._empty(job.ctx, f"{note}; refused {label} summary: {verdict.reason()}")
        # The hint follows the checks: it names an id, which is no fact of the history.
        hint = job.ctx.expand_hint(job.plan.abstract_ids[0], "the turns this summary stands for")
        node = self._node(job, text if hint is None else f"{text}\n{hint}", label, kind)
        carried = () if job.plan.previous is None else (job.plan.previous,)
        sources = line_sources(text, job.uncut, carried=carried, describe=describe_use)
        node = node.model_copy(update={"meta": {**node.meta, LINE_SOURCES: sources}})
        if native is not None:
            node = node.model_copy(update={"native": native})
        if job.plan.previous is not None:
            note = f"{note}; updates {job.plan.previous.id}"
        return Proposal(
            processor=self.name,
            edits=(Abstract(targets=job.plan.abstract_ids, summary=node),),
            tokens_before=job.plan.tokens_before,
            tokens_after=job.ctx.count(node),
            base_version=job.ctx.graph.version,
            note=note,
        )

    def _node(self, job: _Job, text: str, label: str, kind: str) -> SummaryNode:
        span = job.plan.span
        abstracts = job.plan.abstract_ids
        meta: dict[str, JsonValue] = {
            # Only called once the candidate passed its checks (see `_finish`): the
            # orchestrator's invariant checker requires this mark on every summary.
            "checked": True,
            "summarizer": label,
            "path": kind,
            "entities": list(job.required),
            "pinned_facts": list(job.facts),
        }
        if kind in ("extractive", "fallback", "safeguard"):
            # The extractive brief wrote the text: which of its lines quote tool output.
            # A model's summary is its own paraphrase; nothing in it marks what did.
            meta["tool_lines"] = list[JsonValue](tool_lines(text))
        if job.plan.previous is not None:
            meta["updates"] = job.plan.previous.id
        payload = {"abstracts": list(abstracts), "text": text, "origin": self.name}
        return SummaryNode(
            id=make_node_id("summary", None, payload),
            content=(TextPart(text=text),),
            turn=max(node.turn for node in span),
            timestamp=span[-1].timestamp,
            meta=meta,
            abstracts=abstracts,
            origin=self.name,
        )

    def _empty(self, ctx: ProcessorContext, note: str) -> Proposal:
        return Proposal(processor=self.name, base_version=ctx.graph.version, note=note)


def _user_messages(plan: Plan, *, later: bool = False) -> list[str]:
    """What the user said, oldest first; `later`: the first request (turn 1) left out.

    The previous brief's messages, then the span's: a user turn's text, or the messages
    of a brief the summary absorbs, where that brief stands.
    """
    said: list[str] = []
    for node in (plan.previous, *plan.span):
        if isinstance(node, SummaryNode):
            brief = parse(node.text)
            said += brief.requests if brief is not None else []
        elif isinstance(node, UserNode) and not node.notice and node.text:
            if not (later and node.turn <= 1):
                said.append(node.text)
    return said


#: Heads the user's sentences a model's summary left out, appended to it (`_repaired`).
REPAIR_HEADING = "## The user's words (verbatim)"


#: The problems appending the user's lost sentences may mend.
_REPAIRABLE = frozenset({"lost_user_words", "missing"})


def _repaired(text: str, verdict: CandidateCheck, job: _Job) -> str | None:
    """A model's summary with the user's sentences it lost appended, if that mends it.

    Only for a summary that lost some of them: the identifiers it dropped may be in the
    quoted sentences. `None` when it is still refused with them.
    """
    if "lost_user_words" not in verdict.kinds or not set(verdict.kinds) <= _REPAIRABLE:
        return None
    quoted = "\n".join(f"- {sentence}" for sentence in verdict.lost)
    repaired = f"{text.rstrip()}\n\n{REPAIR_HEADING}\n{quoted}"
    return repaired if job.check(repaired).ok else None


#: The paths on which the extractive brief wrote the summary.
_BRIEF_PATHS = frozenset({"extractive", "fallback", "safeguard"})


def _oldest_left_out(text: str, verdict: CandidateCheck, job: _Job) -> int:
    """How many of the user's oldest messages the brief `text` left out (0: none, or more).

    The brief keeps the user's messages up to their share of the budget (`words_room`)
    and, past it, drops the oldest first and says how many (`(n earlier items
    omitted)`): a long session of many requests at a small budget. Requiring every one
    would refuse every summary, none would land again, and the tool loop would grow in
    the floor until the request was refused. So the sentences of the messages the brief
    says it dropped may be lost (they stay in the record, expandable), as Codex keeps
    only the recent user messages up to a cap; a lost sentence of the newest message
    (which the bound never drops) still refuses it.
    """
    if set(verdict.kinds) != {"lost_user_words"}:
        return 0
    brief = parse(text)
    if brief is None:
        return 0
    earlier = (parse(summary.text) for summary in job.plan.summaries)
    before = sum(b.omitted.get("requests", 0) for b in earlier if b is not None)
    dropped = brief.omitted.get("requests", 0) - before
    if dropped <= 0:
        return 0
    messages = _user_messages(job.plan, later=True)
    # The bound drops whole messages, oldest first, and never the newest (`brief.bound`):
    # a lost sentence of the newest is a loss of another kind.
    newest = set(user_sentences(messages[-1:], message_chars=MESSAGE_CHARS))
    return dropped if messages and newest.isdisjoint(verdict.lost) else 0


def _accepted(result: object, job: _Job) -> tuple[Compacted | None, str]:
    """A provider's result as it may be committed, or `None` and why not.

    A readable summary that lost only the user's sentences is repaired: they are
    appended (the detail says so). An opaque artifact has no text to check.
    """
    if not isinstance(result, Compacted):
        return None, f"returned {type(result).__name__}, expected Compacted"
    if result.empty:
        return None, "empty result"
    if result.text is None:
        return result, ""
    verdict = job.check(result.text)
    if verdict.ok:
        return result, ""
    repaired = _repaired(result.text, verdict, job)
    if repaired is None:
        return None, f"refused its summary: {verdict.reason()}"
    detail = f"its summary {verdict.reason()}, appended"
    return dataclasses.replace(result, text=repaired), detail


def _strings(value: object) -> tuple[str, ...]:
    if not isinstance(value, list | tuple):
        return ()
    return tuple(v for v in value if isinstance(v, str) and v)


def _instructions(job: _Job) -> str:
    """The user's instructions, then what must be kept verbatim."""
    parts = [job.ctx.instructions.strip()] if job.ctx.instructions else []
    if job.required:
        parts.append(
            "Copy these exactly as written wherever they occur: " + ", ".join(job.required)
        )
    if job.facts:
        parts.append("These facts must appear verbatim: " + "; ".join(job.facts))
    if job.said:
        parts.append(
            "Quote these sentences of the user exactly, in their own language: "
            + " | ".join(job.said)
        )
    return "\n".join(p for p in parts if p)


def _chunks(
    units: Sequence[Sequence[Node]], window: int, ctx: ProcessorContext
) -> list[list[Node]]:
    """Consecutive units packed greedily into chunks of at most `window` tokens."""
    chunks: list[list[Node]] = []
    size = 0
    for unit in units:
        tokens = sum(ctx.count(node) for node in unit)
        if chunks and size + tokens <= window:
            chunks[-1].extend(unit)
            size += tokens
        else:
            chunks.append(list(unit))
            size = tokens
    return chunks


def _partial(text: str, index: int, total: int, origin: str) -> SummaryNode:
    """A chunk summary, given to the reduce step as input (never added to the graph)."""
    return SummaryNode(
        id=make_node_id("summary", None, {"part": index, "of": total, "text": text}),
        content=(TextPart(text=text),),
        meta={"part": index, "of": total},
        origin=origin,
    )


register_processor(HistorySummarizer)
