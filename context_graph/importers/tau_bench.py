"""tau-bench runs: a JSON list of runs, each with an OpenAI chat list in `traj`.

Each run becomes one session named by its task and trial (`task-9-trial-0`). The gold
actions and outputs in `info.task` become the session's facts: an action as its name and
arguments (`get_reservation_details(reservation_id="3RK2T9")`), an output as its text.

tau-bench reuses a `tool_call_id` for a later call once the first was answered; the
graph pairs results with the most recent open call of that id, so nothing is renamed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic import JsonValue

from context_graph.errors import IngestError, SourceLocation
from context_graph.formats.openai_chat.read import messages_to_events
from context_graph.importers._base import (
    ImportedSession,
    RawInput,
    expect_list,
    expect_mapping,
    expect_str,
)

__all__ = ["sniff", "to_sessions"]


def sniff(raw: RawInput) -> bool:
    """Whether `raw` is a list of tau-bench runs (objects with `traj` and `task_id`)."""
    runs = raw.data
    if not isinstance(runs, list) or not runs:
        return False
    return all(
        isinstance(run, Mapping) and isinstance(run.get("traj"), list) and "task_id" in run
        for run in runs
    )


def to_sessions(raw: RawInput) -> list[ImportedSession]:
    """Convert every run to a session, in file order.

    Raises:
        IngestError: a run or one of its messages is malformed (names the run's path).
    """
    runs = expect_list(raw.data, raw.at(), "a tau-bench file")
    sessions: list[ImportedSession] = []
    names: set[str] = set()
    for position, run in enumerate(runs):
        session = _session(run, position, raw)
        if session.name in names:
            session.name = f"{session.name}-run-{position}"
        names.add(session.name)
        sessions.append(session)
    return sessions


def _session(value: Any, position: int, raw: RawInput) -> ImportedSession:
    where = raw.at(None, f"[{position}]")
    run = expect_mapping(value, where, "run")
    traj = expect_list(run.get("traj"), where.with_path("traj"), "run `traj`")
    task_id = run.get("task_id")
    if isinstance(task_id, bool) or not isinstance(task_id, int | str):
        msg = "run `task_id` must be an integer or a string"
        raise IngestError(msg, where.with_path("task_id"))
    trial = run.get("trial")
    if trial is not None and (isinstance(trial, bool) or not isinstance(trial, int)):
        raise IngestError("run `trial` must be an integer", where.with_path("trial"))
    events = messages_to_events(traj, raw, base_path=f"[{position}].traj")
    meta: dict[str, JsonValue] = {"format": "tau_bench", "task_id": task_id, "trial": trial}
    reward = run.get("reward")
    if isinstance(reward, int | float) and not isinstance(reward, bool):
        meta["reward"] = reward
    name = f"task-{task_id}" + (f"-trial-{trial}" if trial is not None else "")
    facts = _facts(run.get("info"), where.with_path("info"))
    return ImportedSession(name=name, events=events, facts=facts, meta=meta)


def _facts(value: Any, where: SourceLocation) -> list[str]:
    """The gold actions and outputs of `info.task`, as strings."""
    if value is None:
        return []
    info = expect_mapping(value, where, "run `info`")
    if info.get("task") is None:
        return []
    task = expect_mapping(info["task"], where.with_path("task"), "`info.task`")
    facts: list[str] = []
    actions = task.get("actions", [])
    for i, action in enumerate(expect_list(actions, where.with_path("task.actions"), "actions")):
        facts.append(_action_fact(action, where.with_path(f"task.actions[{i}]")))
    outputs = task.get("outputs", [])
    for i, output in enumerate(expect_list(outputs, where.with_path("task.outputs"), "outputs")):
        here = where.with_path(f"task.outputs[{i}]")
        facts.append(output if isinstance(output, str) else _encode(output, here, i))
    return facts


def _action_fact(value: Any, where: SourceLocation) -> str:
    action = expect_mapping(value, where, "action")
    name = expect_str(action.get("name"), where.with_path("name"), "action `name`")
    kwargs = expect_mapping(action.get("kwargs", {}), where.with_path("kwargs"), "`kwargs`")
    arguments = ", ".join(f"{key}={_encode(arg, where, key)}" for key, arg in kwargs.items())
    return f"{name}({arguments})"


def _encode(value: Any, where: SourceLocation, key: int | str) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (RecursionError, ValueError, TypeError):
        msg = f"value `{key}` cannot be encoded as JSON"
        raise IngestError(msg, where) from None
