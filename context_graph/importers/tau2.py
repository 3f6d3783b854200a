"""Importer for tau2-bench run files (`{"info", "tasks", "simulations": [...]}`).

Each simulation becomes one session, named `task-<task id>-trial-<trial>`:

- the agent's system prompt is not in the messages; the run's policy stands for it
  (`simulations[].policy`, else `info.environment_info.policy`) as the first event;
- the first message is usually the agent's greeting, an assistant turn before any user
  turn; it is kept as it is;
- tool calls are flat `{id, name, arguments}` and a tool message names its call in `id`;
  ids such as `gem_<tool>_<n>` repeat over a run, so pairing is left to the graph, which
  pairs by position;
- calls the user simulator makes (`requestor: "user"`) and their results never reach the
  agent, so they are left out;
- the string `'None'` (a Python repr) stands for null in optional fields; a field that
  holds Python-repr text (`"{'a': 1}"`) is read as the literal it spells.

The task's gold facts (`evaluation_criteria`: expected actions with their arguments, and
the information to communicate) go into `ImportedSession.facts`.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping, Sequence
from typing import Any, TypeAlias

from pydantic import JsonValue

from context_graph.errors import IngestError, SourceLocation
from context_graph.graph.events import (
    AgentEvent,
    AssistantTurn,
    SystemPrompt,
    ToolCall,
    ToolResult,
    UserTurn,
)
from context_graph.importers._base import (
    ImportedSession,
    RawInput,
    expect_list,
    expect_mapping,
    expect_str,
)

__all__ = ["sniff", "to_sessions"]

_ROLES = ("assistant", "user", "tool")

_Task: TypeAlias = tuple[Mapping[str, Any], SourceLocation]
"""A task record and where it is."""


def sniff(raw: RawInput) -> bool:
    """Whether `raw` looks like a tau2-bench run file (never raises)."""
    data = raw.data
    if not isinstance(data, Mapping) or not ("tasks" in data or "info" in data):
        return False
    simulations = data.get("simulations")
    if not isinstance(simulations, list):
        return False
    return not simulations or (isinstance(simulations[0], Mapping) and "messages" in simulations[0])


def to_sessions(raw: RawInput) -> list[ImportedSession]:
    """Convert every simulation of a tau2 run to a session.

    Raises:
        IngestError: the run is malformed; names the simulation, message and field.
    """
    data = expect_mapping(raw.data, raw.at(), "a tau2 run")
    where = raw.at(None, "simulations")
    simulations = expect_list(data.get("simulations"), where, "`simulations`")
    info = _mapping_or_empty(data.get("info"), raw.at(None, "info"), "`info`")
    tasks = _tasks_by_id(data, raw)
    return [_session(raw, s, sim, info, tasks) for s, sim in enumerate(simulations)]


def _session(
    raw: RawInput,
    s: int,
    value: Any,
    info: Mapping[str, Any],
    tasks: Mapping[str, _Task],
) -> ImportedSession:
    where = raw.at(None, f"simulations[{s}]")
    sim = expect_mapping(value, where, "a simulation")
    task_id = _task_id(sim.get("task_id"), where.with_path("task_id"))
    trial = _none(sim.get("trial"))
    events: list[AgentEvent] = []
    policy, policy_path = _policy(sim, info)
    if policy:
        source = where.with_path("policy") if policy_path == "policy" else raw.at(None, policy_path)
        events.append(SystemPrompt(content=policy, source=source))
    messages = expect_list(sim.get("messages"), where.with_path("messages"), "`messages`")
    model = _str_at(info, "agent_info", "llm")
    for index, message in enumerate(messages):
        events.extend(_message(raw, s, index, message, model))
    task = tasks.get(task_id)
    return ImportedSession(
        name=f"task-{task_id}-trial-{trial if trial is not None else 0}",
        events=events,
        facts=_facts(task) if task is not None else [],
        meta=_session_meta(sim, info, task, task_id),
    )


def _policy(sim: Mapping[str, Any], info: Mapping[str, Any]) -> tuple[str | None, str]:
    """The policy text and the JSON path it was found at."""
    policy = _none(sim.get("policy"))
    if isinstance(policy, str):
        return policy, "policy"
    return _str_at(info, "environment_info", "policy"), "info.environment_info.policy"


# --- messages -------------------------------------------------------------------------------


def _message(raw: RawInput, s: int, index: int, value: Any, model: str | None) -> list[AgentEvent]:
    where = raw.at(index, f"simulations[{s}].messages[{index}]")
    message = expect_mapping(value, where, "a message")
    role = message.get("role")
    if role not in _ROLES:
        msg = f"unknown role {role!r}; expected one of {', '.join(_ROLES)}"
        raise IngestError(msg, where.with_path("role"))
    timestamp = _optional_str(message, "timestamp", where)
    meta: dict[str, JsonValue] = {}
    turn_idx = _none(message.get("turn_idx"))
    if isinstance(turn_idx, int):
        meta["turn_idx"] = turn_idx
    common: dict[str, Any] = {"timestamp": timestamp, "meta": meta, "source": where}
    if role == "tool":
        if _optional_str(message, "requestor", where) == "user":
            return []
        return [_tool_result(message, where, common)]
    text = _optional_str(message, "content", where)
    if role == "user":
        # A user's own tool calls go to the user simulator, not to the agent.
        return [UserTurn(content=text, **common)] if text else []
    calls = _tool_calls(message.get("tool_calls"), where.with_path("tool_calls"))
    return [AssistantTurn(content=text or (), tool_calls=calls, model=model, **common)]


def _tool_calls(value: Any, where: SourceLocation) -> tuple[ToolCall, ...]:
    parsed = _literal(_none(value), where, "`tool_calls`")
    if parsed is None:
        return ()
    calls: list[ToolCall] = []
    for k, item in enumerate(expect_list(parsed, where, "`tool_calls`")):
        inner = _index(where, k)
        call = expect_mapping(item, inner, "a tool call")
        if _none(call.get("requestor")) == "user":
            continue
        call_id = _nonempty(call.get("id"), inner.with_path("id"), "tool call `id`")
        name = _nonempty(call.get("name"), inner.with_path("name"), "tool call `name`")
        arguments = _arguments(call.get("arguments"), inner.with_path("arguments"))
        calls.append(ToolCall(id=call_id, name=name, arguments=arguments))
    return tuple(calls)


def _tool_result(
    message: Mapping[str, Any], where: SourceLocation, common: dict[str, Any]
) -> ToolResult:
    call_id = _nonempty(message.get("id"), where.with_path("id"), "tool message `id`")
    content = message.get("content")
    # The tool's output is kept verbatim: a tool that returned None printed `None`.
    text = "" if content is None else expect_str(content, where.with_path("content"), "`content`")
    error = _flag(message.get("error"), where.with_path("error"))
    return ToolResult(call_id=call_id, content=text, is_error=error, **common)


def _arguments(value: Any, where: SourceLocation) -> str:
    parsed = _literal(_none(value), where, "tool call `arguments`")
    if parsed is None:
        return "{}"
    expect_mapping(parsed, where, "tool call `arguments`")
    try:
        return json.dumps(parsed, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError) as exc:
        msg = f"tool call `arguments` are not JSON-serializable: {exc}"
        raise IngestError(msg, where) from None


# --- facts and metadata ---------------------------------------------------------------------


def _tasks_by_id(data: Mapping[str, Any], raw: RawInput) -> dict[str, _Task]:
    tasks = _none(data.get("tasks"))
    found: dict[str, _Task] = {}
    for t, value in enumerate(expect_list(tasks or [], raw.at(None, "tasks"), "`tasks`")):
        where = raw.at(None, f"tasks[{t}]")
        task = expect_mapping(value, where, "a task")
        found[_task_id(task.get("id"), where.with_path("id"))] = (task, where)
    return found


def _facts(task: _Task) -> list[str]:
    """The task's gold facts: `action: <name> <arguments JSON>`, `communicate: <info>`."""
    body, where = task
    where = where.with_path("evaluation_criteria")
    criteria = _literal(_none(body.get("evaluation_criteria")), where, "`evaluation_criteria`")
    if criteria is None:
        return []
    criteria = expect_mapping(criteria, where, "`evaluation_criteria`")
    facts: list[str] = []
    for a, action in enumerate(_list_field(criteria, "actions", where)):
        inner = where.with_path(f"actions[{a}]")
        action = expect_mapping(action, inner, "an expected action")
        name = _nonempty(action.get("name"), inner.with_path("name"), "expected action `name`")
        arguments = _arguments(action.get("arguments"), inner.with_path("arguments"))
        facts.append(f"action: {name} {arguments}")
    for key in ("communicate_info", "outputs"):
        facts.extend(f"communicate: {item}" for item in _list_field(criteria, key, where))
    return facts


def _session_meta(
    sim: Mapping[str, Any],
    info: Mapping[str, Any],
    task: _Task | None,
    task_id: str,
) -> dict[str, JsonValue]:
    reward = sim.get("reward_info")
    fields: dict[str, Any] = {
        "format": "tau2",
        "task_id": task_id,
        "trial": _none(sim.get("trial")),
        "simulation_id": _none(sim.get("id")),
        "termination_reason": _none(sim.get("termination_reason")),
        "reward": reward.get("reward") if isinstance(reward, Mapping) else None,
        "domain": _str_at(info, "environment_info", "domain_name"),
        "agent": _str_at(info, "agent_info", "implementation"),
        "model": _str_at(info, "agent_info", "llm"),
        "user_model": _str_at(info, "user_info", "llm"),
    }
    meta: dict[str, JsonValue] = {
        k: v for k, v in fields.items() if isinstance(v, str | int | float) and v != "None"
    }
    criteria = task[0].get("evaluation_criteria") if task is not None else None
    assertions = criteria.get("nl_assertions") if isinstance(criteria, Mapping) else None
    if isinstance(assertions, list) and all(isinstance(a, str) for a in assertions):
        meta["nl_assertions"] = list(assertions)
    return meta


# --- small readers --------------------------------------------------------------------------


def _none(value: Any) -> Any:
    """Read the Python repr `'None'` as null."""
    return None if value == "None" else value


def _literal(value: Any, where: SourceLocation, what: str) -> Any:
    """Parse text that spells a JSON or Python literal; return other values unchanged."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except (ValueError, RecursionError):
        pass
    try:
        return ast.literal_eval(value)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        msg = f"{what} is text that is neither JSON nor a Python literal"
        raise IngestError(msg, where) from None


def _optional_str(message: Mapping[str, Any], key: str, where: SourceLocation) -> str | None:
    value = _none(message.get(key))
    if value is None:
        return None
    return expect_str(value, where.with_path(key), f"`{key}`")


def _nonempty(value: Any, where: SourceLocation, what: str) -> str:
    text = expect_str(_none(value), where, what)
    if not text:
        raise IngestError(f"{what} must not be empty", where)
    return text


def _flag(value: Any, where: SourceLocation) -> bool:
    value = _none(value)
    if value is None or isinstance(value, bool):
        return bool(value)
    if value in ("True", "False", "true", "false"):
        return value in ("True", "true")
    raise IngestError(f"`error` must be a boolean, got {value!r}", where)


def _task_id(value: Any, where: SourceLocation) -> str:
    value = _none(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return _nonempty(value, where, "task id")


def _list_field(body: Mapping[str, Any], key: str, where: SourceLocation) -> Sequence[Any]:
    value = _literal(_none(body.get(key)), where.with_path(key), f"`{key}`")
    return expect_list(value or [], where.with_path(key), f"`{key}`")


def _mapping_or_empty(value: Any, where: SourceLocation, what: str) -> Mapping[str, Any]:
    value = _none(value)
    return {} if value is None else expect_mapping(value, where, what)


def _str_at(body: Mapping[str, Any], key: str, field: str) -> str | None:
    inner = body.get(key)
    value = inner.get(field) if isinstance(inner, Mapping) else None
    return value if isinstance(value, str) and value != "None" else None


def _index(where: SourceLocation, k: int) -> SourceLocation:
    """A location one array index deeper (`tool_calls[2]`, not `tool_calls.[2]`)."""
    path = f"{where.path}[{k}]" if where.path else f"[{k}]"
    return SourceLocation(where.file, where.line, where.index, path)
