"""Which call a Gemini `functionResponse` answers, paired the way the Gemini API pairs them.

A response answers a call of the model turn right before its own turn. It pairs by id
when both carry one; otherwise by name and order: the k-th response named N answers the
k-th call named N (a turn holds up to a few parallel calls, often of one tool). The
Gemini CLI sends calls without ids and answers them with ids of its own
(`run_shell_command-1768861006340-fb5d72b31090a`): such a response pairs by name, and the
call takes the response's id, so both sides of the pair name the same real id.

A response with an id that no call of the turn before has may answer an older call, or
one ingested earlier into the same graph: it keeps its id, and the graph pairs it or
names the orphan. `answer` says when no call of this input is waiting for it at all.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import cast

from context_graph.graph.events import AgentEvent, AssistantTurn

__all__ = ["CallBook"]


@dataclass
class _Waiting:
    """A call of the latest model turn that has no response yet."""

    name: str
    call_id: str
    own_id: bool
    """Whether the call carried its id (else it was made up: `gemini_<name>_...`)."""
    turn: int
    """The turn's position in the events."""
    index: int
    """The call's position in the turn."""


@dataclass
class CallBook:
    """The calls waiting for responses in one import; renames made-up ids in `events`."""

    events: list[AgentEvent]
    latest: list[_Waiting] = field(default_factory=list)
    open_ids: Counter[str] = field(default_factory=Counter)
    """How many calls of the whole input are unanswered, by id."""

    def model_turn(self, turn: AssistantTurn, own_ids: list[bool]) -> None:
        """Record the turn just appended to `events`; its calls replace the waiting ones."""
        position = len(self.events) - 1
        self.latest = [
            _Waiting(call.name, call.id, own, position, k)
            for k, (call, own) in enumerate(zip(turn.tool_calls, own_ids, strict=True))
        ]
        self.open_ids.update(call.id for call in turn.tool_calls)

    def answer(self, name: str, response_id: str | None) -> str | None:
        """The id the response answers, taking its call off the books; `None` if no call waits.

        A response with an id that only an older turn's call has answers that call; one
        that no call of this input has keeps its id only in the caller's hands (`None`).
        """
        for k, waiting in enumerate(self.latest):
            if response_id is not None and waiting.call_id == response_id:
                return self._take(k, response_id)
        for k, waiting in enumerate(self.latest):
            if waiting.name == name and (response_id is None or not waiting.own_id):
                return self._take(k, response_id or waiting.call_id)
        if response_id is not None and self.open_ids[response_id] > 0:
            self.open_ids[response_id] -= 1
            return response_id
        return None

    def _take(self, k: int, call_id: str) -> str:
        waiting = self.latest.pop(k)
        self.open_ids[waiting.call_id] -= 1
        if call_id != waiting.call_id:
            self._rename(waiting, call_id)
        return call_id

    def _rename(self, waiting: _Waiting, call_id: str) -> None:
        """Give a call without an id of its own the id its response carries."""
        turn = cast(AssistantTurn, self.events[waiting.turn])
        calls = list(turn.tool_calls)
        calls[waiting.index] = calls[waiting.index].model_copy(update={"id": call_id})
        self.events[waiting.turn] = turn.model_copy(update={"tool_calls": tuple(calls)})
