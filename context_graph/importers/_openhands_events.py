"""OpenHands event streams: a run as OpenHands records it, event by event.

Besides its LLM call logs (`openhands`), OpenHands keeps a run as a list of events: what
the trajectory download of its UI saves, what `tests/runtime/trajs/` replays, and each
instance's `history` in an evaluation's `output.jsonl`. An event is an action (`action`:
`message`, `run`, `edit`, `read`, `finish`, ...) or an observation (`observation`),
with its `source` (`user`, `agent`, `environment`). An action the model asked for
carries `tool_call_metadata`: the call's id and the model's whole response
(`model_response`, a chat completion), which holds the assistant's text and every call
of that turn; the observation answering it carries the same call id and its output in
`content`.

Read here as the chat messages the model was sent: a user's message is a user turn
(OpenHands' own automatic "Please continue..." reply a notice, as in the call logs); the
first action of a model response is the assistant turn with all that response's calls
(the response's other actions are the same turn); an agent message without a call is
an assistant turn; an observation with a call id is that call's result (an `error`
observation an error, a command's exit code kept), and an error observation without
one (an action that failed before it ran) is a notice with its text. A `system` action
is the system prompt. A recall gives the repository's instructions as a pinned note and
the triggered microagents' knowledge as a notice. What only drives OpenHands (agent
state changes, `null` observations, its own condensations) is counted in
`meta["skipped_events"]`.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic import JsonValue

from context_graph.errors import IngestError, SourceLocation
from context_graph.formats.openai_chat.read import ConversionState, message_to_events
from context_graph.graph.events import AgentEvent, Note, ToolResult, UserTurn
from context_graph.importers._base import (
    ImportedSession,
    RawInput,
    expect_list,
    expect_mapping,
    read_exit_code,
    with_fields,
)

__all__ = ["history_sessions", "looks_like_history"]

#: What a workspace recall carries that the model is to follow (OpenHands' `RecallObservation`).
_INSTRUCTIONS = ("repo_instructions", "conversation_instructions", "additional_agent_instructions")
#: How OpenHands' automatic reply to a turn without a tool call begins.
AUTO_REPLY = "Please continue working on the task on whatever approach you think is suitable."


def _is_event(value: Any) -> bool:
    return (
        isinstance(value, Mapping)
        and isinstance(value.get("source"), str)
        and (isinstance(value.get("action"), str) or isinstance(value.get("observation"), str))
    )


def looks_like_history(data: Any) -> bool:
    """Whether `data` is an event list, or evaluation output rows holding one in `history`."""
    if isinstance(data, list) and data:
        first = data[0]
        if isinstance(first, Mapping) and isinstance(first.get("history"), list):
            return _is_event(first["history"][0]) if first["history"] else False
        return _is_event(first)
    if isinstance(data, Mapping) and isinstance(data.get("history"), list):
        return bool(data["history"]) and _is_event(data["history"][0])
    return False


def history_sessions(raw: RawInput) -> list[ImportedSession]:
    """One session per event list: the file's, or each evaluation row's `history`.

    Raises:
        IngestError: an event is malformed (names the event and the field).
    """
    data = raw.data
    evaluation = isinstance(data, Mapping) or (
        bool(data) and isinstance(data[0], Mapping) and "history" in data[0]
    )
    if not evaluation:  # the event list itself: event `index` is item `index`
        return [_session(data, lambda index: raw.at(index), _name(raw, None, {}))]
    rows = [(None, data)] if isinstance(data, Mapping) else list(enumerate(data))
    sessions = []
    for number, value in rows:
        row = expect_mapping(value, raw.at(number), "an evaluation row")
        history = expect_list(row.get("history"), raw.at(number, "history"), "`history`")

        def locate(index: int, number: int | None = number) -> SourceLocation:
            return raw.at(number, f"history[{index}]")

        sessions.append(_session(history, locate, _name(raw, number, row)))
    return sessions


def _name(raw: RawInput, index: int | None, row: Mapping[str, Any]) -> str:
    instance = row.get("instance_id")
    if isinstance(instance, str) and instance:
        return instance
    stem = raw.path.stem if raw.path is not None else "openhands"
    return stem if index is None else f"{stem}[{index}]"


def _session(
    history: Sequence[Any], locate: Callable[[int], SourceLocation], name: str
) -> ImportedSession:
    reader = _Reader()
    for index, event in enumerate(history):
        reader.read(event, locate(index))
    meta: dict[str, JsonValue] = {"format": "openhands", "shape": "events"}
    if reader.models:
        meta["model"] = reader.models[0]
        meta["models"] = list(reader.models)
    if reader.skipped:
        meta["skipped_events"] = dict(sorted(reader.skipped.items()))
    return ImportedSession(name=name, events=reader.events, meta=meta)


class _Reader:
    """Turns one event list into events, remembering the model responses already read."""

    def __init__(self) -> None:
        self.state = ConversionState()
        self.events: list[AgentEvent] = []
        self.skipped: Counter[str] = Counter()
        self.models: list[str] = []
        self._responses: set[str] = set()

    def read(self, value: Any, where: SourceLocation) -> None:
        event = expect_mapping(value, where, "an OpenHands event")
        if isinstance(event.get("observation"), str):
            self._observation(event, where)
        elif isinstance(event.get("action"), str):
            self._action(event, where)
        else:
            msg = "an OpenHands event must name its `action` or its `observation`"
            raise IngestError(msg, where)

    def _add(self, message: Mapping[str, Any], where: SourceLocation) -> list[AgentEvent]:
        added = message_to_events(message, where, self.state)
        self.events.extend(added)
        return added

    def _action(self, event: Mapping[str, Any], where: SourceLocation) -> None:
        action, source = event["action"], event.get("source")
        args = event.get("args")
        args = args if isinstance(args, Mapping) else {}
        metadata = event.get("tool_call_metadata")
        if isinstance(metadata, Mapping):
            self._call(event, metadata, args, where)
        elif action == "message" and source in ("user", "agent"):
            text = args.get("content", event.get("message"))
            if not isinstance(text, str):
                msg = f"a message's text must be a string, got {type(text).__name__}"
                raise IngestError(msg, where.with_path("args.content"))
            if source == "agent":
                self._add({"role": "assistant", "content": text}, where)
                return
            (turn,) = self._add({"role": "user", "content": text}, where)
            if text.startswith(AUTO_REPLY) and isinstance(turn, UserTurn):
                self.events[-1] = with_fields(turn, notice=True)
        elif action == "system" and isinstance(args.get("content"), str):
            self._add({"role": "system", "content": args["content"]}, where)
        else:
            self.skipped[f"action:{action}"] += 1

    def _call(
        self,
        event: Mapping[str, Any],
        metadata: Mapping[str, Any],
        args: Mapping[str, Any],
        where: SourceLocation,
    ) -> None:
        """The assistant turn of the model response this action came from, once."""
        at = where.with_path("tool_call_metadata")
        response = metadata.get("model_response")
        if isinstance(response, Mapping) and isinstance(response.get("id"), str):
            if response["id"] in self._responses:
                return  # another call of a turn already read
            self._responses.add(response["id"])
            model = response.get("model")
            if isinstance(model, str) and model not in self.models:
                self.models.append(model)
            choices = expect_list(
                response.get("choices"), at.with_path("model_response.choices"), "`choices`"
            )
            if not choices:
                raise IngestError(
                    "the model response has no choice", at.with_path("model_response")
                )
            choice = expect_mapping(
                choices[0], at.with_path("model_response.choices[0]"), "a choice"
            )
            message = expect_mapping(
                choice.get("message"),
                at.with_path("model_response.choices[0].message"),
                "`message`",
            )
            self._add({**message, "role": "assistant"}, where)
            return
        # No response kept: the call as the action names it, its arguments those it ran with.
        call_id, name = metadata.get("tool_call_id"), metadata.get("function_name")
        if not isinstance(call_id, str) or not call_id or not isinstance(name, str) or not name:
            msg = "a call's metadata must name its `tool_call_id` and `function_name`"
            raise IngestError(msg, at)
        thought = args.get("thought")
        arguments = {k: v for k, v in args.items() if k != "thought"}
        call = {
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)},
        }
        text = thought if isinstance(thought, str) else ""
        self._add({"role": "assistant", "content": text, "tool_calls": [call]}, where)

    def _observation(self, event: Mapping[str, Any], where: SourceLocation) -> None:
        kind = event["observation"]
        metadata = event.get("tool_call_metadata")
        call_id = metadata.get("tool_call_id") if isinstance(metadata, Mapping) else None
        content = event.get("content")
        if content is None:
            content = event.get("message", "")
        if not isinstance(content, str):
            msg = f"an observation's `content` must be a string, got {type(content).__name__}"
            raise IngestError(msg, where.with_path("content"))
        if isinstance(call_id, str) and call_id:
            (result,) = self._add(
                {"role": "tool", "tool_call_id": call_id, "content": content}, where
            )
            updates: dict[str, Any] = {"is_error": kind == "error"}
            extras = event.get("extras")
            found = extras.get("metadata") if isinstance(extras, Mapping) else None
            code = read_exit_code(found.get("exit_code")) if isinstance(found, Mapping) else None
            if code is not None and isinstance(result, ToolResult):
                updates["exit_code"] = code
            self.events[-1] = with_fields(result, **updates)
        elif kind == "error" and content:
            # An action that failed before it ran: the model is told so in the user's role.
            (turn,) = self._add({"role": "user", "content": content}, where)
            self.events[-1] = with_fields(turn, notice=True)
        elif kind == "recall" and self._recall(event.get("extras"), where):
            return
        else:
            self.skipped[f"observation:{kind}"] += 1

    def _recall(self, extras: Any, where: SourceLocation) -> bool:
        """Add what a recall gave the model; whether it gave anything.

        The repository's instructions become a pinned note (a compaction must not lose
        them, as a `CLAUDE.md`), the knowledge of the microagents the task's words
        triggered a notice.
        """
        if not isinstance(extras, Mapping):
            return False
        rules = [
            text.strip()
            for key in _INSTRUCTIONS
            if isinstance(text := extras.get(key), str) and text.strip()
        ]
        if rules:
            self.events.append(Note(content="\n\n".join(rules), source=where))
        found = extras.get("microagent_knowledge")
        knowledge = [
            f"{item.get('name') or 'microagent'}:\n{item['content']}"
            for item in (found if isinstance(found, list) else [])
            if isinstance(item, Mapping) and isinstance(item.get("content"), str)
        ]
        if knowledge:
            text = "Knowledge the task's words called up:\n\n" + "\n\n".join(knowledge)
            self.events.append(UserTurn(content=text, notice=True, source=where))
        return bool(rules or knowledge)
