"""The shapes of a wire format's SDK-reply reader, the same for every format.

A format's folder holds one `ReplyReader` in its `replies` module;
`context_graph.formats.registry.REPLY_READERS` gathers them by name and
`context_graph.graph.sdk_replies` asks them. Here: the `Reply` they return, the `Claim`
they make on a body, and the checked access they share. Nothing here names a format.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import IntEnum
from typing import Any, Protocol

from context_graph.errors import IngestError, SourceLocation
from context_graph.formats.wires import FormatName
from context_graph.graph.events import AgentEvent, AssistantTurn, Compaction, make_event
from context_graph.tokens.usage import Usage, read_usage

__all__ = [
    "Claim",
    "Reply",
    "ReplyReader",
    "assistant_role",
    "first_item",
    "mapping",
    "message_ids",
    "text_field",
    "usage_at",
    "with_fields",
]


class Claim(IntEnum):
    """How sure a reader is that a body is its format's; the surest claim wins.

    Two readers equally sure: the one first in `FORMAT_NAMES` reads it.
    """

    FALLBACK = 1
    """Any body of the right general shape (a message with a `role`)."""
    LIKELY = 2
    """A sign of the format that another format's body may carry as well."""
    CERTAIN = 3
    """A field only this format's bodies have."""


@dataclass(frozen=True, slots=True)
class Reply:
    """A whole response, read.

    Attributes:
        provider: Whose response it is.
        turn: The assistant turn it holds.
        usage: What the call used, as the provider reported it (`None`: not reported).
    """

    provider: FormatName
    turn: AssistantTurn
    usage: Usage | None
    compactions: tuple[Compaction, ...] = ()
    """The provider's own compactions the reply opened with (an Anthropic message's
    `compaction` blocks), each standing for everything before it."""

    @property
    def prompt_tokens(self) -> int | None:
        """The prompt's size as the provider counted it, if the response says."""
        return None if self.usage is None else self.usage.prompt_tokens

    @property
    def events(self) -> tuple[AgentEvent, ...]:
        """What to ingest, in order: the compactions, then the turn.

        The turn is left out when the reply paused after compacting and holds nothing else.
        """
        turn = self.turn
        if self.compactions and not (turn.content or turn.tool_calls):
            return self.compactions
        return (*self.compactions, turn)


class ReplyReader(Protocol):
    """Reads one format's SDK replies (as plain data) into events; never mutates them."""

    @property
    def format(self) -> FormatName:
        """The format whose replies it reads."""
        ...

    @property
    def expected(self) -> str:
        """The response it reads, for an error listing what is accepted ("an OpenAI ...")."""
        ...

    @property
    def message_at(self) -> str | None:
        """Where a response keeps its message; None: the response is the message, or has none.

        A body that such a reader claims as a response is not a message itself.
        """
        ...

    def claims_message(self, data: Mapping[str, Any]) -> Claim | None:
        """How sure it is that `data` is one of its reply messages (None: not at all)."""
        ...

    def claims_response(self, data: Mapping[str, Any]) -> Claim | None:
        """How sure it is that `data` is one of its whole responses (None: not at all)."""
        ...

    def read_message(
        self, data: Mapping[str, Any], where: SourceLocation, fields: Mapping[str, Any]
    ) -> AssistantTurn:
        """The assistant turn of a message it claimed, with `fields` (`with_fields`).

        Raises:
            IngestError: the message is malformed or not the assistant's; names the path.
        """
        ...

    def read_response(
        self, data: Mapping[str, Any], where: SourceLocation, fields: Mapping[str, Any]
    ) -> Reply:
        """The turn, usage and compactions of a response it claimed.

        Raises:
            IngestError: the response is malformed; names the path.
        """
        ...


def with_fields(
    turn: AssistantTurn, ids: Mapping[str, str | None], fields: Mapping[str, Any]
) -> AssistantTurn:
    """`turn` with the response's ids and the caller's fields (their `meta` merged in)."""
    values: dict[str, Any] = {
        "content": turn.content,
        "tool_calls": turn.tool_calls,
        "meta": turn.meta,
        **{k: v for k, v in ids.items() if v is not None},
    }
    meta = fields.get("meta")
    values.update(fields)
    if isinstance(meta, Mapping):
        values["meta"] = {**turn.meta, **meta}
    return make_event(AssistantTurn, **values)


def assistant_role(data: Mapping[str, Any], where: SourceLocation) -> None:
    """Refuse a message that is not the assistant's (`role` other than `assistant`)."""
    role = data.get("role")
    if role != "assistant":
        msg = f"expected the assistant's message, got role {role!r}"
        raise IngestError(msg, where.with_path("role"))


def mapping(value: Any, where: SourceLocation, what: str) -> Mapping[str, Any]:
    """`value` if it is a mapping, else an error calling it `what`."""
    if not isinstance(value, Mapping):
        msg = f"{what} must be an SDK object or a dict, got {type(value).__name__}"
        raise IngestError(msg, where)
    return value


def first_item(
    data: Mapping[str, Any], key: str, where: SourceLocation, *, hint: str = ""
) -> Mapping[str, Any]:
    """The first item of the non-empty list at `key`; `hint` ends the error's message."""
    items = data.get(key)
    if not isinstance(items, list | tuple) or not items:
        msg = f"`{key}` must be a non-empty list, got {items!r}{hint}"
        raise IngestError(msg, where.with_path(key))
    return mapping(items[0], where.with_path(f"{key}[0]"), f"`{key}[0]`")


def text_field(data: Mapping[str, Any], key: str, where: SourceLocation) -> str | None:
    """The string at `key` (None when absent or null)."""
    value = data.get(key)
    if value is None or isinstance(value, str):
        return value
    msg = f"`{key}` must be a string, got {type(value).__name__}"
    raise IngestError(msg, where.with_path(key))


def message_ids(data: Mapping[str, Any], where: SourceLocation) -> dict[str, str | None]:
    """The `AssistantTurn` ids a response gives by its `id` and `model` (None: absent)."""
    return {"message_id": text_field(data, "id", where), "model": text_field(data, "model", where)}


def usage_at(
    data: Mapping[str, Any], key: str, shape: FormatName, where: SourceLocation
) -> Usage | None:
    """The response's usage object at `key`, read (`None`: the response has none)."""
    return read_usage(data.get(key), shape, where=where.with_path(key))
