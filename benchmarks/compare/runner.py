"""The replay: every contender, every session, every budget, call by call.

Two passes per (session, contender, budget). The timing pass feeds the events, asks for
a request at every model call, and measures each request (outside the timed spans). The
memory pass replays again under `tracemalloc`, with no measuring, so that tracing does
not distort the times and measuring does not distort the memory.
"""

from __future__ import annotations

import gc
import json
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio

from benchmarks.compare.contenders import Contender, ContenderSpec
from benchmarks.compare.facts import KINDS, MessageLedger, References, references
from benchmarks.compare.probes import PROBE_KINDS, Probes, probes
from benchmarks.compare.sdk_types import payload_shape_problems
from benchmarks.compare.sessions import Session
from benchmarks.compare.tokenizer_clock import TokenizerClock
from context_graph import ContextGraph, Note, SystemPrompt, TiktokenCounter, UserTurn
from context_graph.graph.node_tokens import NodeTokenCache, countable_text
from context_graph.render import Renderer, count_payload
from context_graph.validate.request import validate
from processors import clear_caches


@dataclass(frozen=True)
class CallRow:
    """One model call of one contender."""

    fed: int
    """Events fed before the call."""
    raw_tokens: int
    """The whole history in view, rendered with no budget."""
    tokens: int | None
    """The request's tokens (cl100k_base, OpenAI counting); `None` when refused."""
    over_budget: bool
    our_errors: int
    """Rules of our validator (`context_graph.validate.request`, OpenAI) the request breaks."""
    sdk_errors: int
    """Places where it breaks the `openai` SDK's request types (or is empty)."""
    reference: int
    """Entities the request should hold (see `facts.references`)."""
    kept: int
    """Of those, the ones present verbatim in the request."""
    prefix_reused: bool
    """Whether the request starts with the previous request's tools and messages."""
    time_ns: int
    """Engine time since the previous call: the feeds and this request."""
    rules: tuple[str, ...] = ()
    """The rule codes of our validator the request breaks, each once."""
    by_kind: tuple[tuple[int, int], ...] = ()
    """(reference, kept) for each of `facts.KINDS`: user turns, tool errors, gold facts."""
    reused_tokens: int = 0
    """Tokens of the leading tool definitions and messages equal to the previous
    request's: what a provider's prompt cache can serve (see `benchmarks.compare.dollars`).
    Changed tools reuse nothing: they lead the prompt."""
    probed: tuple[tuple[int, int, int], ...] = ()
    """(active, passed, recoverable) for each of `probes.PROBE_KINDS` (see
    `benchmarks.compare.probes`)."""
    recoverable: int = 0
    """Of the reference entities not in the request, the ones a single `context_expand`
    call on an id the request names would bring back (`Contender.expansions`)."""
    kept_in_context: int = 0
    """Of `kept`, the entities the request holds in context: with what stood beside them
    where they were first seen (`facts.contexts_of`), not only as a bare name."""

    @property
    def refused(self) -> bool:
        return self.tokens is None


@dataclass
class Run:
    """One contender over one session at one budget."""

    contender: str
    family: str
    session: str
    budget_label: str
    budget: int
    rows: list[CallRow] = field(default_factory=list)
    engine_ns: int = 0
    feed_ns: int = 0
    """The part of `engine_ns` spent taking events (ingest, for us)."""
    floor_ns: int = 0
    floor_chars: int = 0
    """The characters the floor tokenizes (every node's countable text, once)."""
    tokenize_ns: int = 0
    """The part of `engine_ns` spent in the token counter (`TokenizerClock`)."""
    tokenize_chars: int = 0
    """The characters the contender had the counter tokenize in its timed spans."""
    feed_tokenize_ns: int = 0
    """The part of `tokenize_ns` spent taking events."""
    task_tokens: int = 0
    """The system prompt and the first request alone, rendered."""
    peak_bytes: int | None = None
    error: str | None = None
    """Why the contender stopped early, if it crashed."""


@dataclass(frozen=True)
class SessionSetup:
    """What every contender's replay of one session is measured against."""

    session: Session
    refs: References
    raw_at_call: dict[int, int]
    floor_ns: int
    floor_chars: int
    task_tokens: int
    """The system prompt and the first request alone: no engine that keeps both can
    send less."""
    ledger: MessageLedger
    cache: NodeTokenCache
    probes: Probes


def setup(session: Session, counter: TiktokenCounter) -> SessionSetup:
    """Reference sets, raw size at every call, and the tokenize-once floor."""
    refs = references(session.events, session.calls, session.facts)
    asked = probes(session.events, session.calls)
    graph = ContextGraph(counter=counter)
    renderer = Renderer(format="openai")
    cache = NodeTokenCache(counter)
    raw: dict[int, int] = {}
    texts: list[str] = []
    for fed, event in enumerate(session.events, start=1):
        ids = graph.add(event)
        texts += [countable_text(graph[i])[0] for i in ids]
        if fed in session.calls:
            raw[fed] = renderer.render(graph).tokens
    return SessionSetup(
        session,
        refs,
        raw,
        _floor(texts),
        sum(map(len, texts)),
        _task_tokens(session, counter),
        MessageLedger(
            tuple(dict.fromkeys([*refs.universe, *asked.universe])),
            _message_counter(cache),
            tuple(dict.fromkeys(c for e in refs.universe for c in refs.contexts.get(e, ()))),
        ),
        cache,
        asked,
    )


def _message_counter(cache: NodeTokenCache) -> Callable[[Any], int]:
    """One message's tokens inside an OpenAI request (the request's priming left out)."""

    def count(message: Any) -> int:
        return count_payload({"messages": [message]}, "openai", cache) - _PRIMING

    return count


def _task_tokens(session: Session, counter: TiktokenCounter) -> int:
    system = [e for e in session.events if isinstance(e, SystemPrompt | Note)]
    first = [e for e in session.events if isinstance(e, UserTurn)][:1]
    graph = ContextGraph(counter=counter)
    graph.ingest([*system, *first])
    return Renderer(format="openai").render(graph).tokens


def _floor(texts: list[str]) -> int:
    """Tokenizing every node's countable text once with a fresh counter: best of 3."""
    best: int | None = None
    for _ in range(3):
        counter = TiktokenCounter()
        gc.collect()
        start = time.perf_counter_ns()
        for text in texts:
            counter.count(text)
        elapsed = time.perf_counter_ns() - start
        best = elapsed if best is None else min(best, elapsed)
    return best or 0


_PRIMING = 3
"""Tokens OpenAI counts once per request for the reply's priming (as the renderer does)."""


def _shared_prefix(previous: list[str], current: list[str]) -> int:
    """How many leading keys (the tools', then each message's) `current` shares with
    `previous`."""
    shared = 0
    for before, now in zip(previous, current, strict=False):
        if before != now:
            break
        shared += 1
    return shared


class _Scorer:
    """Measures the requests of one run, call by call (never inside a timed span)."""

    def __init__(self, ctx: SessionSetup, contender: Contender, budget: int) -> None:
        self._ctx = ctx
        self._contender = contender
        self._budget = budget
        self._previous: list[str] | None = None

    def score(self, fed: int, native: Any | None, elapsed: int) -> CallRow:
        ctx = self._ctx
        reference = ctx.refs.at_call.get(fed, frozenset())
        raw = ctx.raw_at_call[fed]
        if native is None:
            by_kind = self._by_kind(reference, frozenset())
            return CallRow(
                fed,
                raw,
                None,
                False,
                0,
                0,
                len(reference),
                0,
                False,
                elapsed,
                (),
                by_kind,
                probed=self._probed(fed, frozenset(), frozenset()),
            )
        payload = self._contender.payload(native)
        messages = payload.get("messages") or []
        facts = [ctx.ledger.facts(m) for m in messages]
        present: set[str] = set()
        for fact in facts:
            present.update(fact.entities)
        tokens = count_payload(payload, "openai", ctx.cache)
        # The tool definitions lead the prompt (the providers cache tools, then system,
        # then messages), so a request whose tools changed reuses nothing of the last one.
        tools = payload.get("tools")
        lead_key = json.dumps(tools, sort_keys=True) if tools else ""
        lead_tokens = 0
        if tools:
            bare = {key: value for key, value in payload.items() if key != "tools"}
            lead_tokens = tokens - count_payload(bare, "openai", ctx.cache)
        keys = [lead_key, *(fact.key for fact in facts)]
        previous, self._previous = self._previous, keys
        shared = _shared_prefix(previous or [], keys)
        reachable = self._reachable(native)
        violations = validate(payload, "openai")
        return CallRow(
            fed=fed,
            raw_tokens=raw,
            tokens=tokens,
            over_budget=tokens > self._budget,
            our_errors=len(violations),
            sdk_errors=len(payload_shape_problems(payload))
            + sum(len(f.sdk_problems) for f in facts),
            reference=len(reference),
            kept=len(reference & present),
            prefix_reused=previous is not None and keys[: len(previous)] == previous,
            time_ns=elapsed,
            rules=tuple(sorted({v.rule for v in violations})),
            by_kind=self._by_kind(reference, reference & present),
            reused_tokens=(lead_tokens if shared else 0)
            + sum(fact.tokens for fact in facts[: max(0, shared - 1)]),
            probed=self._probed(fed, present, reachable),
            recoverable=len((reference - present) & reachable),
            kept_in_context=self._in_context(reference & present, present),
        )

    def _in_context(self, kept: frozenset[str] | set[str], present: set[str]) -> int:
        """How many of the `kept` entities the request holds with one of their contexts."""
        contexts = self._ctx.refs.contexts
        return sum(1 for e in kept if any(c in present for c in contexts.get(e, (e,))))

    def _reachable(self, native: Any) -> frozenset[str]:
        """The entities one `context_expand` call on a named id would bring back."""
        expansions = getattr(self._contender, "expansions", None)
        if expansions is None:
            return frozenset()
        found: set[str] = set()
        for text in expansions(native).values():
            found |= self._ctx.ledger.entities_in(text)
        return frozenset(found)

    def _probed(
        self, fed: int, present: frozenset[str] | set[str], reachable: frozenset[str]
    ) -> tuple[tuple[int, int, int], ...]:
        active = self._ctx.probes.at_call.get(fed, ())
        rows = []
        for kind in PROBE_KINDS:
            mine = [p.answer for p in active if p.kind == kind]
            passed = [a for a in mine if a in present]
            rows.append(
                (
                    len(mine),
                    len(passed),
                    sum(1 for a in mine if a not in present and a in reachable),
                )
            )
        return tuple(rows)

    def _by_kind(
        self, reference: frozenset[str], kept: frozenset[str] | set[str]
    ) -> tuple[tuple[int, int], ...]:
        kind = self._ctx.refs.kind
        return tuple(
            (
                sum(1 for e in reference if kind[e] == name),
                sum(1 for e in kept if kind[e] == name),
            )
            for name in KINDS
        )


async def _timed_replay(run: Run, ctx: SessionSetup, contender: Contender) -> None:
    scorer = _Scorer(ctx, contender, run.budget)
    items = contender.prepare(ctx.session.events)
    gc.collect()
    since = 0
    clock = time.perf_counter_ns
    with TokenizerClock() as tokenizer:
        for fed, item in enumerate(items, start=1):
            start, before = clock(), tokenizer.reading()
            await contender.feed(item)
            elapsed = clock() - start
            run.feed_tokenize_ns += _add_tokenizing(run, before, tokenizer.reading())
            since += elapsed
            run.feed_ns += elapsed
            if fed not in ctx.session.calls:
                continue
            await contender.tune(run.budget)  # harness work: neither timed nor tokenizing
            start, before = clock(), tokenizer.reading()
            native = await contender.request(run.budget)
            since += clock() - start
            _add_tokenizing(run, before, tokenizer.reading())
            run.rows.append(scorer.score(fed, native, since))
            run.engine_ns += since
            since = 0
    run.engine_ns += since


def _add_tokenizing(run: Run, before: tuple[int, int], after: tuple[int, int]) -> int:
    """Add one timed span's tokenizing to `run`; return its nanoseconds."""
    spent = after[0] - before[0]
    run.tokenize_ns += spent
    run.tokenize_chars += after[1] - before[1]
    return spent


async def _traced_replay(ctx: SessionSetup, contender: Contender, budget: int) -> int:
    items = contender.prepare(ctx.session.events)
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        native: Any = None
        for fed, item in enumerate(items, start=1):
            await contender.feed(item)
            if fed in ctx.session.calls:
                await contender.tune(budget)
                native = None  # the previous request is gone when the next is made
                native = await contender.request(budget)
        del native
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def replay(
    spec: ContenderSpec,
    ctx: SessionSetup,
    budget_label: str,
    budget: int,
    counter: TiktokenCounter,
    *,
    memory: bool,
) -> Run:
    """Both passes of one contender over one session at one budget."""
    session = ctx.session
    run = Run(spec.name, session.family, session.label, budget_label, budget)
    run.floor_ns = ctx.floor_ns
    run.floor_chars = ctx.floor_chars
    run.task_tokens = ctx.task_tokens
    try:
        # Each replay starts as in a new process: what an earlier replay of the same
        # session (or the reference sets) left in the process-wide memos is forgotten.
        clear_caches()
        anyio.run(_timed_replay, run, ctx, spec.make(budget, counter))
        if memory:
            clear_caches()
            run.peak_bytes = anyio.run(_traced_replay, ctx, spec.make(budget, counter), budget)
    except Exception as exc:  # a crashing peer is reported, not fatal to the benchmark
        run.error = f"{type(exc).__name__}: {exc}"[:300]
    return run


def _warm_up(
    specs: list[ContenderSpec],
    sessions: list[Session],
    budget_labels: tuple[str, ...],
    counter: TiktokenCounter,
) -> None:
    """One untimed replay of the smallest session per contender: libraries import some
    modules on first use, which would otherwise be timed in the first session."""
    if not sessions:
        return
    smallest = min(sessions, key=lambda s: len(s.events))
    ctx = setup(smallest, counter)
    label, budget = next(iter(smallest.budgets(budget_labels).items()))
    for spec in specs:
        replay(spec, ctx, label, budget, counter, memory=False)


def replay_all(
    specs: list[ContenderSpec],
    sessions: list[Session],
    budget_labels: tuple[str, ...],
    *,
    memory: bool,
    progress: Callable[[str], None],
) -> list[Run]:
    """Every contender over every session at every budget."""
    counter = TiktokenCounter()
    runs: list[Run] = []
    _warm_up(specs, sessions, budget_labels, counter)
    # Everything loaded so far (the libraries, the sessions) stays alive: moved out of the
    # collector's sight for the replay, so the collection before each pass costs little.
    gc.collect()
    gc.freeze()
    try:
        for number, session in enumerate(sessions, start=1):
            started = time.perf_counter()
            ctx = setup(session, counter)
            for label, budget in session.budgets(budget_labels).items():
                for spec in specs:
                    runs.append(replay(spec, ctx, label, budget, counter, memory=memory))
            progress(
                f"[{number}/{len(sessions)}] {session.family}/{session.label}: "
                f"{len(session.events)} events, {len(session.calls)} calls, "
                f"{time.perf_counter() - started:.1f}s"
            )
    finally:
        gc.unfreeze()
    return runs
