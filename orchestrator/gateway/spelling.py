"""A request body read with where each part was written, and written back in that spelling.

The upstream caches a prompt by its prefix, so a body re-serialized with other spacing,
key order, unicode escapes or number forms than the agent's would change bytes the agent
never changed. `read_spelled` parses the agent's body and remembers the text of each
part; `Spelled.write` writes the body the gateway sends: every part equal to the agent's
part at the same place is copied from the agent's text (its spacing, key order and
escapes included), and only what the engine changed is serialized anew, compactly.

Places are matched as the engine changes a request: object members by key, and list
items first by a shared head and tail of equal items, then pairwise when the rest has
the same length (a cache mark added to one message); a rest of another length (a
compacted stretch) is written anew. With `shorthand` (Anthropic's and Chat's wires), a
string the agent sent stands for the one text block the engine reads it as
(`[{"type": "text", "text": ...}]`), so the engine's reading of it is not a change.

Comparing the engine's items with the agent's, when the engine reads a string as a
block, is a walk in Python over each item; `Verdicts` keeps what was found for each item
of a thread's last request, and the engine renders an unchanged item as the same object
from request to request: only the new items are walked.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

__all__ = ["Spelled", "Verdicts", "compact", "read_spelled"]

_SPACE = re.compile(r"[ \t\n\r]*")
_SPACES = " \t\n\r"
_DECODER = json.JSONDecoder()
_scanstring: Any = json.decoder.scanstring  # type: ignore[attr-defined]
_scan_once: Any = _DECODER.scan_once  # type: ignore[attr-defined]
_Member = tuple[str, int, int, int]
"""An object member: its key, where its key starts, and where its value starts and ends."""


def compact(value: Any) -> bytes:
    """`value` as compact JSON, unescaped, as the agent CLIs write their bodies."""
    return _compact(value).encode()


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _skip(text: str, at: int) -> int:
    match = _SPACE.match(text, at)
    return at if match is None else match.end()


class Verdicts:
    """Whether each list item the engine sent equals the agent's, kept for the next request.

    An item is known by the engine's object (the same object next time when it did not
    change) and the agent's item it was compared with (compared again, in C: equal items
    of two requests are equal objects only in content).
    """

    def __init__(self) -> None:
        self._last: dict[int, tuple[Any, Any, bool]] = {}
        self._now: dict[int, tuple[Any, Any, bool]] = {}

    def same(self, value: Any, original: Any, compare: Callable[[Any, Any], bool]) -> bool:
        """`compare(value, original)`, or what it gave for the same two items last time."""
        key = id(value)
        known = self._last.get(key)
        if known is not None and known[0] is value and known[1] == original:
            verdict = known[2]
        else:
            verdict = compare(value, original)
        self._now[key] = (value, original, verdict)
        return verdict

    def settle(self) -> None:
        """Keep this request's verdicts (only them) for the next request."""
        self._last, self._now = self._now, {}


class Spelled:
    """A JSON text and the places of its objects' members and its lists' items."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._compare: Callable[[Any, Any], bool] = _same
        self._shorthand = False
        self._verdicts = Verdicts()
        self._members: dict[int, list[_Member]] = {}
        self._items: dict[int, list[tuple[int, int]]] = {}
        self._ends: dict[int, int] = {}

    def write(
        self,
        value: Any,
        original: Any,
        *,
        shorthand: bool = False,
        verdicts: Verdicts | None = None,
    ) -> bytes:
        """`value` as JSON, in this text's spelling wherever it equals `original`.

        `original` is what this text parses to; `shorthand`: a string in it equals the
        list of one text block holding it (see the module); `verdicts`: those of the
        last request of the same conversation (updated).
        """
        self._shorthand = shorthand
        self._compare = _equivalent if shorthand else _same
        self._verdicts = Verdicts() if verdicts is None else verdicts
        text = self._text
        start = _skip(text, 0)
        end = self._end(start)
        written = text[:start] + self._spell(value, original, start, end) + text[end:]
        self._verdicts.settle()
        return written.encode()

    def _spell(self, value: Any, original: Any, start: int, end: int) -> str:
        if _same(value, original) or (
            self._shorthand and isinstance(original, str) and _one_block(value, original)
        ):
            return self._text[start:end]
        if isinstance(value, dict) and isinstance(original, dict) and original:
            return self._spell_object(value, original, start)
        if isinstance(value, list) and isinstance(original, list) and original:
            return self._spell_list(value, original, start)
        return _compact(value)

    def _spell_object(self, value: dict[str, Any], original: dict[str, Any], start: int) -> str:
        text, members = self._text, self.members(start)
        last = {key: n for n, (key, *_) in enumerate(members)}  # a repeated key: the last
        pieces: list[str] = [text[start : members[0][1]]]
        for n, (key, key_at, value_at, value_end) in enumerate(members):
            if key not in value or last[key] != n:
                continue
            if len(pieces) > 1:
                pieces.append(text[members[n - 1][3] : key_at] if n else ",")
            pieces.append(text[key_at:value_at])
            pieces.append(self._spell(value[key], original[key], value_at, value_end))
        for key, item in value.items():
            if key not in original:
                pieces.append("," if len(pieces) > 1 else "")
                pieces.append(f"{_compact(key)}:{_compact(item)}")
        pieces.append(text[members[-1][3] : self._end(start)])
        return "".join(pieces)

    def _spell_list(self, value: list[Any], original: list[Any], start: int) -> str:
        text, items = self._text, self.items(start)
        limit = min(len(value), len(original))
        head = 0
        compare, same = self._compare, self._verdicts.same
        while head < limit and same(value[head], original[head], compare):
            head += 1
        tail = 0
        while tail < limit - head and same(value[-1 - tail], original[-1 - tail], compare):
            tail += 1
        paired = len(value) == len(original)
        # (what is written, the agent's item it stands for: its separator is kept)
        written: list[tuple[str, int | None]] = []
        for n, item in enumerate(value):
            if n < head or n >= len(value) - tail:
                kept = n if n < head else n - len(value) + len(original)
                written.append((text[items[kept][0] : items[kept][1]], kept))
            elif paired:
                item_at, item_end = items[n]
                written.append((self._spell(item, original[n], item_at, item_end), n))
            else:
                written.append((_compact(item), None))
        pieces = [text[start : items[0][0]]]
        for n, (piece, at) in enumerate(written):
            if n:
                pieces.append(text[items[at - 1][1] : items[at][0]] if at else ",")
            pieces.append(piece)
        pieces.append(text[items[-1][1] : self._end(start)])
        return "".join(pieces)

    def _end(self, start: int) -> int:
        """Where the object or list whose text starts at `start` ends."""
        return self._ends[start]

    def members(self, start: int) -> list[_Member]:
        """The members of the object whose text starts at `start` (read once)."""
        found = self._members.get(start)
        if found is None:
            lists: dict[int, tuple[list[tuple[int, int]], int]] = {}
            found, _, end = _read_object(self._text, start, lists)
            self.keep(start, found, end, lists)
        return found

    def keep(
        self,
        start: int,
        members: list[_Member],
        end: int,
        lists: dict[int, tuple[list[tuple[int, int]], int]],
    ) -> None:
        """Remember the places of an object read at `start` and of its list members."""
        self._members[start], self._ends[start] = members, end
        for at, (items, list_end) in lists.items():
            self._items[at], self._ends[at] = items, list_end

    def items(self, start: int) -> list[tuple[int, int]]:
        """Where each item of the list whose text starts at `start` starts and ends."""
        found = self._items.get(start)
        if found is None:
            found, _, self._ends[start] = _read_list(self._text, start)
            self._items[start] = found
        return found


def _same(value: Any, original: Any) -> bool:
    # A bool equals 1 in Python, not in JSON: the types must match too. Only here: inside
    # a list or an object `==` still takes `[1]` for `[true]`, which the engine never
    # turns one into (it copies the agent's values), and comparing in Python would cost
    # a walk of the whole body per request.
    return type(value) is type(original) and bool(value == original)


def _equivalent(value: Any, original: Any) -> bool:
    """Equal, or equal once the agent's strings are read as the text blocks they stand for.

    Called on what is not equal as it is: the walk stops at the first difference.
    """
    if _same(value, original):
        return True
    if isinstance(original, str):
        return _one_block(value, original)
    if isinstance(value, dict) and isinstance(original, dict):
        return value.keys() == original.keys() and all(
            _equivalent(value[key], item) for key, item in original.items()
        )
    if isinstance(value, list) and isinstance(original, list):
        return len(value) == len(original) and all(
            _equivalent(item, was) for item, was in zip(value, original, strict=True)
        )
    return False


def _one_block(value: Any, text: str) -> bool:
    """Whether `value` is the list of one text block holding `text`."""
    return (
        isinstance(value, list) and len(value) == 1 and value[0] == {"type": "text", "text": text}
    )


def _expect(text: str, at: int, char: str) -> int:
    """Past `char` at `at` and the space after it; `ValueError` when it is not there."""
    if text[at : at + 1] != char:
        msg = f"expected {char!r} at character {at}"
        raise ValueError(msg)
    return _skip(text, at + 1)


def _read_object(
    text: str, start: int, lists: dict[int, tuple[list[tuple[int, int]], int]] | None = None
) -> tuple[list[_Member], dict[str, Any], int]:
    """An object's members, its value, and where it ends (ValueError: not JSON).

    The items of a list member are read too, into `lists` (by where the list starts).
    """
    members: list[_Member] = []
    value: dict[str, Any] = {}
    at = _expect(text, start, "{")
    if text[at : at + 1] == "}":
        return members, value, at + 1
    while True:
        key_at = at
        if text[at : at + 1] != '"':
            msg = f"expected a key at character {at}"
            raise ValueError(msg)
        key, at = _scanstring(text, at + 1)
        at = _expect(text, _skip(text, at), ":")
        if text[at : at + 1] == "[" and lists is not None:
            items, item, value_end = _read_list(text, at)
            lists[at] = (items, value_end)
        else:
            item, value_end = _DECODER.raw_decode(text, at)
        members.append((key, key_at, at, value_end))
        value[key] = item
        at = _skip(text, value_end)
        if text[at : at + 1] == "}":
            return members, value, at + 1
        at = _expect(text, at, ",")


def _read_list(text: str, start: int) -> tuple[list[tuple[int, int]], list[Any], int]:
    """A list's items' places, its value, and where it ends (ValueError: not JSON)."""
    items: list[tuple[int, int]] = []
    value: list[Any] = []
    at = _expect(text, start, "[")
    if text[at : at + 1] == "]":
        return items, value, at + 1
    # The loop runs once per message of a long history: the decoder's scanner is called
    # directly and the common separators (`,` and `, `) are taken without the pattern.
    scan, space, size = _scan_once, _SPACE.match, len(text)
    while True:
        try:
            item, end = scan(text, at)
        except StopIteration as stop:
            msg = f"expected a value at character {stop.value}"
            raise ValueError(msg) from None
        items.append((at, end))
        value.append(item)
        if end < size and text[end] in _SPACES:
            end = space(text, end).end()  # type: ignore[union-attr]
        if end >= size:
            msg = f"unterminated list from character {start}"
            raise ValueError(msg)
        if text[end] == "]":
            return items, value, end + 1
        if text[end] != ",":
            msg = f"expected ',' at character {end}"
            raise ValueError(msg)
        at = end + 1
        if at < size and text[at] in _SPACES:
            at = space(text, at).end()  # type: ignore[union-attr]


def read_spelled(raw: bytes) -> tuple[Any, Spelled | None]:
    """The body `raw` parses to, and its text's spelling (`None`: not kept for this body).

    An object is read once, its members and the items of its lists with their places;
    any other JSON (or a body in another encoding than UTF-8) is read by `json.loads`.

    Raises:
        ValueError: `raw` is not JSON (`json.loads` says what is wrong).
    """
    try:
        text = raw.decode("utf-8")
        start = _skip(text, 0)
        lists: dict[int, tuple[list[tuple[int, int]], int]] = {}
        members, value, end = _read_object(text, start, lists)
        if _skip(text, end) != len(text):
            msg = f"extra data at character {end}"
            raise ValueError(msg)
    except ValueError:
        return json.loads(raw), None
    spelled = Spelled(text)
    spelled.keep(start, members, end, lists)
    return value, spelled
