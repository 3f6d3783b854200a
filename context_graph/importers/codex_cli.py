"""Codex CLI rollout JSONL: `~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`, one record a line.

Each record is `{"timestamp", "type", "payload"}`. By type:

- `session_meta`: the session's facts (id, working directory, CLI version, git) go to the
  session's `meta`; `base_instructions` (Codex's system prompt; `{"text": ...}` or a string)
  becomes the `SystemPrompt`. Older CLIs record no system prompt, and none is made.
- `response_item`: an OpenAI Responses item, read as `openai_responses` reads items. User
  messages the harness wrote (`<environment_context>`, `# AGENTS.md instructions for ...`,
  `<user_instructions>`, `<turn_aborted>`, `<user_shell_command>`: nothing but such blocks,
  read by `context_graph.formats.harness` as the gateway reads them) become notices
  (`UserTurn.notice`), so the render floor keeps the user's own request. Codex's own
  `ghost_snapshot` items (git snapshots for undo, never sent to the model) are skipped.
  A call output that Codex wrote as `{"output", "metadata": {"exit_code"}}` gives its
  result's `exit_code`; the text is kept as it was.
- `turn_context`: its `model` is credited to the assistant turns that follow.
- `event_msg`: UI events that repeat the items (`agent_message`, `agent_reasoning`,
  `exec_command_end`, ...) are skipped; the last `token_count` gives the session's
  `meta["usage"]` (the provider's running totals) and `model_context_window`. A
  `user_message` is the user's request as the UI showed it: the CLI records the request
  as a `response_item` user message too, just before, and then the event is skipped (it
  pairs with that message); Codex Desktop records the request only as the event, and
  then it becomes the `UserTurn` (its `message`, and its `images` as image parts).
- `compacted`: Codex's own compaction. It becomes a `Compaction` event (origin
  `codex_cli`) standing for everything before it: its content is the readable messages of
  `replacement_history` (what Codex sent in place of the history), developer messages
  aside (they are system prompts already, kept pinned), or `message` when there is no
  replacement history (older CLIs). A replacement history that holds a `compaction` item
  (remote compaction: the compact endpoint's user messages, then the item) becomes the
  item's native compaction instead, sent back verbatim to the Responses API after the
  user's messages (`context_graph.graph.native`), as Codex sent it.

A thread taken back leaves turns in the files that the model was no longer sent; the
import is the history Codex rebuilds from them. A `thread_rolled_back` event (`num_turns`)
drops the last requests, each with everything after it and the harness notices just
before it (`meta["rolled_back_events"]` counts what went). A rollout that continues
another (`session_meta.history_base`: Codex's "paginated" threads start one at each
revert) is read after the part of the one it continues that the history kept, found
among the rollouts beside it (`_codex_history`; `meta["history_base"]` lists them).

Records of other types (later CLI versions add some) are skipped; every skipped record is
counted in `meta["skipped_records"]`.

Rollouts written before the records had types (Codex CLI of mid 2025) are read too: a
header line `{id, timestamp, instructions, git, ...}` (the session's facts, as
`session_meta` gives them), `{"record_type": "state"}` markers (counted as `state`), and
bare Responses items, each with an optional `timestamp` of its own (read as
`response_item`s).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import JsonValue

from context_graph.errors import IngestError, SourceLocation
from context_graph.formats.harness import is_harness_message
from context_graph.formats.openai_responses.read import ItemReader
from context_graph.formats.openai_responses.read_content import content_parts, plain_json
from context_graph.formats.wires import RESPONSES_FORMAT
from context_graph.graph.content import ContentPart, TextPart
from context_graph.graph.events import (
    AgentEvent,
    Compaction,
    SystemPrompt,
    ToolResult,
    UserTurn,
)
from context_graph.importers._base import (
    ImportedSession,
    Names,
    RawInput,
    expect_list,
    expect_mapping,
    expect_str,
    read_exit_code,
    with_fields,
)
from context_graph.importers._codex_history import history_bases
from context_graph.importers._native import native_compaction

__all__ = ["sniff", "to_sessions"]

_RECORDS = Names({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})
# Codex items that are not Responses API items and never reach the model.
_CODEX_ONLY_ITEMS = Names({"ghost_snapshot", "other"})
# How many leading records detection looks at.
_SNIFF_RECORDS = 50
_SESSION_KEYS = {
    "id": "session_id",
    "cwd": "cwd",
    "originator": "originator",
    "cli_version": "cli_version",
    "source": "source",
    "model_provider": "model_provider",
    "instructions": "instructions",
}
_NO_SUMMARY = "[Codex compacted the conversation here; no readable summary was recorded]"


# --- detection ------------------------------------------------------------------------------


def sniff(raw: RawInput) -> bool:
    """Whether `raw` is a Codex rollout, of today or of mid 2025.

    Today's records are `{"type", "payload"}` of Codex's types; a rollout of mid 2025 is
    a header line, then `record_type` markers and bare items.
    """
    data = raw.data
    records = data if isinstance(data, list) else [data]
    return any(_looks_like_record(r) for r in records[:_SNIFF_RECORDS]) or _is_legacy(records)


def _is_legacy(records: Sequence[Any]) -> bool:
    """A rollout from before typed records: its header, then a `record_type` marker."""
    header = records[0] if records else None
    return (
        isinstance(header, Mapping)
        and isinstance(header.get("id"), str)
        and isinstance(header.get("timestamp"), str)
        and "type" not in header
        and "payload" not in header
        and any(
            isinstance(r, Mapping) and isinstance(r.get("record_type"), str)
            for r in records[1:_SNIFF_RECORDS]
        )
    )


def _from_legacy(records: Sequence[Any]) -> list[Any]:
    """A rollout of mid 2025 as the typed records it stands for (same lines, same order).

    The header is the `session_meta`, a marker a record of type `state` (skipped and
    counted), a bare item a `response_item` with the item's own timestamp. Anything
    else stays as it was, for the walk to refuse or count.
    """
    typed: list[Any] = [
        {"type": "session_meta", "timestamp": records[0]["timestamp"], "payload": records[0]}
    ]
    for record in records[1:]:
        if isinstance(record, Mapping) and isinstance(record.get("record_type"), str):
            typed.append({"type": record["record_type"]})
        elif isinstance(record, Mapping) and isinstance(record.get("type"), str):
            item = {key: value for key, value in record.items() if key != "timestamp"}
            typed.append(
                {"type": "response_item", "timestamp": record.get("timestamp"), "payload": item}
            )
        else:
            typed.append(record)
    return typed


def _looks_like_record(record: Any) -> bool:
    return (
        isinstance(record, Mapping)
        and record.get("type") in _RECORDS
        and isinstance(record.get("payload"), Mapping)
    )


# --- sessions -------------------------------------------------------------------------------


def to_sessions(raw: RawInput) -> list[ImportedSession]:
    """Convert one rollout file to one session.

    Raises:
        IngestError: a record or item is malformed; names the file, line and field.
    """
    data = raw.data
    records = data if isinstance(data, list) else [data]
    if not records:
        raise IngestError("a Codex rollout must be a list of records", raw.at())
    bare = _is_legacy(records)
    if bare:
        records = _from_legacy(records)
    walk = _Walk(raw, bare=bare)
    bases, missing = history_bases(raw, records)
    for base in bases:  # the history this rollout continues, each in its own file
        walk.raw = base
        for index, record in enumerate(base.data):
            walk.record(index, record)
    walk.raw = raw
    for index, record in enumerate(records):
        walk.record(index, record)
    if bases:
        walk.meta["history_base"] = [str(base.path) for base in bases]
    if missing is not None:
        walk.meta["history_base_missing"] = missing
    events = walk.reader.finish()
    walk.meta["models"] = walk.models
    walk.meta["skipped_records"] = dict(sorted(walk.skipped.items()))
    return [ImportedSession(name=_name(raw, walk.meta), events=events, meta=walk.meta)]


def _name(raw: RawInput, meta: Mapping[str, JsonValue]) -> str:
    if raw.path is not None:
        return raw.path.stem
    session_id = meta.get("session_id")
    return session_id if isinstance(session_id, str) and session_id else "codex_cli"


@dataclass
class _Walk:
    """The state of converting one rollout, record by record."""

    raw: RawInput
    bare: bool = False
    """A rollout of mid 2025: each item is its line, not a record's `payload`."""
    reader: ItemReader = field(default_factory=ItemReader)
    meta: dict[str, JsonValue] = field(default_factory=lambda: {"format": "codex_cli"})
    models: list[JsonValue] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)
    prompted: bool = False
    unpaired: int = 0
    """The user's own messages read from response items since the last `user_message`
    event: each is what the next such event repeats."""
    recent: list[str] = field(default_factory=list)
    """The texts of every user message item (harness context too) since that event."""

    def record(self, index: int, value: Any) -> None:
        where = self.raw.at(index)
        if not isinstance(value, Mapping):
            msg = f"record must be an object, got {type(value).__name__}"
            raise IngestError(msg, where)
        kind = value.get("type")
        if not isinstance(kind, str):
            raise IngestError("record has no string `type`", where.with_path("type"))
        timestamp = value.get("timestamp")
        if timestamp is not None:
            expect_str(timestamp, where.with_path("timestamp"), "`timestamp`")
        if kind not in _RECORDS:
            self.skipped[kind] += 1
            return
        payload = expect_mapping(value.get("payload"), where.with_path("payload"), "`payload`")
        here = where if self.bare else where.with_path("payload")
        if kind == "response_item":
            self._item(payload, here, timestamp)
        elif kind == "session_meta":
            self._session(payload, here, timestamp)
        elif kind == "turn_context":
            self._turn_context(payload, here)
        elif kind == "event_msg":
            self._event(payload, here, timestamp)
        else:
            self._compacted(payload, here, timestamp)

    def _item(self, payload: Mapping[str, Any], where: SourceLocation, ts: str | None) -> None:
        item_type = payload.get("type")
        if item_type in _CODEX_ONLY_ITEMS:
            self.skipped[f"response_item.{item_type}"] += 1
            return
        before = len(self.reader.events)
        self.reader.read(payload, where, ts)
        for index, event in enumerate(self.reader.events[before:], start=before):
            if isinstance(event, UserTurn):
                self.unpaired += not event.notice
                self.recent.append(_text(event.content))
            code = _output_exit_code(payload) if isinstance(event, ToolResult) else None
            if code is not None:
                self.reader.events[index] = with_fields(event, exit_code=code)

    def _session(self, payload: Mapping[str, Any], where: SourceLocation, ts: str | None) -> None:
        for key, name in _SESSION_KEYS.items():
            value = payload.get(key)
            if name not in self.meta and isinstance(value, str) and value:
                self.meta[name] = value
        if isinstance(payload.get("git"), Mapping) and "git" not in self.meta:
            self.meta["git"] = plain_json(payload["git"], where.with_path("git"))
        prompt = payload.get("base_instructions")
        if prompt is None:
            return
        here = where.with_path("base_instructions")
        if isinstance(prompt, Mapping):
            text = expect_str(prompt.get("text"), here.with_path("text"), "`text`")
        else:
            text = expect_str(prompt, here, "`base_instructions`")
        if self.prompted:  # a resumed or forked session repeats its parent's
            return
        self.prompted = True
        self.reader.flush()
        self.reader.events.append(SystemPrompt(content=text, timestamp=ts, source=here))

    def _turn_context(self, payload: Mapping[str, Any], where: SourceLocation) -> None:
        model = payload.get("model")
        if model is None:
            return
        model = expect_str(model, where.with_path("model"), "`model`")
        self.reader.model = model
        if model not in self.models:
            self.models.append(model)

    def _event(self, payload: Mapping[str, Any], where: SourceLocation, ts: str | None) -> None:
        kind = payload.get("type")
        if kind == "user_message" and not self._repeated(payload, where):
            self._user_message(payload, where, ts)
            return
        if kind == "thread_rolled_back":
            self._rolled_back(payload, where)
            return
        if kind != "token_count":
            self.skipped[f"event_msg.{kind}" if isinstance(kind, str) else "event_msg"] += 1
            return
        info = payload.get("info")
        if info is None:
            return
        info = expect_mapping(info, where.with_path("info"), "`info`")
        usage = info.get("total_token_usage")
        if isinstance(usage, Mapping):
            self.meta["usage"] = plain_json(usage, where.with_path("info.total_token_usage"))
        window = info.get("model_context_window")
        if type(window) is int:
            self.meta["model_context_window"] = window

    def _rolled_back(self, payload: Mapping[str, Any], where: SourceLocation) -> None:
        """The user took back the last `num_turns` requests (Codex's thread rollback).

        As Codex rebuilds the history: each of those requests goes, with everything after
        it and the harness notices just before it (that turn's context); with more turns
        than there are, every request goes and what came before the first stays.
        """
        turns = payload.get("num_turns")
        if type(turns) is not int or turns < 0:
            msg = "`num_turns` must be a non-negative integer"
            raise IngestError(msg, where.with_path("num_turns"))
        self.reader.flush()
        events = self.reader.events
        requests = [i for i, e in enumerate(events) if isinstance(e, UserTurn) and not e.notice]
        if not turns or not requests:
            return
        cut = requests[-turns] if turns < len(requests) else requests[0]
        while cut > 0 and _is_notice(events[cut - 1]):
            cut -= 1
        dropped = len(events) - cut
        del events[cut:]
        previous = self.meta.get("rolled_back_events")
        self.meta["rolled_back_events"] = dropped + (previous if isinstance(previous, int) else 0)
        self.unpaired, self.recent = 0, []

    def _repeated(self, payload: Mapping[str, Any], where: SourceLocation) -> bool:
        """Whether a `user_message` event repeats a user message item read before it."""
        text = expect_str(payload.get("message") or "", where.with_path("message"), "`message`")
        recent, self.recent = self.recent, []
        if self.unpaired:
            self.unpaired -= 1
            return True
        return text in recent

    def _user_message(
        self, payload: Mapping[str, Any], where: SourceLocation, ts: str | None
    ) -> None:
        """The user's request that only a `user_message` event records (Codex Desktop)."""
        content: list[dict[str, Any]] = []
        if payload.get("message"):
            content.append({"type": "input_text", "text": payload["message"]})
        images = payload.get("images")
        at = where.with_path("images")
        for index, url in enumerate(expect_list(images, at, "`images`") if images else ()):
            here = at.with_path(f"[{index}]")
            content.append({"type": "input_image", "image_url": expect_str(url, here, "image")})
        parts = content_parts(content, where, "`message`")
        if not parts:
            self.skipped["event_msg.user_message"] += 1  # an empty message: nothing was sent
            return
        meta: dict[str, JsonValue] = {}
        if payload.get("local_images"):  # files the UI attached: read from disk, not recorded
            meta["local_images"] = plain_json(
                payload["local_images"], where.with_path("local_images")
            )
        self.reader.flush()
        notice = is_harness_message(parts)
        event = UserTurn(content=parts, notice=notice, meta=meta, timestamp=ts, source=where)
        self.reader.events.append(event)

    def _compacted(self, payload: Mapping[str, Any], where: SourceLocation, ts: str | None) -> None:
        message = payload.get("message")
        if message is not None:
            message = expect_str(message, where.with_path("message"), "`message`")
        history = payload.get("replacement_history")
        parts, unread = _replacement(history, where)
        native = _compaction_item(history, where)
        if native is not None:
            unread -= 1
        meta: dict[str, JsonValue] = {"unreadable_items": unread} if unread else {}
        self.reader.flush()
        if native is not None:
            item, at = native
            event = native_compaction(RESPONSES_FORMAT, item, at, timestamp=ts, meta=meta)
            self.reader.events.append(event.model_copy(update={"origin": "codex_cli"}))
            return
        if not parts and message:
            parts = [TextPart(text=message)]
        self.reader.events.append(
            Compaction(
                content=tuple(parts) or (TextPart(text=_NO_SUMMARY),),
                origin="codex_cli",
                timestamp=ts,
                meta=meta,
                source=where,
            )
        )


def _output_exit_code(item: Mapping[str, Any]) -> int | None:
    """The exit status a shell call's output records, when Codex wrote it as JSON.

    Codex's `shell` and `apply_patch` outputs are `{"output": ..., "metadata":
    {"exit_code": N, "duration_seconds": ...}}` as text; newer `exec_command` outputs are
    plain text that says "Process exited with code N" (read from the text by the
    processors), and the `exec_command_end` event belongs to the call that started the
    process, whose output may be only "Process running", so neither is taken here.
    """
    output = item.get("output")
    if not isinstance(output, str) or not output.startswith("{") or "exit_code" not in output:
        return None
    try:
        decoded = json.loads(output)
    except (ValueError, RecursionError):  # text that only looks like JSON
        return None
    metadata = decoded.get("metadata") if isinstance(decoded, dict) else None
    return read_exit_code(metadata.get("exit_code")) if isinstance(metadata, dict) else None


def _text(parts: Sequence[ContentPart]) -> str:
    return "".join(p.text for p in parts if isinstance(p, TextPart))


def _compaction_item(
    value: Any, where: SourceLocation
) -> tuple[dict[str, Any], SourceLocation] | None:
    """The last `compaction` item of a replacement history (checked by `_replacement`).

    Older CLIs named the item type `compaction_summary`; the API takes `compaction`.
    """
    if not isinstance(value, list):
        return None
    for i in range(len(value) - 1, -1, -1):
        item = value[i]
        if item.get("type") in ("compaction", "compaction_summary"):
            at = where.with_path(f"replacement_history[{i}]")
            return {**item, "type": "compaction"}, at
    return None


def _replacement(value: Any, where: SourceLocation) -> tuple[list[ContentPart], int]:
    """The readable parts of a replacement history, and how many items had none."""
    if value is None:
        return [], 0
    here = where.with_path("replacement_history")
    parts: list[ContentPart] = []
    unread = 0
    for i, item in enumerate(expect_list(value, here, "`replacement_history`")):
        at = here.with_path(f"[{i}]")
        body = expect_mapping(item, at, "item")
        if body.get("type", "message") != "message":
            unread += 1
            continue
        role = body.get("role")
        if role in ("developer", "system"):
            continue
        if "content" not in body:
            raise IngestError("message has no `content`", at)
        parts.extend(content_parts(body["content"], at.with_path("content"), "`content`"))
    return parts, unread


def _is_notice(event: AgentEvent) -> bool:
    return isinstance(event, UserTurn) and event.notice
