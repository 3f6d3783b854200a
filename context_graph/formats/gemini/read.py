"""Importer for Gemini `generateContent` request bodies and `Content[]` histories.

Accepted shapes: `{"systemInstruction": {"parts": [...]}, "contents": [...]}` (snake_case
keys such as `system_instruction`, `function_call` or `inline_data` too), or a bare
`contents` list (the Gemini CLI saves its history so). Roles are `user`, `model` and
`function` (an older role for function responses); a content without a role is a user
turn, as the API reads it.

Parts become content parts (see `read_parts`): `text`; `thought: true` text (a
`ThinkingPart` with `provider="gemini"`, its `thoughtSignature` kept as the signature);
`inlineData` and `fileData` (an `ImagePart` for `image/*`, a `DocumentPart` otherwise);
`executableCode` and `codeExecutionResult` (as text). A `functionCall` becomes a tool call
of the model turn, its `thoughtSignature` the call's `signature` (a `ProviderSignature`,
sent back with it); a signature on a plain text part has no field of its own, so it is
kept in the assistant turn's `meta["thought_signatures"]`, keyed `content:<n>`. A
`functionResponse` becomes a `ToolResult` emitted before the rest of its turn.

Calls without an id get a deterministic one, `gemini_<name>_<i>_<k>`: `contents[i]` is
the model turn and `k` counts the earlier calls with the same name in that turn (a
content that stands alone, read by `model_turn`, has no `i`: `gemini_<name>_<k>`).
Responses pair with calls as the API pairs them (see `read_pairing`): by id when both
carry one, else by name and order within the model turn before; a call without an id
answered by a response with one takes the response's id.

Harness context: a user content's leading parts that are each nothing but harness blocks
(`context_graph.formats.harness`: here the `<session_context>` block, the workspace, date
and file tree the Gemini CLI writes first, or the `<state_snapshot>` block, the summary
its own compression writes) are a notice
(`UserTurn.notice`), as Claude Code's harness lines are: sent as they were, but not the
user's request. The parts after them (Gemini CLI 0.61 puts the user's first prompt in the
same content as its session context) are the user's turn. The snapshot is not read
as a `Compaction`: one would stand for the session context before it, which the CLI
still sends.

Strays: a response that answers no call of this input is refused (strict, the default:
with an id it passes to the graph, which names it as an orphan); a lenient read keeps it
as a `Note` saying what it was, listed in the session's `strays`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import JsonValue

from context_graph.errors import IngestError, SourceLocation
from context_graph.formats.gemini.read_pairing import CallBook
from context_graph.formats.gemini.read_parts import (
    data_key,
    dump,
    get,
    key_of,
    name_of,
    optional_id,
    plain_part,
    signature_of,
)
from context_graph.formats.harness import is_harness_text
from context_graph.graph.content import ContentPart, ProviderSignature, TextPart, ThinkingPart
from context_graph.graph.events import (
    AgentEvent,
    AssistantTurn,
    Note,
    SystemPrompt,
    ToolCall,
    ToolResult,
    UserTurn,
)
from context_graph.importers._base import (
    ImportedSession,
    RawInput,
    StrayKeeper,
    expect_list,
    expect_mapping,
    strays_of,
)

__all__ = ["ContentWalk", "model_turn", "response_text", "sniff", "to_sessions"]

_ROLES = frozenset({"user", "model", "function"})


# --- detection ------------------------------------------------------------------------------


def sniff(raw: RawInput) -> bool:
    """Whether `raw` looks like a Gemini request body or `contents` list (never raises)."""
    data = raw.data
    if isinstance(data, Mapping):
        contents = data.get("contents")
        if "messages" in data or not isinstance(contents, list):
            return False
        if not contents:
            return get(data, "systemInstruction") is not None
        return _looks_like_content(contents[0])
    if isinstance(data, list) and data:
        return _looks_like_content(data[0])
    return False


def _looks_like_content(item: Any) -> bool:
    if not isinstance(item, Mapping) or not isinstance(item.get("parts"), list):
        return False
    role = item.get("role", "user")
    return "content" not in item and "type" not in item and isinstance(role, str) and role in _ROLES


# --- conversion -----------------------------------------------------------------------------


@dataclass
class ContentWalk:
    """Reads `Content`s into events one at a time, pairing responses with calls.

    The state of one import: the events so far, the calls waiting for a response, the
    strays. `locate(index, path)` names the place of content `index` (and of `path`
    inside it, `.parts[0]`) in errors and events: a request body's `contents[i]`, or
    the line of a session file that recorded it (`importers.qwen_code`). `model` names
    the model of the model turns read next.
    """

    locate: Callable[[int, str], SourceLocation]
    model: str | None
    strays: StrayKeeper
    events: list[AgentEvent] = field(default_factory=list)
    calls: CallBook = field(init=False)

    def __post_init__(self) -> None:
        self.calls = CallBook(self.events)

    def at(self, index: int, path: str = "") -> SourceLocation:
        """The place of content `index`, and of `path` inside it."""
        return self.locate(index, path)

    def read(self, index: int, item: Any) -> None:
        """Add the events of content `index`, `item` (a `{role, parts}` object).

        Raises:
            IngestError: the content is malformed, or (strict) a stray; names its place.
        """
        _content(index, item, self)


def to_sessions(raw: RawInput) -> list[ImportedSession]:
    """Convert a Gemini request body (or bare `contents` list) to one session.

    Raises:
        IngestError: the payload is malformed, or (strict) holds a stray; names the
            content index and JSON path.
    """
    data = raw.data
    model: str | None = None
    system: Any = None
    if isinstance(data, Mapping):
        contents = expect_list(data.get("contents", []), raw.at(None, "contents"), "`contents`")
        system = get(data, "systemInstruction")
        model = data.get("model") if isinstance(data.get("model"), str) else None
        prefix = "contents"
    else:
        contents = expect_list(data, raw.at(), "a Gemini payload (object or `contents` array)")
        prefix = ""
    walk = ContentWalk(lambda i, path: raw.at(i, f"{prefix}[{i}]{path}"), model, strays_of(raw))
    if system is not None:
        _system(system, raw, walk)
    for index, item in enumerate(contents):
        walk.read(index, item)
    name = raw.path.stem if raw.path is not None else "gemini"
    meta: dict[str, JsonValue] = {"format": "gemini"}
    if model is not None:
        meta["model"] = model
    return [ImportedSession(name=name, events=walk.events, meta=meta, strays=walk.strays.found)]


def _system(value: Any, raw: RawInput, walk: ContentWalk) -> None:
    key = "systemInstruction" if "systemInstruction" in raw.data else "system_instruction"
    where = raw.at(None, key)
    if isinstance(value, str):
        parts: list[ContentPart] = [TextPart(text=value)]
    else:
        body = expect_mapping(value, where, f"`{key}`")
        raw_parts = expect_list(body.get("parts", []), where.with_path("parts"), "`parts`")
        parts = [
            plain_part(p, where.with_path(f"parts[{k}]"), "system") for k, p in enumerate(raw_parts)
        ]
    if parts:
        walk.events.append(SystemPrompt(content=tuple(parts), source=where))


def _content(index: int, item: Any, walk: ContentWalk) -> None:
    body = expect_mapping(item, walk.at(index), "a content")
    role = body.get("role", "user")
    if not isinstance(role, str) or role not in _ROLES:
        msg = f"unknown role {role!r}; expected one of user, model, function"
        raise IngestError(msg, walk.at(index, ".role"))
    parts = expect_list(body.get("parts"), walk.at(index, ".parts"), "`parts`")
    if role == "model":
        _model_turn(index, parts, walk)
    else:
        _user_turn(index, parts, walk)


def _model_turn(index: int, parts: Sequence[Any], walk: ContentWalk) -> None:
    turn, own_ids = _model_event(
        parts, lambda k: walk.at(index, f".parts[{k}]"), f"{index}_", walk.model, walk.at(index)
    )
    walk.events.append(turn)
    walk.calls.model_turn(turn, own_ids)


def model_turn(content: Any, where: SourceLocation) -> AssistantTurn:
    """Convert one `model` content that stands alone (a reply's `candidates[0].content`).

    Calls without an id get `gemini_<name>_<k>`: there is no content index.

    Raises:
        IngestError: the content is malformed or not the model's; names the JSON path.
    """
    body = expect_mapping(content, where, "a content")
    role = body.get("role", "model")
    if role != "model":
        msg = f"expected the model's content, got role {role!r}"
        raise IngestError(msg, where.with_path("role"))
    parts = expect_list(body.get("parts"), where.with_path("parts"), "`parts`")
    return _model_event(parts, lambda k: where.with_path(f"parts[{k}]"), "", None, where)[0]


def _model_event(
    parts: Sequence[Any],
    at: Callable[[int], SourceLocation],
    prefix: str,
    model: str | None,
    source: SourceLocation,
) -> tuple[AssistantTurn, list[bool]]:
    """A model turn's parts (each at `at(k)`) as one turn, and whether each call had an id.

    `prefix` goes into made-up ids.
    """
    content: list[ContentPart] = []
    calls: list[ToolCall] = []
    own_ids: list[bool] = []
    signatures: dict[str, JsonValue] = {}
    seen: dict[str, int] = {}
    for k, value in enumerate(parts):
        where = at(k)
        part = expect_mapping(value, where, "a part")
        signature = signature_of(part, where)
        if data_key(part, where) == "functionCall":
            inner = where.with_path(key_of(part, "functionCall"))
            call, own = _call(get(part, "functionCall"), inner, prefix, seen, signature)
            calls.append(call)
            own_ids.append(own)
            continue
        converted = plain_part(part, where, "model")
        if signature is not None and not isinstance(converted, ThinkingPart):
            signatures[f"content:{len(content)}"] = signature
        content.append(converted)
    meta: dict[str, JsonValue] = {"thought_signatures": signatures} if signatures else {}
    turn = AssistantTurn(
        content=tuple(content), tool_calls=tuple(calls), model=model, meta=meta, source=source
    )
    return turn, own_ids


def _call(
    value: Any, where: SourceLocation, prefix: str, seen: dict[str, int], signature: str | None
) -> tuple[ToolCall, bool]:
    body = expect_mapping(value, where, "`functionCall`")
    name = name_of(body, where, "functionCall")
    k = seen.get(name, 0)
    seen[name] = k + 1
    own_id = optional_id(body, where)
    call_id = own_id or f"gemini_{name}_{prefix}{k}"
    args = body.get("args")
    if args is not None:
        expect_mapping(args, where.with_path("args"), "functionCall `args`")
    signed = None if signature is None else ProviderSignature(provider="gemini", value=signature)
    arguments = dump(args or {}, where.with_path("args"))
    call = ToolCall(id=call_id, name=name, arguments=arguments, signature=signed)
    return call, own_id is not None


def _user_turn(index: int, parts: Sequence[Any], walk: ContentWalk) -> None:
    content: list[ContentPart] = []
    answers: list[AgentEvent] = []
    for k, value in enumerate(parts):
        where = walk.at(index, f".parts[{k}]")
        part = expect_mapping(value, where, "a part")
        if data_key(part, where) == "functionResponse":
            inner = where.with_path(key_of(part, "functionResponse"))
            answers.append(_result(get(part, "functionResponse"), inner, walk))
            continue
        if part.get("thought") is True:
            raise IngestError("a thought part can only be in a model turn", where)
        content.append(plain_part(part, where, "user"))
    walk.events.extend(answers)
    lead = _harness_lead(content)
    if lead:
        # Gemini CLI 0.61 sends its session context and the user's first prompt as two
        # parts of one content; the prompt is the user's, the context a notice. Rendered
        # again, the two user turns are one content, as they came.
        walk.events.append(
            UserTurn(content=tuple(content[:lead]), notice=True, source=walk.at(index))
        )
    if content[lead:]:
        walk.events.append(UserTurn(content=tuple(content[lead:]), source=walk.at(index)))


def _harness_lead(content: Sequence[ContentPart]) -> int:
    """How many of a user content's first parts are whole blocks the Gemini CLI wrote."""
    lead = 0
    for part in content:
        if not isinstance(part, TextPart) or not is_harness_text(part.text):
            break
        lead += 1
    return lead


def _result(value: Any, where: SourceLocation, walk: ContentWalk) -> ToolResult | Note:
    body = expect_mapping(value, where, "`functionResponse`")
    name = name_of(body, where, "functionResponse")
    response = expect_mapping(
        body.get("response", {}), where.with_path("response"), "functionResponse `response`"
    )
    text = response_text(response, where.with_path("response"))
    response_id = optional_id(body, where)
    call_id = walk.calls.answer(name, response_id)
    if call_id is None:
        if response_id is not None and walk.strays.strict:
            # It may answer a call ingested earlier into the same graph, which pairs it
            # or names the orphan (the error a strict import has always given).
            call_id = response_id
        else:
            return walk.strays.keep(
                _orphan_error(name, response_id, where),
                _stray_text(name, response_id, text, is_error="error" in response),
            )
    return ToolResult(
        call_id=call_id, name=name, content=text, is_error="error" in response, source=where
    )


def _orphan_error(name: str, response_id: str | None, where: SourceLocation) -> IngestError:
    if response_id is not None:
        msg = f"tool result `{response_id}` has no matching tool call earlier in the history"
        return IngestError(msg, where)
    msg = (
        f"functionResponse `{name}` has no id and no unanswered functionCall `{name}` in "
        f"the model turn before it; add the call or give the response the call's `id`"
    )
    return IngestError(msg, where)


def _stray_text(name: str, response_id: str | None, text: str, *, is_error: bool) -> str:
    """The text of the note a lenient import keeps for a response that answers no call."""
    named = f"`{name}`" if response_id is None else f"`{name}` (id `{response_id}`)"
    held = "its error" if is_error else "its output"
    return f"a tool result for {named} arrived with no matching call; {held}: {text}"


def response_text(response: Mapping[str, Any], where: SourceLocation) -> str:
    """The output as text: a lone `output` / `content` / `error` string, else the JSON."""
    if len(response) == 1:
        ((key, value),) = response.items()
        if key in ("output", "content", "error") and isinstance(value, str):
            return value
    return dump(response, where)
