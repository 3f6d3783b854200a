"""Provider compaction artifacts read into `Compaction` events, with the importers' errors.

The readers of the formats whose provider compacts (and the SDK reply reader) turn the
provider's artifact into a `Compaction` event carrying it verbatim
(`context_graph.graph.native`). A malformed one is refused with an `IngestError` naming
the key inside the block, never half-read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import JsonValue, ValidationError

from context_graph.errors import IngestError, SourceLocation
from context_graph.formats.wires import WIRES
from context_graph.graph.content import ContentPart, TextPart
from context_graph.graph.events import Compaction
from context_graph.graph.json_limits import check_json_value
from context_graph.graph.native import NativeCompaction, NativeProvider, artifact, readable_text

__all__ = ["native_compaction"]


def native_compaction(
    provider: NativeProvider,
    item: Mapping[str, Any],
    where: SourceLocation,
    *,
    timestamp: str | None = None,
    meta: Mapping[str, JsonValue] | None = None,
) -> Compaction:
    """The `Compaction` event of one artifact read at `where`.

    Raises:
        IngestError: the artifact is malformed or too large to keep (names the key).
    """
    for key, value in item.items():
        if isinstance(key, str):  # other keys are refused below
            check_json_value(value, path=key, location=where)
    try:
        native = NativeCompaction(provider=provider, item=dict(item))
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        deeper = (first.get("ctx") or {}).get("path")
        loc = [str(p) for p in first["loc"]]
        path = deeper if isinstance(deeper, str) else ".".join(loc)
        key = path.removeprefix("item").lstrip(".")
        msg = f"{artifact(provider).noun} is malformed: {first['msg']}"
        raise IngestError(msg, where.with_path(key) if key else where) from None
    text = readable_text(native)
    content: tuple[ContentPart, ...] = (TextPart(text=text),) if text else ()
    return Compaction(
        content=content,
        # The importer's name of the format: the origin its own reader gives.
        origin=WIRES[provider].reader_name,
        native=native,
        timestamp=timestamp,
        meta=dict(meta or {}),
        source=where,
    )
