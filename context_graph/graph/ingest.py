"""Planning an ingest: events -> nodes and edges, computed without touching the graph.

`plan_ingest` reads the graph, keeps every change it would make in an overlay, and
raises `IngestError` on the first bad event. Only a complete plan is handed to
`ContextGraph._commit`, which cannot fail on valid plans, so a batch lands whole or not
at all. The overlay copies only the entries an event touches, so planning costs the size
of the batch, not of the history. Nodes are made by `context_graph.graph.node_build`;
what may be stored is checked by `context_graph.graph.json_limits`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from pydantic_core import PydanticSerializationError

from context_graph.errors import IngestError, SourceLocation
from context_graph.graph.call_ids import ID_RULES, provider_call_id
from context_graph.graph.events import (
    AgentEvent,
    AssistantTurn,
    Compaction,
    FileRead,
    Note,
    SubagentResult,
    SystemPrompt,
    ToolResult,
    UserTurn,
    Withdrawal,
)
from context_graph.graph.ids import make_node_id
from context_graph.graph.ingest_plan import IngestCursor, IngestPlan, PlannedGraph
from context_graph.graph.json_limits import check_json_value, unencodable_text
from context_graph.graph.node_build import build, model_json
from context_graph.graph.nodes import (
    AnswerNode,
    AssistantNode,
    FileNode,
    Node,
    NoteNode,
    SubagentResultNode,
    SummaryNode,
    SystemNode,
    ToolCallNode,
    ToolResultNode,
    UserNode,
)
from context_graph.graph.withdrawal import plan_withdrawal

__all__ = ["plan_ingest"]


class _Planner:
    """Turns events into an `IngestPlan` against a read-only graph and its cursor."""

    def __init__(self, graph: PlannedGraph, cursor: IngestCursor) -> None:
        self.graph = graph
        self.cursor = cursor
        self.plan = IngestPlan(
            seq=cursor.next_seq,
            turn=graph.turns,
            last_id=cursor.last_id,
            compaction=cursor.compaction,
        )
        self.count_node = graph.token_cache.count_node

    # -- lookups through the overlay --

    def node(self, node_id: str) -> Node:
        found = self.plan.by_id.get(node_id)
        return found if found is not None else self.graph[node_id]

    def open_calls(self, call_id: str) -> list[str]:
        pending = self.plan.open_calls.get(call_id)
        if pending is not None:
            return pending
        return list(self.cursor.open_calls.get(call_id, ()))

    def file_reads(self, path: str) -> list[str]:
        pending = self.plan.file_reads.get(path)
        if pending is not None:
            return pending
        return list(self.graph.by_path(path))

    def unit_head(self, node_id: str) -> str:
        return self.plan.unit_of.get(node_id) or self.graph.unit_of(node_id).head

    # -- adding --

    def add(self, node: Node, unit_head: str | None = None) -> None:
        plan = self.plan
        node_id = node.id
        if node_id in plan.by_id or node_id in self.graph:
            msg = f"node id {node_id} already exists: the same event was ingested twice"
            raise IngestError(msg)
        plan.nodes.append(node)
        plan.by_id[node_id] = node
        plan.tokens[node_id] = self.count_node(node)
        if plan.last_id is not None:
            plan.edges.append((node_id, plan.last_id, "follows"))
        plan.last_id = node_id
        plan.seq += 1
        plan.unit_of[node_id] = unit_head or node_id

    def common(self, event: Any) -> dict[str, Any]:
        return {
            "seq": self.plan.seq,
            "turn": self.plan.turn,
            "timestamp": event.timestamp,
            "meta": event.meta,
            "priority": event.priority,
            "pinned": event.pinned,
            "triggers": event.triggers,
        }

    def node_id(self, kind: str, event: Any) -> str:
        # pydantic's JSON encoder is fast and its field order is fixed by the model, so
        # the same event gives the same bytes (and id) in any process.
        return make_node_id(kind, self.plan.seq, model_json(event))

    # -- per event type --

    def ingest(self, event: AgentEvent, index: int) -> None:
        # Outside the `try` below, which would rebuild the location and drop the path.
        # Metadata the session file could not read back is refused here, store or not.
        check_json_value(
            dict(event.meta), path="meta", location=event.source or SourceLocation(index=index)
        )
        if isinstance(event, Compaction) and event.native is not None:
            where = event.source or SourceLocation(index=index)
            check_json_value(dict(event.native.item), path="native.item", location=where)
        try:
            self._dispatch(event)
        except IngestError as exc:
            # Problems are found without knowing the place; name it here once.
            location = event.source or SourceLocation(index=index)
            raise IngestError(exc.reason, location) from None
        except PydanticSerializationError:
            # A lone surrogate (`"\ud800"`, e.g. from a JSON escape) has no UTF-8 form,
            # so the event cannot be hashed into an id, nor sent to any provider.
            location = event.source or SourceLocation(index=index)
            raise IngestError(unencodable_text(event.model_dump()), location) from None

    def _dispatch(self, event: AgentEvent) -> None:
        if isinstance(event, SystemPrompt):
            self._simple(SystemNode, "system", event)
        elif isinstance(event, UserTurn):
            self._user(event)
        elif isinstance(event, Note):
            self._simple(NoteNode, "note", event)
        elif isinstance(event, AssistantTurn):
            self._assistant(event)
        elif isinstance(event, ToolResult):
            status = {"exit_code": event.exit_code}
            self._answer(event, ToolResultNode, "tool_result", event.call_id, status)
        elif isinstance(event, FileRead):
            self._file(event)
        elif isinstance(event, SubagentResult):
            extra = {"agent_id": event.agent_id, "transcript": event.transcript}
            self._answer(event, SubagentResultNode, "subagent_result", event.call_id, extra)
        elif isinstance(event, Withdrawal):
            plan_withdrawal(event, self.graph, self.plan, self.open_calls)
        else:
            self._compaction(event)

    def _simple(self, cls: type[Node], kind: str, event: Any, **extra: Any) -> None:
        node_id = self.node_id(kind, event)
        self.add(build(cls, id=node_id, content=event.content, **self.common(event), **extra))

    def _user(self, event: UserTurn) -> None:
        if event.notice:  # the harness speaking: no new turn
            self._simple(UserNode, "user", event, notice=True)
        else:
            self.plan.turn += 1
            self._simple(UserNode, "user", event)

    def _assistant(self, event: AssistantTurn) -> None:
        head = build(
            AssistantNode,
            id=self.node_id("assistant", event),
            content=event.content,
            message_id=event.message_id,
            model=event.model,
            **self.common(event),
        )
        self.add(head)
        for index, call in enumerate(event.tool_calls):
            payload = model_json(call) + head.id.encode()
            common = self.common(event) | {"meta": dict(call.meta)}
            node = build(
                ToolCallNode,
                id=make_node_id("tool_call", self.plan.seq, payload),
                tool_call_id=call.id,
                name=call.name,
                arguments=call.arguments,
                signature=call.signature,
                assistant_id=head.id,
                index=index,
                **common,
            )
            self.add(node, unit_head=head.id)
            self.plan.edges.append((node.id, head.id, "issued_by"))
            self.plan.open_calls[call.id] = [*self.open_calls(call.id), node.id]
            if self.graph.first_call_with_id(call.id) is None:
                self.plan.first_calls.setdefault(call.id, node.id)

    def _take_open_call(self, call_id: str) -> ToolCallNode:
        """Pair by position: a result answers the most recent open call with its id.

        "Most recent" is by turn: ids are reused once answered (tau-bench), and an older
        turn's call with the same id that is still open was abandoned (a crash, a
        cancel) and stays open. Within one turn, parallel calls that share an id are
        answered in call order, as results arrive in the order of the calls.
        """
        candidates = self.open_calls(call_id)
        if not candidates:
            alias = self._resolve_alias(call_id)
            if alias is not None:
                call_id, candidates = alias.tool_call_id, [alias.id]
        if not candidates:
            if call_id in self.cursor.answered_ids or call_id in self.plan.answered_ids:
                msg = (
                    f"tool result `{call_id}` answers no open call: every earlier call "
                    f"with this id already has its result"
                )
            else:
                msg = f"tool result `{call_id}` has no matching tool call earlier in the history"
            raise IngestError(msg)
        calls = [cast(ToolCallNode, self.node(c)) for c in candidates]
        newest_turn = calls[-1].assistant_id
        chosen = next(c for c in calls if c.assistant_id == newest_turn)
        self.plan.open_calls[call_id] = [c for c in self.open_calls(call_id) if c != chosen.id]
        self.plan.answered_ids.add(call_id)
        return chosen

    def _resolve_alias(self, provider_id: str) -> ToolCallNode | None:
        """The open call that a render sent as `provider_id`, if the id was rewritten.

        Renders rewrite ids a provider would refuse (`context_graph.graph.call_ids`); a result
        reported under the rewritten id still answers its call. Only open calls are
        searched, and only when the id matches no call directly.
        """
        open_ids = {**self.cursor.open_calls, **self.plan.open_calls}
        for original, node_ids in open_ids.items():
            for node_id in node_ids:
                call = cast(ToolCallNode, self.node(node_id))
                first = self.graph.first_call_with_id(original) or self.plan.first_calls.get(
                    original
                )
                for fmt in ID_RULES:
                    sent = provider_call_id(original, call.seq, first == node_id, fmt)
                    if sent == provider_id and sent != original:
                        return call
        return None

    def _answer(
        self,
        event: ToolResult | SubagentResult | FileRead,
        cls: type[AnswerNode],
        kind: str,
        call_id: str | None,
        extra: dict[str, Any],
    ) -> Node:
        call = self._take_open_call(call_id) if call_id is not None else None
        name = event.name or (call.name if call is not None else None)
        node = build(
            cls,
            id=self.node_id(kind, event),
            content=event.content,
            tool_call_id=call.tool_call_id if call is not None else call_id,
            name=name,
            is_error=event.is_error,
            **extra,
            **self.common(event),
        )
        self.add(node, unit_head=self.unit_head(call.id) if call is not None else None)
        if call is not None:
            self.plan.edges.append((node.id, call.id, "answers"))
            if kind == "subagent_result":
                self.plan.edges.append((node.id, call.id, "spawned_by"))
            self.plan.answers[call.id] = node.id
        return node

    def _file(self, event: FileRead) -> None:
        earlier = self.file_reads(event.path)
        extra = {"path": event.path, "version": len(earlier) + 1, "line_range": event.line_range}
        node = self._answer(event, FileNode, "file", event.call_id, extra)
        for old_id in earlier:
            old = self.node(old_id)
            if old_id in self.plan.superseded or self.graph.is_superseded(old_id):
                continue
            if isinstance(old, FileNode) and _covers(event.line_range, old.line_range):
                self.plan.edges.append((node.id, old_id, "supersedes"))
                self.plan.superseded.add(old_id)
        self.plan.file_reads[event.path] = [*earlier, node.id]

    def _compaction(self, event: Compaction) -> None:
        # A compaction stands for every earlier node, but abstracts only those since the
        # previous compaction, that one first: the rest follows along the chain
        # (`ContextGraph.covered`). Abstracting every earlier node made n compactions
        # cost n² edges, ids and time.
        plan, order = self.plan, self.cursor.order
        start = 0 if plan.compaction is None else cast(int, self.node(plan.compaction).seq)
        earlier = [*order[start:], *(n.id for n in plan.nodes[max(0, start - len(order)) :])]
        plan.version_credit += start
        node = build(
            SummaryNode,
            id=self.node_id("summary", event),
            content=event.content,
            origin=event.origin,
            native=event.native,
            abstracts=tuple(earlier),
            **self.common(event),
        )
        self.add(node)
        plan.edges.extend((node.id, old, "derived_from") for old in earlier)
        plan.compaction = node.id


def _covers(new: tuple[int, int | None] | None, old: tuple[int, int | None] | None) -> bool:
    """Whether a read of `new` lines includes every line of an earlier read of `old`."""
    if new is None:
        return True
    if old is None:
        return False
    new_end, old_end = new[1], old[1]
    if new[0] > old[0]:
        return False
    return new_end is None or (old_end is not None and new_end >= old_end)


def plan_ingest(
    graph: PlannedGraph, cursor: IngestCursor, events: Sequence[AgentEvent]
) -> IngestPlan:
    """Plan a whole batch; raises `IngestError` on the first bad event."""
    planner = _Planner(graph, cursor)
    for index, event in enumerate(events):
        planner.ingest(event, index)
    return planner.plan
