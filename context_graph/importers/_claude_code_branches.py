"""The branch of a Claude Code session file that is its conversation.

A rewind (Esc Esc, or `--resume-session-at`) or an edited prompt does not rewrite the
session file: Claude Code appends the new messages, each linked by `parentUuid` to the
message it follows, and the abandoned branch stays in the file. Read in file order, the
abandoned turns would be part of the conversation, though the model was never sent them
again after the rewind. `abandoned` finds them the way Claude Code 2.1 finds the
conversation it resumes (read in its bundle):

- the messages are the `user`, `assistant`, `attachment` and `system` records; a
  `progress` record is none, and a message linked to one hangs on that record's parent;
- the leaf is the message the latest `last-prompt` record points to (where the user
  rewound to, or the end of the last finished turn), else the last message in the
  file, walked up to its nearest user or assistant record;
- the conversation is the chain of parents from the leaf, plus the parallel pieces
  Claude Code writes off the chain: the other lines of an assistant message on it (one
  `message.id`) and the results of their tool calls.

Two links differ, for a reason: a compaction's boundary (`parentUuid` null) goes on to
its `logicalParentUuid`, so the history before Claude Code's compaction is kept with the
`Compaction` event after it, as for a file without branches; and a parent missing from
the file goes on to the message before it in the file, where Claude Code stops after
a five-second search by timestamp, so that a lost line loses no history.

A file whose messages are not linked this way (more than one message with no parent in
the file, or a message without a `uuid`, as in a web session) is read in file order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["abandoned"]

#: The record types that are messages of the chain (`progress` records are not).
_MESSAGES = frozenset({"user", "assistant", "attachment", "system"})
_TURNS = frozenset({"user", "assistant"})


def abandoned(records: Sequence[Any]) -> frozenset[int]:
    """The indexes of the message records that are not on the conversation's branch.

    Empty when the file has no abandoned branch, or is not linked by `parentUuid`.
    """
    chain = _Chain.of(records)
    if chain is None:
        return frozenset()
    leaf = chain.leaf()
    if leaf is None:
        return frozenset()
    kept = chain.branch(leaf)
    return frozenset(
        index for uuid, index in chain.index.items() if uuid not in kept and chain.dropped(uuid)
    )


class _Chain:
    """The message records of a file by uuid, each with the parent it hangs on."""

    def __init__(self, records: Sequence[Mapping[str, Any]], index: dict[str, int]) -> None:
        self.records = records
        self.index = index
        self.order = sorted(index, key=index.__getitem__)
        self.position = {uuid: place for place, uuid in enumerate(self.order)}
        self.parent: dict[str, str | None] = {}
        self.leaf_pointer: str | None = None
        self.ends_on_pointer = False
        """The file ends on its `last-prompt` record (no message came after it)."""

    @classmethod
    def of(cls, records: Sequence[Any]) -> _Chain | None:
        """The chain of `records`, or `None` when they are not linked by `parentUuid`."""
        index: dict[str, int] = {}
        through: dict[str, Any] = {}  # a progress record's uuid -> its parent
        leaf_pointer, pointer_last = None, False
        for number, record in enumerate(records):
            if not isinstance(record, Mapping):
                continue
            kind, uuid = record.get("type"), record.get("uuid")
            if not isinstance(kind, str):
                continue  # the walk refuses it, naming its line
            if kind == "progress" and isinstance(uuid, str):
                through[uuid] = record.get("parentUuid")
            elif kind == "last-prompt" and isinstance(record.get("leafUuid"), str):
                leaf_pointer, pointer_last = record["leafUuid"], True
            elif kind in _MESSAGES:
                if not isinstance(uuid, str) or uuid in index:
                    return None  # not linked (a web session), or ids reused
                index[uuid] = number
                pointer_last = False
        chain = cls(records, index)
        chain.leaf_pointer = leaf_pointer if leaf_pointer in index else None
        chain.ends_on_pointer = pointer_last and chain.leaf_pointer is not None
        starts = 0
        for uuid in chain.order:
            parent = chain._link(uuid, through)
            chain.parent[uuid] = parent
            if parent is None and not chain._boundary(uuid):
                starts += 1
        return chain if starts <= 1 else None

    def _link(self, uuid: str, through: Mapping[str, Any]) -> str | None:
        """The message `uuid` hangs on.

        Past progress records, a boundary on to its logical parent, a missing parent on
        to the message before it in the file.
        """
        record = self.records[self.index[uuid]]
        parent = record.get("parentUuid")
        seen: set[str] = set()
        while isinstance(parent, str) and parent in through and parent not in seen:
            seen.add(parent)
            parent = through[parent]
        if parent is None and self._boundary(uuid):
            parent = record.get("logicalParentUuid")
            if not isinstance(parent, str):
                return None
        if not isinstance(parent, str):
            return None
        if parent in self.index and parent != uuid:
            return parent
        before = self.position[uuid]
        return self.order[before - 1] if before > 0 else None

    def _boundary(self, uuid: str) -> bool:
        record = self.records[self.index[uuid]]
        return record.get("type") == "system" and record.get("subtype") == "compact_boundary"

    def _kind(self, uuid: str) -> Any:
        return self.records[self.index[uuid]].get("type")

    def _turn_above(self, uuid: str | None) -> str | None:
        """`uuid`, or the nearest user or assistant record it hangs on."""
        seen: set[str] = set()
        while uuid is not None and uuid not in seen:
            seen.add(uuid)
            if self._kind(uuid) in _TURNS:
                return uuid
            uuid = self.parent[uuid]
        return None

    def leaf(self) -> str | None:
        """The conversation's last turn, as Claude Code picks it.

        The message the latest `last-prompt` record points to: where the user rewound
        to, or the end of the last finished turn. The last message of the file instead
        when there is no such record, or when that message continues from it and the
        file does not end on the record (a turn cut off before its record was written).
        Then up to its nearest user or assistant record.
        """
        last = self.order[-1]
        leaf = self.leaf_pointer
        if leaf is None or (not self.ends_on_pointer and leaf in self._ancestors(last)):
            leaf = last
        return self._turn_above(leaf)

    def _ancestors(self, uuid: str | None) -> set[str]:
        """`uuid` and every message it hangs on."""
        found: set[str] = set()
        while uuid is not None and uuid not in found:
            found.add(uuid)
            uuid = self.parent[uuid]
        return found

    def branch(self, leaf: str) -> set[str]:
        """The chain from `leaf` back to the first message, and its parallel pieces."""
        kept = self._ancestors(leaf)
        lines: dict[str, list[str]] = {}  # message.id -> the assistant records holding it
        results: dict[str, list[str]] = {}  # assistant uuid -> the results hanging on it
        for uuid in self.order:
            record = self.records[self.index[uuid]]
            message = record.get("message")
            message = message if isinstance(message, Mapping) else {}
            parent = self.parent[uuid]
            if record.get("type") == "assistant" and isinstance(message.get("id"), str):
                lines.setdefault(message["id"], []).append(uuid)
            elif record.get("type") == "user" and parent is not None and _has_results(message):
                results.setdefault(parent, []).append(uuid)
        for uuid in [u for u in kept if self._kind(u) == "assistant"]:
            message = self.records[self.index[uuid]].get("message")
            message_id = message.get("id") if isinstance(message, Mapping) else None
            for line in lines.get(message_id, [uuid]) if isinstance(message_id, str) else [uuid]:
                kept.add(line)
                kept.update(results.get(line, ()))
        return kept

    def dropped(self, uuid: str) -> bool:
        """Whether an off-branch message is left out: turns, attachments, compactions.

        Other `system` records are not sent to the model anyway (the walk counts them).
        """
        return self._kind(uuid) != "system" or self._boundary(uuid)


def _has_results(message: Mapping[str, Any]) -> bool:
    content = message.get("content")
    return isinstance(content, list) and any(
        isinstance(block, Mapping) and block.get("type") == "tool_result" for block in content
    )
