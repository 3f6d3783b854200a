"""The JSON events of a server-sent event stream, as far as its bytes go (any provider's)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

__all__ = ["data_events"]


def data_events(stream: bytes, *, newest_first: bool = False) -> Iterator[dict[str, Any]]:
    """Each `data:` line of `stream` that holds a JSON object, in order (or newest first).

    `stream` may be a cut piece of a stream (its first or last bytes): a line cut in two
    does not read as JSON and is skipped.
    """
    lines = stream.splitlines()
    for line in reversed(lines) if newest_first else lines:
        if not line.startswith(b"data:"):
            continue
        try:
            event = json.loads(line[5:])
        except ValueError:
            continue
        if isinstance(event, dict):
            yield event
