"""`ContextManager`: the one object a user holds.

It keeps the pristine record (`raw`), the working projection the model is shown
(`working`) and one renderer per format (so the render cache works across calls). On
every ingest and before each render it evaluates the triggers; when one fires, or the
request would not fit the budget, it runs the pipeline, cheapest stage first, until the
rendered request fits.

It is composed of collaborators its constructor builds once, and its public methods
choose what to do and hand the work to them: the frozen `ManagerOptions`, a
`RendererCache` (and the calibration), the `SecretScreen` (redaction), the `Compactor`
(triggers and runs, one at a time, in a `RunMode`), the `BackgroundRunner` (`async
with`), the `Expander` (`context_expand`, and its pins), the `CallLedger` (what was sent,
the usage reported) and the `ProposalCounters`. Each keeps the state it changes; the
`StateKeeper` gathers it for the session store (`StateOwner`).

```python
manager = ContextManager("anthropic", 50_000)  # the `coding` policy, or policy=...
manager.add_system("You are a careful coding agent.")
manager.add_user("Fix the failing test in tests/test_io.py.")
result = await manager.render()  # or manager.render_sync() in blocking code
client.messages.create(model=..., max_tokens=..., **result.payload)
manager.add_response(response)  # ingests the reply, reports its usage (`stats().usage`)
```

Inside `async with manager:` compaction that is due but not yet needed (a soft trigger:
the request still fits) runs in the background, with a time limit, while the agent goes
on ingesting and rendering; a request that does not fit waits for it (see `render`).

One thread uses the manager at a time (`orchestrator.sync_bridge`): every public method
holds its `ManagerLock`, which the tasks of one event loop share and another thread waits
for. The `*_sync` twins work in any thread, a running event loop's included.
"""

from __future__ import annotations

import dataclasses
import enum
import math
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any, Final, Self, TypeVar, Unpack

from pydantic import BaseModel, ConfigDict

import orchestrator._own  # noqa: F401  (checks the packages when __init__.py was replaced)
from context_graph._keywords import check_keywords
from context_graph.errors import BudgetExceededError, ConfigurationError, GraphError
from context_graph.formats.wires import DEFAULT_FORMAT
from context_graph.graph.adders import EventAdders
from context_graph.graph.context_graph import ContextGraph
from context_graph.graph.event_fields import AssistantFields
from context_graph.graph.events import AgentEvent, coerce_events
from context_graph.graph.nodes import Node, SummaryNode
from context_graph.graph.sdk_replies import read_response
from context_graph.models import model_budget, warn_no_budget
from context_graph.render import RenderResult, RenderSource, count_payload
from context_graph.render.tools import ToolSpec
from context_graph.tokens.counting import ProviderFormat, TokenCounter
from context_graph.tokens.usage import Usage, UsageTotals
from context_graph.urls import restore_urls, url_map
from orchestrator.agent_tools.expander import Expander
from orchestrator.agent_tools.offer import ToolOffer
from orchestrator.agent_tools.runner import AgentToolRunner
from orchestrator.agent_tools.specs import agent_tool_specs
from orchestrator.bus import EventBus
from orchestrator.compaction.background import BackgroundRunner
from orchestrator.compaction.compactor import Compactor
from orchestrator.compaction.continuation import Continuation
from orchestrator.compaction.hooks import CompactionHooks
from orchestrator.compaction.overflow import degrade
from orchestrator.compaction.pipeline import PipelineRun
from orchestrator.compaction.plan import RunMode
from orchestrator.compaction.preamble import fits_leaving_out_preamble
from orchestrator.compaction.renderers import CallRenderer, RendererCache, RequestRenderer
from orchestrator.compaction.screen import SecretScreen
from orchestrator.counters import ProposalCounters
from orchestrator.ledger import CallLedger
from orchestrator.persistence import SessionStore, open_store
from orchestrator.persistence.fork import (
    check_fork_point,
    cut_journal,
    fork_store,
    journal_of,
    write_fork,
)
from orchestrator.persistence.manager_state import StateKeeper
from orchestrator.persistence.memory import MemoryRecord
from orchestrator.policy import DEFAULT_POLICY, Policy, PolicyLike, as_policy
from orchestrator.policy.resolved import (
    ManagerOptions,
    check_batch,
    check_budget,
    check_format,
    check_model,
    check_sent_beside,
    check_tools,
    default_pipeline,
    resolve_options,
)
from orchestrator.sync_bridge import (
    ManagerLock,
    call_blocking,
    exclusive,
    exclusive_async,
    run_async,
)
from orchestrator.withdrawal import Withdrawer
from orchestrator.working.buffer import WorkingGraph
from processors.base import Redactor
from processors.summarize.lineage import sources_of

__all__ = ["KEEP", "ContextManager", "Keep", "ManagerStats", "default_pipeline"]

_Client = TypeVar("_Client")
_Manager = TypeVar("_Manager", bound="ContextManager")
_T = TypeVar("_T")


class Keep(enum.Enum):
    """The type of `KEEP`, so an option of `fork` can be typed `int | Keep | None`."""

    KEEP = "keep"


KEEP: Final = Keep.KEEP
"""What an option of `ContextManager.fork` left unsaid is: the fork keeps this manager's
value. `None` then says "none" wherever the constructor takes `None` (no budget, no
tools, the default counter, no model)."""


def _kept(value: _T | Keep, current: _T) -> _T:
    """`value`, or `current` when `value` is `KEEP`."""
    return current if isinstance(value, Keep) else value


class ManagerStats(BaseModel):
    """A manager's figures at one moment."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    raw_tokens: int
    """Content tokens of the pristine record's transcript."""
    working_tokens: int
    """Content tokens of the working view."""
    units: int
    """Interaction units in the working view."""
    proposals_applied: int
    """Proposals applied since the manager was made."""
    proposals_rejected: int
    """Proposals refused, plus processor runs that failed."""
    last_render_tokens: int | None
    """Tokens of the last rendered request (`None` before the first render)."""
    last_render_timed_out: bool
    """`compaction_timeout` cut short the compaction the last render ran; it rendered
    what fit without it."""
    usage: UsageTotals = UsageTotals()
    """The provider's usage of the session's calls, summed: prompt, completion, cached
    and cache-written tokens, and how many calls reported it (`report_usage` with a
    `Usage`, which `add_response`, the wrapped clients and the gateway give it)."""
    cache_hit_rate: float | None = None
    """The session's prompt-cache hit rate: cached input tokens over input tokens
    (`None` before any call's usage was reported)."""


@dataclasses.dataclass(frozen=True, slots=True)
class _Construction:
    """What a manager was made with (its store aside): what `open` checks, `fork` reuses."""

    format: ProviderFormat
    budget: int | None
    policy: Policy
    tools: Sequence[Any] | None
    agent_tools: bool | Sequence[str]
    counter: TokenCounter | None
    clock: Callable[[], float]
    model: str | None

    def resolve(self) -> ManagerOptions:
        """The options checked (`ConfigurationError` naming the first bad one)."""
        return resolve_options(
            self.policy,
            format=self.format,
            budget=self.budget,
            counter=self.counter,
            clock=self.clock,
            tools=self.tools,
            agent_tools=self.agent_tools,
            model=self.model,
        )

    def updated(
        self,
        *,
        format: ProviderFormat | Keep,
        budget: int | Keep | None,
        policy: Policy | Keep,
        tools: Sequence[Any] | Keep | None,
        agent_tools: bool | Sequence[str] | Keep,
        counter: TokenCounter | Keep | None,
        clock: Callable[[], float] | Keep,
        model: str | Keep | None,
    ) -> _Construction:
        """These options with the ones given (not `KEEP`) in their place; `None` is a value."""
        return _Construction(
            format=_kept(format, self.format),
            budget=_kept(budget, self.budget),
            policy=_kept(policy, self.policy),
            tools=_kept(tools, self.tools),
            agent_tools=_kept(agent_tools, self.agent_tools),
            counter=_kept(counter, self.counter),
            clock=_kept(clock, self.clock),
            model=_kept(model, self.model),
        )

    def make(self, cls: type[_Manager], store: SessionStore | None) -> _Manager:
        """A manager of class `cls` made with these options and `store`."""
        return cls(
            self.format,
            self.budget,
            policy=self.policy,
            tools=self.tools,
            agent_tools=self.agent_tools,
            store=store,
            counter=self.counter,
            clock=self.clock,
            model=self.model,
        )


class ContextManager(EventAdders):
    """Feeds agent events into a context graph and renders a request that fits.

    Args:
        format: The default provider format: `openai`, `anthropic` or `gemini`.
        budget: The default token budget of a render. `None`: the usable window of
            `model` (`context_graph.models`; an unknown model gets 108,000 tokens and
            one `UnknownModelWarning`), or with no model no limit, which a render warns
            about once per process (`NoBudgetWarning`: nothing is cut to fit).
        model: The model the requests are for, such as `claude-sonnet-5`: it sets the
            budget when `budget` is not given, and with the policy's `cache_breakpoints`
            a mark goes only where the prefix is as long as the model caches.
        policy: How the manager compacts: a `Policy`, a named policy (`coding`,
            `service`, `chat`) or the path of a TOML policy file; `coding` by default
            (`orchestrator.policy`: triggers, pipelines, summarizer, `compact_to`,
            guards, time limits, redaction, cache marks, expand pins, auto-continue).
        counter: The token counter; the offline tiktoken counter by default.
        clock: Seconds since the epoch, for the audit log; injectable for tests.
        tools: The tool definitions every request carries (OpenAI, Anthropic or Gemini
            function tools, or `ToolSpec`s; read once, order kept): each render puts
            them in its format's `tools` field and counts them inside the budget, and
            `report_usage` compares the provider's count with that whole request.
            `render(tools=...)` sends another set for one call.
        store: A `SessionStore` to resume the session from and keep it in (`open`
            gives the SQLite one); restored here, closed with the manager (`close`).
        agent_tools: Tools the model can call, added after `tools` to every request
            and run by `handle_tool_call`: `True` for `context_expand` (bring back the
            content a placeholder names by its id), or a list of names, `("expand",
            "compact")` to add `context_compact` (compact now). With `context_expand`
            every masked, truncated, distilled or summarized piece names the id to pass.
            A tool of `tools` may not take one of their names.

    Raises:
        ConfigurationError: an option is invalid.
        StoreCorruptError: the store's journal or state does not load.
    """

    def __init__(
        self,
        format: ProviderFormat = DEFAULT_FORMAT,
        budget: int | None = None,
        *,
        policy: PolicyLike = DEFAULT_POLICY,
        tools: Sequence[Any] | None = None,
        agent_tools: bool | Sequence[str] = False,
        store: SessionStore | None = None,
        counter: TokenCounter | None = None,
        clock: Callable[[], float] = time.time,
        model: str | None = None,
    ) -> None:
        given = _Construction(
            format=format,
            budget=budget,
            policy=as_policy(policy),
            tools=tools,
            agent_tools=agent_tools,
            counter=counter,
            clock=clock,
            model=model,
        )
        self._given = given  # what a fork is made with
        self._options = options = given.resolve()
        # Without a store the record keeps the journal in memory, for `fork`.
        self._record = MemoryRecord(options.clock)
        session = None if store is None else store.restore(clock=options.clock)
        if session is None:
            self._raw = ContextGraph(counter=options.counter, journal=self._record)
            self._working = WorkingGraph(self._raw, clock=self._record.clock, journal=self._record)
        else:
            self._raw, self._working = session.raw, session.working
        self._store = store
        self._lock = ManagerLock()
        self._bus = EventBus(sender=self)
        self._keeper = keeper = StateKeeper(store)
        self._counters = counters = ProposalCounters()
        self._ledger = CallLedger(self._raw)
        self._renderers = RendererCache(
            refit_to=options.compact_to,
            cache_breakpoints=options.cache_breakpoints,
            tools=options.tools,
            model=options.model,
        )
        self._screen = SecretScreen(self._working, self._bus, options.redactor, counters)
        self._offer = ToolOffer(options.agent_tools, self._working)
        self._hooks = CompactionHooks(self._working, self._bus, on_ingest=self._flushed)
        self._continuation = Continuation(self._bus, enabled=options.auto_continue)
        expander = Expander(self._working, counters, keeper, self._bus, options, self._renderers)
        self._compactor = Compactor(
            self._working,
            self._bus,
            options,
            keeper,
            self._screen,
            counters,
            unsent=lambda: self._ledger.unsent,
            held=expander.pins.held,
            hints=self._offer.hints,
            hooks=self._hooks,
            continuation=self._continuation,
        )
        self._background = BackgroundRunner(self._compactor, self._renderers, options, self._lock)
        self._tools = AgentToolRunner(
            options.agent_tools, expander, self.compact, self._compactor.slot, self._working
        )
        self._withdrawer = Withdrawer(self._working, counters, keeper, self._bus)
        keeper.track(
            [self._compactor, counters, self._renderers, self._screen, self._ledger, expander.pins]
        )
        if session is not None:
            keeper.load(session.state)

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        *,
        durable: bool = True,
        session: str | None = None,
        format: ProviderFormat = DEFAULT_FORMAT,
        budget: int | None = None,
        policy: PolicyLike = DEFAULT_POLICY,
        tools: Sequence[Any] | None = None,
        agent_tools: bool | Sequence[str] = False,
        counter: TokenCounter | None = None,
        clock: Callable[[], float] = time.time,
        model: str | None = None,
    ) -> ContextManager:
        """A manager whose session lives in the SQLite file `path`, resumed if it exists.

        The file keeps the pristine record, every applied edit with its audit entry, and
        the manager's state (triggers, guards, counters, calibration), so a restarted
        process continues exactly where the last one stopped. One process writes a
        session file at a time: a second `open` of the same file is refused.

        Args:
            path: The session file (created when missing; its directory must exist). The
                store is picked from the location's form (`open_store`): a path is a
                SQLite file; a database URL names a backend, and one this version lacks
                is refused with `ConfigurationError` before anything is written.
            durable: Sync every write to disk; `False` survives a crash of the process
                but may lose the last writes on a power cut.
            session: The session's name in a database (`postgresql://...`); see
                `open_store`.
            format: As the constructor's.
            budget: As the constructor's. The budget and the policy are not stored:
                pass the same ones when you reopen.
            policy: As the constructor's (`coding` by default).
            tools: As the constructor's.
            agent_tools: As the constructor's.
            counter: As the constructor's.
            clock: As the constructor's.
            model: As the constructor's.

        Raises:
            StoreLockedError: another manager or process has the file open, by this
                name or any other (a link, another path); in this process, `.holder`
                says where that manager was opened.
            StoreFormatError: the file is not a session file this version reads.
            StoreCorruptError: the journal or the state does not load (nothing is
                changed in the file).
            StoreError: the directory is missing, or the counter differs from the one
                the session was recorded with.
            ConfigurationError: an option is invalid.
        """
        given = _Construction(
            format=format,
            budget=budget,
            policy=as_policy(policy, "ContextManager.open"),
            tools=tools,
            agent_tools=agent_tools,
            counter=counter,
            clock=clock,
            model=model,
        )
        # Checked before the file is touched: a bad option creates no session file.
        given.resolve()
        store = open_store(path, counter=counter, durable=durable, session=session)
        try:
            return given.make(cls, store)
        except BaseException:
            store.close()
            raise

    @exclusive
    def fork(
        self,
        at: str | None = None,
        *,
        to: str | os.PathLike[str] | None = None,
        session: str | None = None,
        durable: bool = True,
        format: ProviderFormat | Keep = KEEP,
        budget: int | Keep | None = KEEP,
        policy: PolicyLike | Keep = KEEP,
        tools: Sequence[Any] | Keep | None = KEEP,
        agent_tools: bool | Sequence[str] | Keep = KEEP,
        counter: TokenCounter | Keep | None = KEEP,
        clock: Callable[[], float] | Keep = KEEP,
        model: str | Keep | None = KEEP,
    ) -> ContextManager:
        """A new session holding this one's record up to and including the node `at`.

        The fork is the session as it was once `at` was ingested (`persistence.fork`):
        the events up to the end of the event that made `at` (an assistant turn's tool
        calls come with it), and the edits applied by then; a summary made later is not
        copied, and the fork compacts on its own. The two share nothing from then on:
        what either ingests or compacts never shows in the other. It starts with this
        manager's options and calibration, and a fresh state otherwise (triggers,
        guards, counters, nothing sent yet).

        Args:
            at: The id of a node of the pristine record's transcript (a user turn's, a
                tool result's, ...): the last node the fork holds. `None`: the whole
                record, with every edit.
            to: Where the fork is kept, as `open` names a location: a new SQLite file,
                or a PostgreSQL URL. `None`: in memory for a manager in memory; beside
                this session for a stored one (the first free `<file>-fork-<n>.db` in
                its folder, or the session `<name>-fork-<n>` of its database).
            session: The fork's session name in a database (with `to`, or the
                database this session is in).
            durable: As `open`'s.
            format: The fork's format; left out (`KEEP`, so for each option below):
                this manager's. `None` means what it means to the constructor, so a
                fork can drop what this manager has: `model=None` (no model),
                `budget=None` (the model's window, or no limit), `tools=None`,
                `counter=None` (the default counter).
            budget: The fork's default budget.
            policy: The fork's policy (a name, a `Policy` or a TOML path).
            tools: The tool definitions every request of the fork carries.
            agent_tools: The agent tools the fork adds and runs.
            counter: The fork's token counter.
            clock: The fork's clock.
            model: The model the fork's requests are for.

        Raises:
            UnknownNodeError: `at` is no node of the transcript; nothing was created.
            ConfigurationError: an option is invalid; nothing was created.
            StoreError: the destination cannot be opened or written, or holds a
                session already.
        """
        given = self._given.updated(
            format=format,
            budget=budget,
            policy=policy if isinstance(policy, Keep) else as_policy(policy, "ContextManager.fork"),
            tools=tools,
            agent_tools=agent_tools,
            counter=counter,
            clock=clock,
            model=model,
        )
        given.resolve()  # a bad option creates nothing
        nodes = check_fork_point(self._working, at)
        entries = cut_journal(journal_of(self._store, self._record), nodes)
        state = {"calibration": self._keeper.values()["calibration"]}
        if self._store is None and to is None and session is None:
            forked = given.make(type(self), None)
            forked._record.replay(entries, forked._raw, forked._working)
            forked._keeper.load(state)
            return forked
        store = fork_store(self._store, to, session=session, counter=given.counter, durable=durable)
        try:
            write_fork(store, entries, state)
            return given.make(type(self), store)
        except BaseException:
            store.close()
            raise

    # -- what the user reads -------------------------------------------------------------

    @property
    def raw(self) -> ContextGraph:
        """The pristine record (append-only; read it, do not edit it)."""
        return self._raw

    @property
    def working(self) -> WorkingGraph:
        """The working projection the model is shown."""
        return self._working

    @property
    def bus(self) -> EventBus:
        """The signals to observe the manager with (`bus.connect(name, receiver)`)."""
        return self._bus

    @property
    def hooks(self) -> CompactionHooks:
        """The compaction hooks (`hooks.before_compaction(fn)`, `hooks.after_compaction(fn)`).

        See `orchestrator.compaction.hooks`: a hook before a run may pin notes, add
        summarizer instructions or defer a run the request does not need; a hook after
        it sees what changed. Hooks are code: a reopened session starts with none.
        """
        return self._hooks

    @property
    def budget(self) -> int | None:
        """The default token budget of a render (`None`: no limit)."""
        return self._options.budget

    @property
    def store(self) -> SessionStore | None:
        """The session store the manager writes to (`open`'s file); `None` in memory."""
        return self._store

    @property
    def redactor(self) -> Redactor | None:
        """What redacts every new node before a render; `None` when redaction is off.

        Set by `redact_secrets`, or by a pipeline stage that declares
        `screens_new_nodes` (a `redact` stage).
        """
        return self._options.redactor

    @exclusive
    def refresh(self) -> int:
        """Bring in what other workers appended to a shared session; how many entries.

        Call it after `StoreConflictError`, then retry (see `StateKeeper.refresh`).
        """
        return self._keeper.refresh()

    @exclusive
    def expand(self, node_id: str) -> tuple[Node, ...]:
        """The original pristine nodes behind any node (a summary, a masked copy)."""
        return self._working.expand(node_id)

    @exclusive
    def expand_line(self, node_id: str, line: int) -> tuple[Node, ...]:
        """The original pristine nodes one line (1-based) of a summary came from.

        Read from the lineage the summary recorded per line (`line_sources` in its
        meta): "- Skip the invoices table." leads back to the user turn that said it.
        A heading or a count the brief wrote itself has none: an empty tuple.

        Raises:
            UnknownNodeError: no node has this id.
            GraphError: the node is not a summary, or has no such line.
        """
        working = self._working
        node = working[node_id]
        if not isinstance(node, SummaryNode):
            msg = f"expand_line: {node_id} is a {node.kind} node, not a summary"
            raise GraphError(msg)
        count = len(node.text.split("\n"))
        if isinstance(line, bool) or not isinstance(line, int) or not 1 <= line <= count:
            msg = f"expand_line: summary {node_id} has lines 1 to {count}, not {line!r}"
            raise GraphError(msg)
        roots = {root for source in sources_of(node, line) for root in working.roots(source)}
        return tuple(sorted((working[root] for root in roots), key=lambda n: n.seq or 0))

    @property
    def url_map(self) -> dict[str, str]:
        """The tags of the URLs shortened in this session (`shorten_urls`), to their queries.

        Gathered from every node an edit made (in the view or not: the model may repeat a
        link it saw before a later compaction); empty when no URL was shortened.
        """
        overlay = self._working.view.overlay
        return url_map([*overlay.derived.values(), *overlay.undone.values()])

    @exclusive
    def restore_urls(self, value: _T) -> _T:
        """`value` (a reply, a tool call's arguments) with every shortened URL restored.

        Strings, dicts, lists, tuples and pydantic models are walked (`restore_urls` of
        `context_graph.urls`); `value` itself comes back when nothing was shortened.
        """
        return restore_urls(value, self.url_map)

    @exclusive
    def stats(self) -> ManagerStats:
        """The manager's figures now."""
        ledger = self._ledger
        return ManagerStats(
            raw_tokens=self._raw.total_tokens,
            working_tokens=self._working.total_tokens,
            units=len(self._working.units()),
            proposals_applied=self._counters.applied,
            proposals_rejected=self._counters.rejected,
            last_render_tokens=None if ledger.last is None else ledger.last.tokens,
            last_render_timed_out=ledger.last_timed_out,
            usage=ledger.usage,
            cache_hit_rate=ledger.usage.cache_hit_rate,
        )

    # -- ingest (the add_* shorthands come from EventAdders and end here) ---------------

    @exclusive
    def ingest(self, events: Iterable[AgentEvent | dict[str, Any]]) -> tuple[str, ...]:
        """Add a batch of events, whole or not at all; return the new node ids.

        Every `add_*` shorthand (and `withdraw`) goes through here, so the bus, the
        triggers and (with a store, whose graph journals each batch) the session file
        see each event once. Before a `Withdrawal` is recorded, every summary in the
        working view that stands for a withdrawn node and for others is undone
        (`orchestrator.withdrawal`), so no render shows withdrawn content again.

        Raises:
            IngestError: an event is malformed or inconsistent, or a node trigger names
                a pipeline this manager lacks; nothing was added.
            GraphError: a summary standing for a withdrawn node cannot be undone; nothing
                was added.
        """
        batch = coerce_events(events)
        check_batch(batch, self._options.pipelines)
        self._withdrawer.prepare(batch)
        ids = self._raw.ingest(batch)
        self._ledger.arrived(ids)
        for node_id in ids:
            self._bus.emit("node_added", node_id=node_id, node=self._raw[node_id])
        self._on_ingest()
        return ids

    @exclusive
    def add_response(self, response: object, **fields: Unpack[AssistantFields]) -> tuple[str, ...]:
        """Add the assistant turn of a provider's whole response; return the new node ids.

        A compaction the response carries (Anthropic's `compaction` block, the
        Responses API's `compaction` item) is added first, as a summary of what came
        before (`Compaction.native`). Takes an OpenAI `ChatCompletion`
        (`choices[0].message`), an Anthropic `Message`, a Gemini
        `GenerateContentResponse` (`candidates[0].content`), an OpenAI Responses
        `Response` (its `output`) or the compact endpoint's `CompactedResponse` (its
        `compaction` item alone), as the SDK's object or its dict. The response's usage
        is reported (`report_usage`): added to the session's usage, and when a render
        came before, its prompt tokens calibrate the count (the response answers that
        request). A shortened URL the reply repeats is restored (`url_map`).

        Args:
            response: The response.
            **fields: More `AssistantTurn` fields (`meta=`, `timestamp=`, ...).

        Raises:
            IngestError: the response is malformed or of no kind recognized (says what
                is expected), or its usage is (a count that is not an int >= 0, cached
                tokens beyond the prompt); nothing was added or reported.
            TypeError: a keyword is not an `AssistantTurn` field (names it).
        """
        check_keywords("add_response()", fields, AssistantFields, explicit=("response",))
        reply = read_response(response, url_map=self.url_map, **fields)
        # A reply's events: the compactions it carries (Anthropic's), then the turn.
        ids = self.ingest(reply.events)
        if reply.usage is not None:
            self.report_usage(reply.usage)
        return ids

    @exclusive
    def mark_boundary(self, label: str) -> None:
        """Mark the end of a task; the `boundary` trigger fires at once.

        Inside `async with` the pipeline runs in the background; otherwise at the next
        render.
        """
        self._compactor.mark_boundary(label)
        self._on_ingest()

    def _flushed(self, ids: tuple[str, ...]) -> None:
        """The notes a memory flush ingested: unsent until a request carries them."""
        self._ledger.arrived(ids)
        for node_id in ids:
            self._bus.emit("node_added", node_id=node_id, node=self._raw[node_id])

    def _on_ingest(self) -> None:
        """Evaluate the triggers against the default budget after every ingest.

        What fires is handled at once in the background when the manager runs inside
        `async with`, and by the next render otherwise.
        """
        before = self._compactor.triggers
        firings = self._compactor.check(self._options.budget)
        if firings:
            self._background.start()
        after = self._compactor.triggers
        if firings or (after is not before and after != before):
            self._keeper.save()

    # -- render --------------------------------------------------------------------------

    @exclusive_async
    async def render(
        self,
        *,
        format: ProviderFormat | None = None,
        budget: int | None = None,
        tools: Sequence[Any] | None = None,
        model: str | None = None,
        sent_beside: int = 0,
    ) -> RenderResult:
        """Compact when due, then render the working view as a request body.

        Compaction a trigger asked for runs first, in the foreground; inside
        `async with manager:` it runs in the background instead and the request is
        rendered at once, unless the request does not fit: then the render waits for
        the compaction in progress and compacts further itself if still needed.

        Compaction the render runs itself stops after `compaction_timeout` seconds;
        the request is then rendered from what the finished stages left (dropping old
        units to fit), and `stats().last_render_timed_out` says so.

        Args:
            format: The provider format; the manager's own by default.
            budget: The token budget; the manager's own by default, else the usable
                window of `model`.
            tools: The tool definitions of this request; the manager's own by default.
            model: The model of this request (a wrapped client passes the call's); it
                sets the budget when neither the call nor the manager has one.
            sent_beside: Tokens the request carries beside the body rendered here, as
                the engine counts them: tool definitions a proxy sends as the agent
                sent them. They take their share of the budget at the provider's count
                (the calibration factor), and the prompt tokens a provider then reports
                are compared with the render and them together: the provider counts
                the whole request, and learning its count from the render alone would
                shrink every later budget by their share.

        Raises:
            BudgetExceededError: even compacted, the floor (system, pinned nodes, first
                request, latest turn and after) does not fit; or `sent_beside` alone
                takes the whole budget.
            ConfigurationError: an unknown format, a budget that is not positive, a
                `sent_beside` that is not a count of tokens, or a tool definition that
                does not read.
        """
        specs = None if tools is None else self._call_tools(tools, "render")
        beside = check_sent_beside(sent_beside, "render")
        limit = self._beside(self._call_budget(budget, model, "render"), beside)
        return await self._render(format, limit, specs, beside)

    def _call_tools(self, tools: Sequence[Any], where: str) -> tuple[Any, ...]:
        """One call's tool set: `tools`, then the agent tools (`agent_tools`)."""
        specs = check_tools(tools, where)
        agents = agent_tool_specs(self._options.agent_tools or False, specs)
        return (*specs, *agents)

    def _beside(self, limit: int | None, beside: int) -> int | None:
        """The budget left for the render once `beside` is counted as the provider counts.

        Raises:
            BudgetExceededError: `beside` alone takes the whole budget.
        """
        if limit is None or not beside:
            return limit
        taken = math.ceil(beside * self._renderers.calibrator.factor)
        if taken >= limit:
            raise BudgetExceededError(limit, taken, "what is sent beside the render alone")
        return limit - taken

    async def _render(
        self,
        format: ProviderFormat | None,
        budget: int | None,
        tools: Sequence[ToolSpec] | None = None,
        beside: int = 0,
    ) -> RenderResult:
        fmt, limit = self._render_options(format, budget)
        self._background.raise_failure()
        await self._screen.snapshot()  # redacts what is new
        renderer = self._renderers.for_call(fmt, tools)
        held = self._offer.held_back(renderer.tools, limit)
        due = self._due(limit)
        meter = self._compactor.meter
        if held is not None and not due and meter.fits(renderer.with_tools(held), limit):
            return self._finish(renderer.with_tools(held), fmt, limit, beside=beside)
        # A compaction makes room for what it will let the model expand, at once; not
        # for a tool the budget leaves no room to offer (`ToolOffer.roomy`).
        sized = None if self._offer.roomy(limit) else held
        timed_out, source = await self._compact_for(renderer.with_tools(sized), limit, due=due)
        await self._screen.snapshot()  # what the compaction wrote, too
        offered = renderer.with_tools(self._offer.held_back(renderer.tools, limit))
        return self._finish(offered, fmt, limit, timed_out=timed_out, source=source, beside=beside)

    async def _compact_for(
        self, renderer: CallRenderer, limit: int | None, *, due: bool
    ) -> tuple[bool, WorkingGraph]:
        """Compact as the triggers (`due`) and the budget ask.

        Returns whether a time limit cut it short, and the graph to render: the working
        graph, or the detached copy the floor was cut in when it could not be written.
        """
        compactor = self._compactor
        timed_out, source = False, self._working
        if limit is not None and not compactor.meter.fits(renderer, limit):
            if fits_leaving_out_preamble(self._working, renderer, limit):
                return timed_out, source  # compacting the work would not bring it back
            await compactor.slot.wait()  # the background run may make it fit
            if not compactor.meter.fits(renderer, limit):
                run = await compactor.run(RunMode.OVERFLOW, limit, renderer)
                timed_out = run.timed_out
            # The floor is cut for the request, not for the agent tools' definitions.
            lean = renderer.with_tools(self._offer.lean(renderer.tools))
            if not compactor.meter.fits(lean, limit):
                cut_short, source = await compactor.shrink_floor(lean, limit)
                timed_out = cut_short or timed_out
        elif due and self._background.here:
            self._background.start()
        elif due:
            timed_out = (await compactor.run(RunMode.SOFT, limit, renderer)).timed_out
        return timed_out, source

    def _call_budget(self, budget: int | None, model: str | None, where: str) -> int | None:
        """A call's budget: its own, the manager's, else its model's (None: no limit).

        Warns once per process (`NoBudgetWarning`) when there is none at all.
        """
        if budget is not None:
            return check_budget(budget, where)
        if self._options.budget is not None:
            return self._options.budget
        chosen = check_model(model, where)
        if chosen is not None:
            return model_budget(chosen)
        warn_no_budget(f"ContextManager.{where}")
        return None

    def _render_options(
        self, format: ProviderFormat | None, budget: int | None
    ) -> tuple[ProviderFormat, int | None]:
        fmt = self._options.format if format is None else check_format(format, "render")
        return fmt, self._options.budget if budget is None else check_budget(budget, "render")

    def _due(self, limit: int | None) -> bool:
        """Evaluate the triggers for this render; whether any firing waits to be handled."""
        self._compactor.check(limit)
        return self._compactor.due

    def _finish(
        self,
        renderer: RequestRenderer,
        fmt: ProviderFormat,
        limit: int | None,
        *,
        timed_out: bool = False,
        source: WorkingGraph | None = None,
        beside: int = 0,
    ) -> RenderResult:
        # After a compaction the request may end with more (`compaction/continuation.py`).
        graph = self._continuation.source(self._working if source is None else source, fmt)
        try:
            result = renderer.render(graph, budget=limit)
        except BudgetExceededError as exc:
            try:
                result = self._without_agent_tools(renderer, fmt, exc, graph)
            except BudgetExceededError as refused:
                result = self._degraded(renderer, fmt, refused, graph)
        self._ledger.rendered(result, timed_out=timed_out, beside=beside)
        self._continuation.rendered(fmt, graph, result)
        self._bus.emit("render_done", format=fmt, tokens=result.tokens, budget=limit)
        self._keeper.save()
        return result

    def _degraded(
        self,
        renderer: RequestRenderer,
        fmt: ProviderFormat,
        refused: BudgetExceededError,
        graph: RenderSource,
    ) -> RenderResult:
        """The request degraded step by step rather than refused (`compaction/overflow.py`).

        Raises:
            BudgetExceededError: `refused`, when even the shortest heads do not fit.
        """
        budget = refused.budget
        factor = renderer.calibrator.factor if renderer.calibrator is not None else 1.0

        def attempt(view: RenderSource) -> RenderResult:
            # Counted again whole: the renderer's running sums assume a node id names one
            # content for good, which the degraded copies bend (their count came out a
            # little high with a word counter). The recount is the request's own size.
            result = renderer.render(view, budget=budget)
            tokens = count_payload(result.payload, fmt, self._raw.token_cache)
            if tokens > math.floor(budget / factor):
                raise BudgetExceededError(budget, tokens, "the degraded request, recounted")
            return dataclasses.replace(result, tokens=tokens)

        overflow = degrade(graph, attempt, refused)
        self._bus.emit(
            "overflow_fallback",
            format=fmt,
            steps=overflow.steps,
            budget=refused.budget,
            required=refused.required,
        )
        return overflow.result

    def _without_agent_tools(
        self,
        renderer: RequestRenderer,
        fmt: ProviderFormat,
        refused: BudgetExceededError,
        working: RenderSource,
    ) -> RenderResult:
        """The request without the agent tools, when only their definitions did not fit.

        The agent tools are the engine's help, not the user's: refusing a call that fits
        without them would put the help above the request. They are left out only when
        the request then fits and none of its calls is to one of them (a call to a tool
        the request does not define is refused by some providers); the bus says so.

        Raises:
            BudgetExceededError: `refused`, when that is not the case.
        """
        names = set(self._options.agent_tools)
        kept = tuple(spec for spec in renderer.tools if spec.name not in names)
        if not names or len(kept) == len(renderer.tools):
            raise refused
        try:
            result = renderer.render(working, budget=refused.budget, tools=kept)
        except BudgetExceededError:
            raise refused from None
        if any(getattr(working[i], "name", None) in names for i in result.call_ids.values()):
            raise refused
        self._bus.emit(
            "agent_tools_withheld",
            format=fmt,
            tools=tuple(sorted(names)),
            budget=refused.budget,
            required=refused.required,
        )
        return result

    def render_sync(
        self,
        *,
        format: ProviderFormat | None = None,
        budget: int | None = None,
        tools: Sequence[Any] | None = None,
        model: str | None = None,
        sent_beside: int = 0,
    ) -> RenderResult:
        """The blocking twin of `render`, for blocking code in any thread.

        Inside a running event loop (a notebook, a sync client called from a coroutine)
        the render runs on a helper thread with a loop of its own while this call
        blocks, as any blocking call there does; `await render()` does not block.
        Another thread using the manager is waited for (`orchestrator.sync_bridge`).

        Raises:
            BudgetExceededError: as `render`.
            ConfigurationError: as `render`.
            RuntimeError: called from a coroutine while a task of the same loop is
                using the manager (a background run in progress); await `render()`.
        """
        specs = None if tools is None else self._call_tools(tools, "render_sync")
        beside = check_sent_beside(sent_beside, "render_sync")
        budget_of_call = self._call_budget(budget, model, "render_sync")

        def work() -> RenderResult:
            # Under the lock: the calibration factor it is counted by is the current one.
            limit = self._beside(budget_of_call, beside)
            return self._render_blocking(format, limit, specs, beside)

        return call_blocking(self._lock, "render_sync", work)

    def _render_blocking(
        self,
        format: ProviderFormat | None,
        budget: int | None,
        tools: Sequence[ToolSpec] | None = None,
        beside: int = 0,
    ) -> RenderResult:
        """Render without an event loop when nothing has to run; else in a new loop.

        Most calls compact nothing, and starting an event loop costs about a
        millisecond, more than the render itself.
        """
        if not self._background.failed and self._options.redactor is None:
            fmt, limit = self._render_options(format, budget)
            call = self._renderers.for_call(fmt, tools)
            renderer = call.with_tools(self._offer.held_back(call.tools, limit))
            due = self._due(limit)
            if not due and (limit is None or self._compactor.meter.fits(renderer, limit)):
                return self._finish(renderer, fmt, limit, beside=beside)
        return run_async(lambda: self._render(format, budget, tools, beside))

    @exclusive_async
    async def compact(self, instructions: str | None = None) -> PipelineRun:
        """Run the whole pipeline now, whatever the triggers say.

        A run in progress (a background compaction) ends first. The run stops after
        `compaction_timeout` seconds (`PipelineRun.timed_out`).

        Args:
            instructions: Guidance for the summarizer (`"keep the DB schema"`).

        Returns:
            What the run did: stages run, proposals applied and rejected.
        """
        return await self._compactor.compact(self._options.budget, instructions)

    # -- tools the model calls (agent_tools) ---------------------------------------------

    @property
    def agent_tools(self) -> tuple[str, ...]:
        """The names of the tools this manager adds to each request and runs itself."""
        return self._options.agent_tools

    @exclusive_async
    async def handle_tool_call(
        self, name: str, arguments: str | bytes | Mapping[str, Any] | None = None
    ) -> str:
        """Run a call the model made to an agent tool; return the tool result's text.

        Send the text back as the call's result (and ingest it, as any tool result).
        A mistake of the model (a tool this manager lacks, arguments that are not JSON,
        a missing, oversized or unknown id, content too big for the budget) is answered
        with text saying what was wrong and what to pass; nothing changes then.

        `context_expand` restores what the id stands for (the id a placeholder names,
        or the derived node's own) as a `restore` proposal through the invariant
        checker, pins it for `expand_pin_turns` user turns and keeps it in the session
        store; it must fit under the default budget beside what every request keeps.
        `context_compact` runs `compact(instructions)`.

        Args:
            name: The tool's name, as the model called it.
            arguments: Its arguments: the JSON text (OpenAI) or the mapping (Anthropic,
                Gemini) the SDK hands over; `None` for none.

        Raises:
            ConfigurationError: the manager has no agent tools (`agent_tools=`), or
                `name` / `arguments` are of a type no SDK hands over.
        """
        return await self._tools.run(self._tools.read(name, arguments, "handle_tool_call"))

    def handle_tool_call_sync(
        self, name: str, arguments: str | bytes | Mapping[str, Any] | None = None
    ) -> str:
        """The blocking twin of `handle_tool_call`, for blocking code in any thread.

        Inside a running event loop it runs as `render_sync` does there.

        Raises:
            ConfigurationError: as `handle_tool_call`.
            RuntimeError: as `render_sync`.
        """
        call = self._tools.read(name, arguments, "handle_tool_call_sync")

        def work() -> str:
            done = self._tools.run_inline(call)
            return done if done is not None else run_async(lambda: self._tools.run(call))

        return call_blocking(self._lock, "handle_tool_call_sync", work)

    @exclusive
    def report_usage(self, usage: int | Usage) -> float:
        """Report what the provider counted for the last render; return the new factor.

        The calibrator learns how the provider counts from the prompt tokens, and later
        renders fit the budget by the provider's count. A call's `Usage` is also added
        to the session's (`stats().usage` and its `cache_hit_rate`, the `usage_recorded`
        signal, the session's stored state); it needs no render before it, and without
        one it calibrates nothing.

        Args:
            usage: The provider's prompt tokens (calibration only), or what the call
                used (`context_graph.tokens.read_usage` reads it from the provider's
                usage object).

        Raises:
            ConfigurationError: `usage` is an int and nothing was rendered yet, or it is
                neither an int nor a `Usage`; nothing changed.
        """
        if isinstance(usage, Usage):
            return self._record_usage(usage)
        if isinstance(usage, bool) or not isinstance(usage, int):
            msg = (
                "report_usage: `usage` must be the prompt tokens (an int) or a call's "
                f"`Usage` (context_graph.tokens.read_usage), got {usage!r}"
            )
            raise ConfigurationError(msg)
        last = self._ledger.last
        if last is None:
            msg = "report_usage: nothing was rendered yet; call render() before reporting"
            raise ConfigurationError(msg)
        factor = self._calibrate(last, usage)
        self._keeper.save()
        return factor

    def _record_usage(self, usage: Usage) -> float:
        """Add a call's usage to the session's, and calibrate by it after a render."""
        ledger = self._ledger
        factor = self._renderers.calibrator.factor
        if ledger.last is not None and usage.prompt_tokens:
            factor = self._calibrate(ledger.last, usage.prompt_tokens)
        totals = ledger.record(usage)
        self._bus.emit(
            "usage_recorded", usage=usage, totals=totals, cache_hit_rate=totals.cache_hit_rate
        )
        self._keeper.save()
        return factor

    def _calibrate(self, last: RenderResult, prompt_tokens: int) -> float:
        """Teach the calibrator the provider's count of the `last` render."""
        # The provider counted the whole request: what was sent beside the render too.
        estimated = last.tokens + self._ledger.last_beside
        factor = self._renderers.calibrator.observe(estimated, prompt_tokens)
        usage = {"prompt_tokens": prompt_tokens, "estimated": estimated}
        self._bus.emit("usage_reported", usage=usage, factor=factor)
        return factor

    def wrap(self, client: _Client) -> _Client:
        """`client` with its model calls managed by this manager (one changed line in a loop).

        Takes `openai.OpenAI` / `AsyncOpenAI`, `anthropic.Anthropic` / `AsyncAnthropic` or
        google-genai's `Client`; see `orchestrator.integrations.clients` for what a call does.

        Raises:
            ConfigurationError: `client` is none of those.
        """
        from orchestrator.integrations.clients import wrap_client

        return wrap_client(self, client)

    # -- life cycle ----------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        """Start background compaction: soft triggers no longer delay a render.

        Raises:
            RuntimeError: the manager is already inside an `async with`.
        """
        await self._background.enter()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Cancel background compaction and wait until it stopped.

        A stage cut short applies nothing (proposals are applied whole, never while a
        processor runs), so the graph stays as the last applied proposal left it. An
        in-memory manager keeps working afterwards, compacting in the foreground again;
        a manager from `open` also closes its session file (see `close`).
        """
        await self._background.stop()
        self.close()

    @exclusive
    def close(self) -> None:
        """Save the state and close the session file (a manager from `open`).

        Without a session file there is nothing to close; the manager keeps working.
        With one, later ingests and compactions are refused with `StoreError`. Closing
        twice is harmless.

        Raises:
            RuntimeError: background compaction is running (use `await aclose()`).
            StoreError: the state could not be saved (a write failed); the file is
                closed and released all the same: reopen it to resume from what it holds.
        """
        if self._background.active:
            msg = "close() inside `async with manager:`; leave the block or `await aclose()`"
            raise RuntimeError(msg)
        self._keeper.close()
