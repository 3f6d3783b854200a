"""The rollouts a Codex rollout continues: its `history_base`.

Codex 0.171 keeps a thread's history in pages ("paginated" history, the app server's
threads, as in the IDE extension): reverting the thread to before one of its turns
(`thread/revert`) does not rewrite the rollout, it starts a new one,
`rollout-<time>-<thread id>_<segment id>.jsonl`, whose `session_meta` names the history it
continues: `history_base: {thread_id, end_byte_offset, end_ordinal_exclusive}`, the
rollout of that id (the thread's own, or an earlier segment's) up to that byte. What the
model was sent next is that prefix, then the new rollout's records (the reverted turns
are past the offset). `history_bases` finds those prefixes, oldest first, following a
base that continues another in turn.

The base is looked for under the `sessions` folder the rollout is in (Codex files each
rollout under the date it began, so a base may sit in another day's folder), or beside
it. Not found: a strict read refuses the rollout, naming the thread it continues; a
lenient one reads the rollout alone and says so in `meta["history_base_missing"]`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from context_graph.errors import IngestError, SourceLocation
from context_graph.importers._base import RawInput, read_jsonl_text

__all__ = ["history_bases"]

#: What a thread or segment id is made of (a UUID): nothing a file pattern reads.
_THREAD_ID = re.compile(r"[0-9A-Za-z_-]+")
#: How many rollouts deep a chain of bases may go (a loop of them would never end).
_MAX_DEPTH = 1_000


def history_bases(raw: RawInput, records: Sequence[Any]) -> tuple[list[RawInput], str | None]:
    """The prefixes of the rollouts `records` continue, oldest first.

    Returns:
        The prefixes, and the thread id of a base that was not found (lenient reads only).

    Raises:
        IngestError: a `history_base` that is malformed, a base that cannot be found
            (strict reads) or read, or an offset that does not end a line of it.
    """
    bases: list[RawInput] = []
    seen: set[Path] = {raw.path.resolve()} if raw.path is not None else set()
    current, head = raw, _head(records)
    while head is not None:
        where = current.at(0, "payload.history_base")
        thread, end = _base_of(head, where)
        found = _find(current.path, thread)
        if found is None or found in seen or len(bases) >= _MAX_DEPTH:
            if found is None and not raw.strict:
                return bases, thread
            problem = "is not found" if found is None else "loops back on itself"
            msg = (
                f"this rollout continues thread {thread!r} (up to byte {end}), whose rollout "
                f"{problem} in the folder of Codex sessions it is in; a lenient read "
                "(--lenient, strict=False) reads this rollout alone"
            )
            raise IngestError(msg, where)
        seen.add(found)
        current = _prefix(found, end, where)
        bases.insert(0, current)
        head = _head(current.data)
    return bases, None


def _head(records: Sequence[Any]) -> Mapping[str, Any] | None:
    """The `history_base` of a rollout's opening `session_meta`, if it has one."""
    first = records[0] if records else None
    if not isinstance(first, Mapping) or first.get("type") != "session_meta":
        return None
    payload = first.get("payload")
    base = payload.get("history_base") if isinstance(payload, Mapping) else None
    return base if isinstance(base, Mapping) else None


def _base_of(base: Mapping[str, Any], where: SourceLocation) -> tuple[str, int]:
    thread, end = base.get("thread_id"), base.get("end_byte_offset")
    if not isinstance(thread, str) or not _THREAD_ID.fullmatch(thread):
        raise IngestError("`thread_id` must be a thread id", where.with_path("thread_id"))
    if type(end) is not int or end < 0:
        msg = "`end_byte_offset` must be a non-negative integer"
        raise IngestError(msg, where.with_path("end_byte_offset"))
    return thread, end


def _find(path: Path | None, thread: str) -> Path | None:
    """The rollout of `thread` (the thread's own or a segment's) near `path`."""
    if path is None:
        return None
    root = next((folder for folder in path.parents if folder.name == "sessions"), path.parent)
    names = (f"-{thread}.jsonl", f"_{thread}.jsonl")
    found = sorted(
        candidate
        for candidate in root.rglob(f"rollout-*{thread}.jsonl")
        if candidate.name.endswith(names) and candidate.resolve() != path.resolve()
    )
    return found[0].resolve() if found else None


def _prefix(file: Path, end: int, where: SourceLocation) -> RawInput:
    """The records of `file` before byte `end`, read strictly (each names its line)."""
    try:
        blob = file.read_bytes()
    except OSError as exc:
        raise IngestError(f"cannot read the rollout it continues, {file}: {exc}", where) from None
    if end > len(blob) or (end and blob[end - 1 : end] != b"\n"):
        msg = f"byte {end} does not end a line of the rollout it continues, {file}"
        raise IngestError(msg, where.with_path("end_byte_offset"))
    try:
        text = blob[:end].decode("utf-8")
    except UnicodeDecodeError:
        raise IngestError(f"the rollout it continues, {file}, is not UTF-8", where) from None
    if not text.strip():
        return RawInput([], file, ())
    return read_jsonl_text(text, file)
