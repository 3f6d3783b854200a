"""OpenHands observation masking, reimplemented (the SDK cannot run here).

Why a reimplementation: `openhands-sdk` requires Python >= 3.12 (this project supports
3.11), and its condensers are the LLM summarizer (a model call, not offline), a no-op and
a pipeline; observation masking exists only in OpenHands V0
(`openhands/memory/condenser/impl/observation_masking_condenser.py`), which ships in the
full `openhands-ai` application.

What V0's `ObservationMaskingCondenser` does, and what this does: walk the event view;
an observation whose index is older than the last `attention_window` events has its
content replaced by the placeholder `<MASKED>`; every other event is kept as it is. It
looks at no token count. Defaults: `attention_window=100` in V0's
`ObservationMaskingCondenserConfig` (what a `[condenser] type = "observation_masking"`
configuration gets), `5` in the class constructor; both are run.

Events, as OpenHands counts them: the system prompt, each message, each tool call (an
action; the calls of one model response are separate events) and each tool result (an
observation). A masked observation keeps its tool call id here, so the request stays
paired; in V0 the placeholder is a new event that loses the link (the call is then not
sent and `<MASKED>` goes out as a user message), so this errs in the peer's favour.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from benchmarks.compare import convert
from benchmarks.compare.contenders import Contender, ContenderSpec
from context_graph import AgentEvent, AssistantTurn, TokenCounter

PLACEHOLDER = "<MASKED>"
WINDOWS: dict[str, int] = {"config default": 100, "constructor default": 5}


@dataclass(frozen=True)
class _Event:
    kind: Literal["system", "message", "action", "observation", "reset"]
    message: dict[str, Any] | None = None
    """A system, user or plain assistant message (`system`, `message`, `reset`)."""
    call: dict[str, Any] | None = None
    """The OpenAI tool call of an action."""
    response: int = 0
    """Actions of one model response share this number."""
    thought: str | None = None
    call_id: str | None = None
    """The call an observation answers."""
    text: str = ""
    """An observation's content."""


class ObservationMaskingContender:
    """V0's observation masking over an OpenHands-style event view."""

    def __init__(self, attention_window: int) -> None:
        self._window = attention_window
        self._view: list[_Event] = []

    def prepare(self, events: Sequence[AgentEvent]) -> list[Any]:
        return [self._events(index, event) for index, event in enumerate(events)]

    def _events(self, index: int, event: AgentEvent) -> list[_Event]:
        role = convert.role_of(event)
        if role == "system":
            return [_Event("system", {"role": "system", "content": convert.text_of(event)})]
        if role == "compaction":
            return [_Event("reset", {"role": "user", "content": convert.text_of(event)})]
        if role == "user":
            return [_Event("message", {"role": "user", "content": convert.user_content(event)})]
        if role == "answer":
            return [
                _Event(
                    "observation", call_id=convert.call_id_of(event), text=convert.text_of(event)
                )
            ]
        if not isinstance(event, AssistantTurn):
            return []
        text = convert.text_of(event) or None
        if not event.tool_calls:
            return [_Event("message", {"role": "assistant", "content": text or ""})]
        return [
            _Event(
                "action",
                call={
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                },
                response=index,
                thought=text if position == 0 else None,
            )
            for position, c in enumerate(event.tool_calls)
        ]

    async def feed(self, item: Any) -> None:
        for event in item:
            if event.kind == "reset":
                self._view = [e for e in self._view if e.kind == "system"]
                self._view.append(replace(event, kind="message"))
            else:
                self._view.append(event)

    async def tune(self, budget: int) -> None:
        return None

    async def request(self, budget: int) -> Any | None:
        cut = len(self._view) - self._window
        return [
            replace(event, text=PLACEHOLDER)
            if event.kind == "observation" and index < cut
            else event
            for index, event in enumerate(self._view)
        ]

    def payload(self, native: Any) -> dict[str, Any]:
        messages: list[dict[str, Any]] = []
        open_response: int | None = None
        for event in native:
            if event.kind == "action":
                if open_response == event.response and messages:
                    messages[-1]["tool_calls"].append(event.call)
                else:
                    messages.append(
                        {"role": "assistant", "content": event.thought, "tool_calls": [event.call]}
                    )
                    open_response = event.response
                continue
            open_response = None
            if event.kind == "observation":
                if event.call_id is None:
                    messages.append({"role": "user", "content": event.text})
                else:
                    messages.append(
                        {"role": "tool", "tool_call_id": event.call_id, "content": event.text}
                    )
            elif event.message is not None:
                messages.append(dict(event.message))
        return {"messages": messages}


def openhands_specs() -> list[ContenderSpec]:
    """Masking with each default window."""

    def maker(window: int) -> Callable[[int, TokenCounter], Contender]:
        return lambda budget, counter: ObservationMaskingContender(window)

    return [
        ContenderSpec(
            name=f"openhands masking w={window}",
            family="openhands",
            make=maker(window),
            settings=(
                f"observation masking, `attention_window={window}` (V0 {origin}); "
                "reimplemented, budget not used"
            ),
        )
        for origin, window in WINDOWS.items()
    ]
