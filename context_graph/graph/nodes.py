"""Node models: the typed, frozen records that make up a context graph.

A node is one piece of what happened in an agent session: the system prompt, a user turn,
an assistant turn, one tool call, one tool result, a file as read, a sub-agent's answer, a
summary or a pinned note. Nodes never change once made; a compaction makes new nodes that
point back at the ones they stand for (`replaces` one, or `abstracts` several). What they
carry is made of content parts (`context_graph.graph.content`); their ids are computed by
`context_graph.graph.ids`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cached_property
from types import MappingProxyType
from typing import Annotated, Any, Literal, TypeAlias

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    JsonValue,
    StrictInt,
    TypeAdapter,
    field_serializer,
)
from pydantic import field_validator as _field_validator
from pydantic_core import PydanticCustomError

from context_graph.graph.content import ContentPart, ProviderSignature, TextPart
from context_graph.graph.native import NativeCompaction

__all__ = [
    "ANSWER_KINDS",
    "SIGNED_SECRETS",
    "AnswerNode",
    "AnyNode",
    "AssistantNode",
    "ExitCode",
    "FileNode",
    "Node",
    "NodeKind",
    "NoteNode",
    "SubagentResultNode",
    "SummaryNode",
    "SystemNode",
    "ToolCallNode",
    "ToolResultNode",
    "TriggerKind",
    "TriggerSpec",
    "UserNode",
    "node_adapter",
]

NodeKind: TypeAlias = Literal[
    "system",
    "user",
    "assistant",
    "tool_call",
    "tool_result",
    "file",
    "subagent_result",
    "summary",
    "note",
]

TriggerKind: TypeAlias = Literal[
    "size",
    "age",
    "superseded",
    "consumed",
    "budget_ratio",
    "message_count",
    "tool_output_tokens",
    "boundary",
    "manual",
]

#: The `meta` key where a redactor notes, by type, the secrets it had to leave inside a
#: signed thinking block of the node (the signature forbids editing the block); renders
#: report them (`RenderResult.signed_secrets`).
SIGNED_SECRETS = "signed_secrets"

#: Kinds that can answer a tool call (when they carry a `call_id`).
ANSWER_KINDS: frozenset[str] = frozenset({"tool_result", "file", "subagent_result"})

_FROZEN = ConfigDict(frozen=True, extra="forbid")


def _exit_code_type(value: Any) -> Any:
    # `True` is an int to Python and "1" would pass lax validation: refuse both, by name.
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        raise PydanticCustomError(
            "exit_code_type",
            "an exit code must be an int or None, got {kind}",
            {"kind": type(value).__name__},
        )
    return value


#: A command's exit status: an int, never a bool or a string of digits. The range holds
#: POSIX statuses, Python's negative signal numbers and Windows' unsigned 32-bit codes.
ExitCode: TypeAlias = Annotated[
    StrictInt, BeforeValidator(_exit_code_type), Field(ge=-(2**31), le=2**32 - 1)
]


class TriggerSpec(BaseModel):
    """A trigger declared on a node; data only, the orchestrator evaluates it."""

    model_config = _FROZEN
    kind: TriggerKind
    """What condition fires the trigger."""
    threshold: float | None = None
    """The condition's number: tokens for `size`, turns for `age`, a ratio for `budget_ratio`."""
    pipeline: str | None = None
    """The pipeline to run when it fires; `None` means the profile's default."""


class Node(BaseModel):
    """Fields shared by every node kind."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    """Deterministic id: the same input gives the same id in any process."""
    kind: NodeKind
    """What the node is; each subclass fixes it to one literal."""
    content: tuple[ContentPart, ...] = ()
    """The node's content, in order."""
    seq: int | None = None
    """Position in the pristine transcript (0-based); `None` for derived nodes."""
    turn: int = 0
    """How many user turns came before or with this node (notices do not count)."""
    timestamp: str | None = None
    """When it happened, as recorded by the source (ISO 8601 when known)."""
    meta: Mapping[str, JsonValue] = Field(default_factory=dict)
    """Extra metadata from the source (read-only)."""
    priority: int = 0
    """Higher is kept longer: a compaction that needs only part of the tool outputs
    takes those of lowest priority first (oldest first within one priority)."""
    pinned: bool = False
    """A pinned node is never compacted or dropped."""
    triggers: tuple[TriggerSpec, ...] = ()
    """Triggers this node carries."""
    replaces: str | None = None
    """Lineage: the id of the single node this one stands for."""
    abstracts: tuple[str, ...] = ()
    """Lineage: the ids of the nodes this one summarizes."""

    @_field_validator("meta", mode="after")
    @classmethod
    def _freeze_meta(cls, value: Mapping[str, JsonValue]) -> Mapping[str, JsonValue]:
        return MappingProxyType(dict(value))

    @field_serializer("meta")
    def _dump_meta(self, value: Mapping[str, JsonValue]) -> dict[str, JsonValue]:
        return dict(value)

    @cached_property
    def text(self) -> str:
        """The node's text parts joined by newlines (no thinking, no media)."""
        return "\n".join(p.text for p in self.content if isinstance(p, TextPart))

    @property
    def call_id(self) -> str | None:
        """The tool-call id this node carries or answers, if any."""
        return None

    @property
    def answers_call(self) -> bool:
        """Whether this node is a result that answers a tool call."""
        return False


class SystemNode(Node):
    """The system prompt (or a part of it)."""

    kind: Literal["system"] = "system"


class UserNode(Node):
    """A user turn: text, images, documents."""

    kind: Literal["user"] = "user"
    notice: bool = False
    """Written by the agent harness, not the user (see `UserTurn.notice`)."""


class AssistantNode(Node):
    """An assistant turn's own content: text and thinking blocks; its calls are separate nodes."""

    kind: Literal["assistant"] = "assistant"
    message_id: str | None = None
    """The provider's message id, when recorded."""
    model: str | None = None
    """The model that produced the turn, when recorded."""


class ToolCallNode(Node):
    """One tool call made by an assistant turn."""

    kind: Literal["tool_call"] = "tool_call"
    tool_call_id: str
    """The call id as the source gave it (not necessarily unique over a session)."""
    name: str
    """The tool's name."""
    arguments: str = "{}"
    """The arguments as JSON text, kept exactly as received when they came as text."""
    assistant_id: str
    """The id of the assistant node that made this call."""
    index: int = 0
    """The call's position among its turn's calls."""
    signature: ProviderSignature | None = Field(default=None, exclude_if=lambda v: v is None)
    """The provider's signature for this call, sent back with it (left out of the JSON
    when absent)."""

    @property
    def call_id(self) -> str | None:
        """The tool-call id."""
        return self.tool_call_id

    @cached_property
    def parsed_arguments(self) -> JsonValue:
        """The arguments decoded from JSON, or the raw text if it is not valid JSON.

        `NaN` and `Infinity` are not JSON, though Python's decoder reads them: a body that
        carried them as numbers would be refused, so such arguments stay text.
        """
        try:
            value: JsonValue = json.loads(self.arguments, parse_constant=_refuse_constant)
        except (ValueError, RecursionError):  # not JSON, or nested past what Python reads
            return self.arguments
        return value


def _refuse_constant(name: str) -> None:
    msg = f"{name} is not JSON"
    raise ValueError(msg)


class AnswerNode(Node):
    """Base of the kinds that can answer a tool call: results, files, sub-agent answers."""

    tool_call_id: str | None = None
    """The id of the call this answers; `None` for content that no call asked for."""
    name: str | None = None
    """The name of the tool that produced it, when known."""
    is_error: bool = False
    """Whether the tool reported an error."""

    @property
    def call_id(self) -> str | None:
        """The id of the answered call."""
        return self.tool_call_id

    @property
    def answers_call(self) -> bool:
        """Whether this node answers a tool call."""
        return self.tool_call_id is not None


class ToolResultNode(AnswerNode):
    """The output of one tool call."""

    kind: Literal["tool_result"] = "tool_result"
    tool_call_id: str | None = None
    """The id of the call this answers."""
    exit_code: ExitCode | None = Field(default=None, exclude_if=lambda v: v is None)
    """The command's exit status, when the tool reported one (`ToolResult.exit_code`);
    left out of the JSON when absent, so nodes stored without one read back the same."""


class FileNode(AnswerNode):
    """A file's content as read (by a tool call or handed in by the agent loop)."""

    kind: Literal["file"] = "file"
    path: str
    """The file's path as the agent named it."""
    version: int = 1
    """1 for the first read of this path in the session, 2 for the next, and so on."""
    line_range: tuple[int, int | None] | None = None
    """The 1-based first line and last line (inclusive) that was read; `None` for all."""


class SubagentResultNode(AnswerNode):
    """A sub-agent's final answer, linked to the call that spawned it."""

    kind: Literal["subagent_result"] = "subagent_result"
    agent_id: str | None = None
    """The sub-agent's id, when known."""
    transcript: str | None = None
    """Where the sub-agent's own transcript is: a path relative to the session file's
    folder, or an id."""


class SummaryNode(Node):
    """A summary that stands for the nodes it abstracts.

    A processor's summary (`seq` is `None`) abstracts exactly its targets, a previous
    rolling summary first. An imported compaction (ingested from a `Compaction` event,
    so `seq` is set) stands for every transcript node before it, but `abstracts` only
    those since the previous imported compaction, that one first (all earlier ones when
    it is the first): the rest is what the previous one stands for. So all compactions
    together hold about one id per transcript node, not one per pair of compaction and
    earlier node. `ContextGraph.covered` gives the whole set.
    """

    kind: Literal["summary"] = "summary"
    origin: str | None = None
    """Who wrote it: a processor's name, or e.g. `claude_code` for an imported compaction."""
    native: NativeCompaction | None = Field(default=None, exclude_if=lambda v: v is None)
    """A provider's own compaction artifact, verbatim (`context_graph.graph.native`): sent
    back to that provider only; every other renders what the node stands for instead."""


class NoteNode(Node):
    """A pinned fact or memory."""

    kind: Literal["note"] = "note"
    pinned: bool = True


AnyNode: TypeAlias = Annotated[
    SystemNode
    | UserNode
    | AssistantNode
    | ToolCallNode
    | ToolResultNode
    | FileNode
    | SubagentResultNode
    | SummaryNode
    | NoteNode,
    Field(discriminator="kind"),
]

#: (De)serializes any node from / to plain data.
node_adapter: TypeAdapter[AnyNode] = TypeAdapter(AnyNode)
