"""Replay a recorded session through a `ContextManager`, rendering at every model call.

The recorded agent called its model right before each assistant turn; a replay feeds the
events one by one and, at each of those points (and after the last event), renders as
the agent would have, then checks what it rendered.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from context_graph.errors import BudgetExceededError
from context_graph.formats.wires import DEFAULT_FORMAT
from context_graph.graph.events import AgentEvent, AssistantTurn
from context_graph.render import Renderer
from context_graph.render.result import RenderResult
from context_graph.tokens.counting import ProviderFormat
from context_graph.validate.request import validate
from orchestrator.manager import ContextManager

__all__ = ["CallReport", "ReplayReport", "model_call_points", "replay"]

_FROZEN = ConfigDict(frozen=True, extra="forbid")


class CallReport(BaseModel):
    """What happened at one model call of the replay."""

    model_config = _FROZEN
    index: int
    """The call's number, from 0."""
    event: int
    """How many events had been fed when the call was made."""
    raw_tokens: int
    """The whole history rendered with no budget."""
    rendered_tokens: int | None
    """The request sent (`None` when the budget could not be met)."""
    processors: list[str]
    """Processors whose proposals were applied since the previous call."""
    tokens_saved: int
    """Tokens those proposals saved."""
    prefix_reused: bool
    """Whether the request starts with the previous request's messages (cache reuse)."""
    validation_errors: list[str]
    """Rules the request breaks (empty when valid)."""
    error: str | None = None
    """Why nothing was rendered, when the budget could not be met."""
    fill: float | None = None
    """The request's share of the budget (`None` without a budget or a request)."""

    @property
    def compacted(self) -> bool:
        """Whether the request is smaller than the whole history (compacted or cut)."""
        return self.rendered_tokens is not None and self.rendered_tokens < self.raw_tokens


class ReplayReport(BaseModel):
    """A whole replay: every call, and totals."""

    model_config = _FROZEN
    format: ProviderFormat
    budget: int | None
    events: int
    calls: list[CallReport]
    total_raw_tokens: int
    total_rendered_tokens: int
    total_tokens_saved: int
    prefix_reuse_share: float
    """Share of calls (after the first) whose request extends the previous one."""
    invalid_calls: int
    over_budget_calls: int
    mean_fill: float | None = None
    """The mean `fill` of the calls whose request was compacted: how much of the budget a
    compaction left in use (`None` when no call was)."""
    last_request: dict[str, Any] | None = None
    """The last rendered request body."""


def model_call_points(events: Sequence[AgentEvent]) -> set[int]:
    """How many events had been fed at each model call.

    The recorded agent called its model right before each assistant turn, and would
    call it again after the last event.
    """
    points = {i for i, event in enumerate(events) if isinstance(event, AssistantTurn) and i > 0}
    points.add(len(events))
    return points


def _messages(payload: dict[str, Any]) -> list[str]:
    """The request as the provider caches it, in order: tools first, then each message.

    The tools lead the cached prefix, so a tool set that changes between calls breaks
    the prefix however the messages continue.
    """
    listed = payload.get("messages", payload.get("contents", payload.get("input", [])))
    tools = [json.dumps(payload["tools"], sort_keys=True)] if "tools" in payload else []
    return tools + [json.dumps(m, sort_keys=True) for m in listed]


def replay(
    events: Sequence[AgentEvent],
    *,
    budget: int | None,
    format: ProviderFormat = DEFAULT_FORMAT,
    manager: ContextManager | None = None,
    on_progress: Callable[[int, int], None] | None = None,
    tools: Sequence[Any] = (),
    agent_tools: bool | Sequence[str] = False,
    on_call: Callable[[CallReport, RenderResult | None], None] | None = None,
) -> ReplayReport:
    """Feed `events` to a manager and render at every model call; return the report.

    `tools` are the tool definitions the recorded agent sent: the raw size counts them,
    and a manager made here sends them (a given `manager` sends its own). `agent_tools`:
    a manager made here adds the agent tools too (`ContextManager(agent_tools=...)`),
    counted in every request, with every compacted piece naming its id; the raw size
    counts only what the agent sent. `on_call`, when given, sees each call's report and
    what was rendered (`None` when refused), right after the call
    (`orchestrator.report.ReplayRecorder` keeps them for the HTML report).
    """
    manager = manager or ContextManager(
        format=format, budget=budget, tools=tools, agent_tools=agent_tools
    )
    points = model_call_points(events)
    raw_renderer = Renderer(format=format, tools=tools)
    calls: list[CallReport] = []
    previous: list[str] | None = None
    last_request: dict[str, Any] | None = None
    audited = 0
    for fed, event in enumerate(events, start=1):
        manager.ingest([event])
        if on_progress is not None:
            on_progress(fed, len(events))
        if fed not in points:
            continue
        raw = raw_renderer.render(manager.raw).tokens
        rendered: int | None = None
        result: RenderResult | None = None
        error: str | None = None
        errors: list[str] = []
        current: list[str] | None = None
        try:
            result = manager.render_sync(budget=budget)
        except BudgetExceededError as exc:
            error = str(exc)
        else:
            rendered = result.tokens
            errors = [f"{v.rule}: {v.message}" for v in validate(result.payload, format)]
            current = _messages(result.payload)
            last_request = result.payload
        entries = manager.working.audit()[audited:]
        audited += len(entries)
        reused = (
            previous is not None and current is not None and current[: len(previous)] == previous
        )
        calls.append(
            CallReport(
                index=len(calls),
                event=fed,
                raw_tokens=raw,
                rendered_tokens=rendered,
                processors=[e.processor for e in entries],
                tokens_saved=sum(e.tokens_saved for e in entries),
                prefix_reused=reused,
                validation_errors=errors,
                error=error,
                fill=None if budget is None or rendered is None else rendered / budget,
            )
        )
        if on_call is not None:
            on_call(calls[-1], result)
        previous = current if current is not None else previous
    later = calls[1:]
    fills = [c.fill for c in calls if c.compacted and c.fill is not None]
    return ReplayReport(
        format=format,
        budget=budget,
        events=len(events),
        calls=calls,
        total_raw_tokens=sum(c.raw_tokens for c in calls),
        total_rendered_tokens=sum(c.rendered_tokens or 0 for c in calls),
        total_tokens_saved=sum(c.tokens_saved for c in calls),
        prefix_reuse_share=(sum(c.prefix_reused for c in later) / len(later)) if later else 1.0,
        invalid_calls=sum(bool(c.validation_errors) for c in calls),
        over_budget_calls=sum(c.error is not None for c in calls),
        mean_fill=sum(fills) / len(fills) if fills else None,
        last_request=last_request,
    )
