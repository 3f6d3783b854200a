"""OpenHands runs: LLM call logs, and event streams (`_openhands_events`).

A call log is the request's `messages` plus the model's `response`; an event stream is
a trajectory download or an evaluation's `history`.

One log file holds one LLM call; the last call of a run holds the whole history. The
messages are OpenAI-style with content parts that carry `cache_control` (a prompt-caching
hint, not content: dropped). The final assistant turn is only in
`response.choices[0].message`; it is appended, with the response's model, id and time.

OpenHands writes the logs to `llm_completions/<instance>/<model>-<time>.json`, so a
session is named after the folder its file is in.

When the model answers without a tool call, OpenHands' headless runs reply in the
user's role themselves ("Please continue working on the task on whatever approach you
think is suitable. ..."). Those turns become notices (`UserTurn.notice`): the harness
wrote them, and the request they follow is the task.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import JsonValue

from context_graph.errors import IngestError
from context_graph.formats.openai_chat.read import (
    ConversionState,
    message_to_events,
    messages_to_events,
)
from context_graph.graph.events import AgentEvent, UserTurn
from context_graph.importers._base import (
    ImportedSession,
    RawInput,
    expect_list,
    expect_mapping,
    iso_timestamp,
    with_fields,
)
from context_graph.importers._openhands_events import (
    AUTO_REPLY,
    history_sessions,
    looks_like_history,
)

__all__ = ["sniff", "to_sessions"]

_RESPONSE_PATH = "response.choices[0].message"


def sniff(raw: RawInput) -> bool:
    """Whether `raw` is an LLM call log or an OpenHands event stream.

    A call log has `messages` and a `response` with `choices`.
    """
    data = raw.data
    if looks_like_history(data):
        return True
    if not isinstance(data, Mapping) or not isinstance(data.get("messages"), list):
        return False
    response = data.get("response")
    return isinstance(response, Mapping) and isinstance(response.get("choices"), list)


def to_sessions(raw: RawInput) -> list[ImportedSession]:
    """Convert the log to one session: the request's messages, then the response.

    Raises:
        IngestError: the log or a message is malformed (names the message and field).
    """
    if looks_like_history(raw.data):
        return history_sessions(raw)
    log = expect_mapping(raw.data, raw.at(), "an OpenHands LLM call log")
    messages = expect_list(log.get("messages"), raw.at(None, "messages"), "`messages`")
    response = expect_mapping(log.get("response"), raw.at(None, "response"), "`response`")
    state = ConversionState()
    events = [
        _as_notice(event)
        for event in messages_to_events(messages, raw, base_path="messages", state=state)
    ]
    events.append(_final_turn(response, raw, len(messages), state))
    meta: dict[str, JsonValue] = {"format": "openhands"}
    if isinstance(response.get("model"), str):
        meta["model"] = response["model"]
    if isinstance(log.get("cost"), int | float) and not isinstance(log.get("cost"), bool):
        meta["cost"] = log["cost"]
    timestamp = iso_timestamp(log.get("timestamp"))
    if timestamp is not None:
        meta["timestamp"] = timestamp
    name = raw.path.parent.name if raw.path is not None else "openhands"
    return [ImportedSession(name=name or "openhands", events=events, meta=meta)]


def _as_notice(event: AgentEvent) -> AgentEvent:
    """A user turn that is OpenHands' own automatic reply, marked as a notice."""
    if not isinstance(event, UserTurn) or not event.content:
        return event
    first = getattr(event.content[0], "text", None)
    if isinstance(first, str) and first.startswith(AUTO_REPLY):
        return with_fields(event, notice=True)
    return event


def _final_turn(
    response: Mapping[str, Any], raw: RawInput, index: int, state: ConversionState
) -> AgentEvent:
    """The response's first choice as the last assistant turn, at message `index`."""
    where = raw.at(index, _RESPONSE_PATH)
    choices = expect_list(response.get("choices"), raw.at(None, "response.choices"), "`choices`")
    if not choices:
        raise IngestError("`choices` is empty: the response has no message", where)
    choice = expect_mapping(choices[0], raw.at(None, "response.choices[0]"), "choice")
    message = expect_mapping(choice.get("message"), where, "choice `message`")
    if message.get("role", "assistant") != "assistant":
        msg = f"the response message has role {message.get('role')!r}; expected 'assistant'"
        raise IngestError(msg, where.with_path("role"))
    (event,) = message_to_events({**message, "role": "assistant"}, where, state)
    model, message_id = response.get("model"), response.get("id")
    return with_fields(
        event,
        model=model if isinstance(model, str) else None,
        message_id=message_id if isinstance(message_id, str) else None,
        timestamp=iso_timestamp(response.get("created")),
    )
