"""Deterministic ids: a node's id and the digest of plain data, the same in any process."""

from __future__ import annotations

import hashlib
import json
from typing import Any

__all__ = ["content_digest", "make_node_id"]


def content_digest(payload: Any) -> str:
    """Return a stable hex digest of plain data (dicts, lists, strings, numbers).

    The same data gives the same digest in any process: keys are sorted and the
    encoding is fixed.
    """
    encoded = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.blake2b(encoded.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


def make_node_id(kind: str, seq: int | None, payload: Any) -> str:
    """Return the deterministic id of a node.

    Transcript nodes are named by their position and content (`000012-user-1f3a...`), so
    two equal turns at different places get different ids and ids sort in transcript
    order. Derived nodes (no position) are named by content and lineage alone.
    `payload` is plain data, or `bytes` that already are its canonical encoding.
    """
    if isinstance(payload, bytes):
        digest = hashlib.blake2b(payload, digest_size=8).hexdigest()
    else:
        digest = content_digest(payload)
    if seq is None:
        return f"{kind}-{digest}"
    return f"{seq:06d}-{kind}-{digest}"
