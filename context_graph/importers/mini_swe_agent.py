"""mini-swe-agent trajectories (`.traj.json`): OpenAI-style `messages` of a tool-calling run.

The assistant calls a `bash` tool; each result's text wraps the command's output in
`<returncode>` / `<output>` tags (or `<exception>`, `<warning>`, `<output_head>` ... for
failures and long outputs). The text is kept exactly as the model saw it; the return code
also goes to the result's `exit_code` (to a text run's user turn's `meta["returncode"]`),
and a non-zero code sets `is_error`.

Each message carries an `extra` field (the raw API response, the command's raw output):
it is not content and only its timestamp, model and response id are read. The run ends
with a `role: "exit"` message holding the submission: it is not a turn and is skipped,
so a run that stopped right after a call leaves that call unanswered. Reasoner runs keep
`reasoning_content` as thinking.

mini-swe-agent 2 run with a Responses API model (its `litellm_response` models) records
the Responses shape instead: each model turn is the whole response object (`object:
"response"`, its `output` items: reasoning, messages, `function_call`s), each command's
output a `function_call_output` item, a format error a `message` item; the system prompt
and the task stay chat messages. Such a run is read as the items the model was sent
(the response objects flattened into their output, as mini-swe-agent does before each
call), with the same return codes.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pydantic import JsonValue

from context_graph.errors import SourceLocation
from context_graph.formats.openai_chat.read import ConversionState, message_to_events
from context_graph.formats.openai_responses.read import ItemReader
from context_graph.graph.events import AgentEvent, AssistantTurn, ToolResult, UserTurn
from context_graph.importers._base import (
    ImportedSession,
    RawInput,
    expect_list,
    expect_mapping,
    iso_timestamp,
    read_exit_code,
    with_fields,
)

__all__ = ["sniff", "to_sessions"]

# Ten digits hold every status; a longer number is not one (and `int` refuses huge ones).
_RETURNCODE = re.compile(r"^<returncode>(-?\d{1,10})</returncode>$", re.MULTILINE)


def sniff(raw: RawInput) -> bool:
    """Whether `raw` is a mini-swe-agent trajectory (by its format tag or `exit` message)."""
    data = raw.data
    if not isinstance(data, Mapping) or not isinstance(data.get("messages"), list):
        return False
    tag = data.get("trajectory_format")
    if isinstance(tag, str):
        return tag.startswith("mini-swe-agent")
    last = data["messages"][-1] if data["messages"] else None
    return isinstance(last, Mapping) and last.get("role") == "exit"


def to_sessions(raw: RawInput) -> list[ImportedSession]:
    """Convert the trajectory to one session.

    Raises:
        IngestError: the trajectory or a message is malformed (names the message).
    """
    root = expect_mapping(raw.data, raw.at(), "a mini-swe-agent trajectory")
    messages = expect_list(root.get("messages"), raw.at(None, "messages"), "`messages`")
    if any(_is_responses_item(m) for m in messages):
        return [_responses_session(root, messages, raw)]
    state = ConversionState()
    events: list[AgentEvent] = []
    meta: dict[str, JsonValue] = {"format": "mini_swe_agent"}
    for message, where, extra in _turns(messages, raw, meta):
        events.extend(_decorate(e, extra) for e in message_to_events(message, where, state))
    meta.update(_run_meta(root))
    return [ImportedSession(name=_name(root, raw), events=events, meta=meta)]


def _turns(
    messages: Sequence[Any], raw: RawInput, meta: dict[str, JsonValue]
) -> Iterator[tuple[Mapping[str, Any], SourceLocation, Mapping[str, Any]]]:
    """Each message with its place and its `extra`; the closing `exit` only gives `meta`."""
    for index, item in enumerate(messages):
        where = raw.at(index, f"messages[{index}]")
        message = expect_mapping(item, where, "message")
        if message.get("role") == "exit":
            meta.update(_exit_meta(message))
            continue
        extra = message.get("extra")
        yield message, where, extra if isinstance(extra, Mapping) else {}


def _is_responses_item(message: Any) -> bool:
    """A response object or an item of the Responses API (mini-swe-agent 2's `litellm_response`)."""
    return isinstance(message, Mapping) and (
        message.get("object") == "response" or isinstance(message.get("type"), str)
    )


def _responses_session(
    root: Mapping[str, Any], messages: Sequence[Any], raw: RawInput
) -> ImportedSession:
    """A run recorded in the Responses shape, read as the items its model was sent."""
    reader = ItemReader()
    meta: dict[str, JsonValue] = {"format": "mini_swe_agent"}
    for message, where, extra in _turns(messages, raw, meta):
        timestamp = iso_timestamp(extra.get("timestamp"))
        if message.get("object") != "response":
            reader.read(_without_extra(message), where, timestamp)
            continue
        if isinstance(message.get("model"), str):
            reader.model = message["model"]
        output = expect_list(message.get("output"), where.with_path("output"), "`output`")
        for number, found in enumerate(output):
            at = where.with_path(f"output[{number}]")
            reader.read(_without_extra(expect_mapping(found, at, "an output item")), at, timestamp)
        reader.flush()  # one response, one assistant turn
    events = [
        _decorate(event, {}) if isinstance(event, ToolResult) else event
        for event in reader.finish()
    ]
    meta.update(_run_meta(root))
    return ImportedSession(name=_name(root, raw), events=events, meta=meta)


def _without_extra(message: Mapping[str, Any]) -> dict[str, Any]:
    """The message as the model was sent it: mini-swe-agent's `extra` is its own."""
    return {key: value for key, value in message.items() if key != "extra"}


def _decorate(event: AgentEvent, extra: Mapping[str, Any]) -> AgentEvent:
    """Add what the source knows beyond the message: time, model, return code."""
    timestamp = iso_timestamp(extra.get("timestamp"))
    if isinstance(event, AssistantTurn):
        response = extra.get("response")
        response = response if isinstance(response, Mapping) else {}
        model, message_id = response.get("model"), response.get("id")
        return with_fields(
            event,
            timestamp=timestamp,
            model=model if isinstance(model, str) else None,
            message_id=message_id if isinstance(message_id, str) else None,
        )
    returncode = _returncode(event)
    if returncode is None:
        return with_fields(event, timestamp=timestamp)
    if isinstance(event, ToolResult):
        return with_fields(
            event, timestamp=timestamp, exit_code=returncode, is_error=returncode != 0
        )
    # A text run's observation is a user turn, which has no typed status: meta keeps it.
    meta: dict[str, JsonValue] = {"returncode": returncode}
    return with_fields(event, timestamp=timestamp, meta=meta)


def _returncode(event: AgentEvent) -> int | None:
    """The `<returncode>` of a command's output (a tool result, or a user turn in text runs)."""
    if not isinstance(event, ToolResult | UserTurn):
        return None
    text = "".join(getattr(part, "text", "") for part in event.content)
    found = _RETURNCODE.search(text)
    return read_exit_code(int(found.group(1))) if found else None


def _exit_meta(message: Mapping[str, Any]) -> dict[str, JsonValue]:
    extra = message.get("extra")
    status = extra.get("exit_status") if isinstance(extra, Mapping) else None
    return {"exit_status": status} if isinstance(status, str) else {}


def _run_meta(root: Mapping[str, Any]) -> dict[str, JsonValue]:
    meta: dict[str, JsonValue] = {}
    info = root.get("info")
    info = info if isinstance(info, Mapping) else {}
    if isinstance(info.get("exit_status"), str):
        meta["exit_status"] = info["exit_status"]
    config = info.get("config")
    model = config.get("model") if isinstance(config, Mapping) else None
    name = model.get("model_name") if isinstance(model, Mapping) else None
    if isinstance(name, str):
        meta["model"] = name
    if isinstance(root.get("trajectory_format"), str):
        meta["trajectory_format"] = root["trajectory_format"]
    return meta


def _name(root: Mapping[str, Any], raw: RawInput) -> str:
    instance = root.get("instance_id")
    if isinstance(instance, str) and instance:
        return instance
    if raw.path is not None:
        return raw.path.name.removesuffix(".json").removesuffix(".traj")
    return "mini-swe-agent"
