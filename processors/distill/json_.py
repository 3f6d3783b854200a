"""JSON: the shape (every key, the type of long strings), key fields verbatim, arrays cut.

The distillate is itself valid JSON, spaced like the original (a kept stretch stays
verbatim). Objects keep their keys in order; the values of key fields (`id`, `*_id`,
`name`, `status`, `error`, `message`, `code`, `type`, `path`, `url`, ...) and numbers,
booleans and nulls stay verbatim; other strings are cut to a prefix (or, tighter, to
`"<str, N chars>"`); arrays longer than a few items keep their first items and a
`"<+N more items>"` entry; containers that hold containers beyond a depth become
`"<object: N keys: a, b, ...>"` or `"<array: N items>"` strings. The loosest settings that
fit the budget win (the shortest rendering when none fits).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from processors.distill.common import Doc
from processors.distill.light import json_separators

__all__ = ["distill_json", "is_key_field"]

_KEY_FIELD = re.compile(
    r"(?:^|[_\-.])(?:id|ids|uuid|key|name|title|status|state|error|errors|message|msg|code"
    r"|type|kind|path|file|filename|url|uri|reason|result|success|ok|version)$"
    r"|^(?:id|name|status|error|message|type|path|url)",
    re.IGNORECASE,
)
_CAMEL_KEY = re.compile(
    r"[a-z0-9](?:Id|Ids|ID|Uuid|Key|Name|Title|Status|State|Error|Message|Code|Type|Kind|Path"
    r"|File|Url|Uri|Reason|Version)$"
)
_VERBATIM_CAP = 1_000
_MAX_KEYS = 60
_SHORT = 24  # strings this short stay: a placeholder would not be shorter


def is_key_field(key: str) -> bool:
    """Whether the values of `key` stay verbatim (ids, names, status, errors, messages...)."""
    return _KEY_FIELD.search(key) is not None or _CAMEL_KEY.search(key) is not None


@dataclass(frozen=True)
class _Settings:
    items: int
    chars: int
    depth: int


_LADDER = {
    "medium": (_Settings(5, 80, 8), _Settings(3, 40, 6), _Settings(2, 16, 5), _Settings(1, 0, 4)),
    "heavy": (_Settings(2, 24, 5), _Settings(1, 0, 4), _Settings(1, 0, 3), _Settings(1, 0, 2)),
}


def _string(value: str, key: str | None, settings: _Settings) -> str:
    if key is not None and is_key_field(key):
        if len(value) <= _VERBATIM_CAP:
            return value
        return f"{value[:_VERBATIM_CAP]}...<+{len(value) - _VERBATIM_CAP:,} chars>"
    if len(value) <= max(settings.chars, _SHORT):
        return value
    if settings.chars:
        return f"{value[: settings.chars]}...<+{len(value) - settings.chars:,} chars>"
    return f"<str, {len(value):,} chars>"


def _object(value: dict[str, Any], settings: _Settings, depth: int) -> Any:
    if depth >= settings.depth and any(isinstance(v, dict | list) for v in value.values()):
        keys = ", ".join(list(value)[:8]) + (", ..." if len(value) > 8 else "")
        return f"<object: {len(value):,} keys: {keys}>"
    out: dict[str, Any] = {}
    for index, (key, item) in enumerate(value.items()):
        if index == _MAX_KEYS:
            out["<more keys>"] = f"<+{len(value) - _MAX_KEYS:,} more keys>"
            break
        out[key] = _shape(item, settings, key=key, depth=depth + 1)
    return out


def _shape(value: Any, settings: _Settings, *, key: str | None = None, depth: int = 0) -> Any:
    """The distilled form of a parsed JSON value."""
    if isinstance(value, dict):
        return _object(value, settings, depth)
    if isinstance(value, list):
        nested = any(isinstance(item, dict | list) for item in value)
        if depth >= settings.depth and (nested or len(value) > settings.items):
            return f"<array: {len(value):,} items>"
        shown = [
            _shape(item, settings, key=key, depth=depth + 1) for item in value[: settings.items]
        ]
        if len(value) > settings.items:
            shown.append(f"<+{len(value) - settings.items:,} more items>")
        return shown
    if isinstance(value, str):
        return _string(value, key, settings)
    return value


def distill_json(doc: Doc) -> str | None:
    """Distill a JSON body; None when it does not parse."""
    try:
        value = json.loads(doc.text)
    except (ValueError, RecursionError):
        return None
    # The original's spacing: a stretch of it that the shape keeps stays verbatim.
    separators = json_separators(doc.text)
    shortest = ""
    for settings in _LADDER["heavy" if doc.heavy else "medium"]:
        try:
            shaped = _shape(value, settings)
            rendered = json.dumps(shaped, ensure_ascii=False, separators=separators)
        except RecursionError:
            return None
        if doc.costs.of(rendered) <= doc.budget:
            return rendered
        if not shortest or len(rendered) < len(shortest):
            shortest = rendered
    return shortest
