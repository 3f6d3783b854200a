"""Tool-call ids as each provider accepts them, mapped deterministically (and back).

Each format's `wire` module says what its provider accepts (a character set, a length
cap; some providers also reject an id used twice in one request). Sessions break these:
tau-bench reuses ids, other tools write ids with dots or colons, some ids are long. An
id that is valid and the first use of its value is sent as it is (so most renders are
byte-identical to the source); any other id is rewritten from its value and the call's
position, which never change once ingested, so the mapping is stable from one render to
the next.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from types import MappingProxyType

from context_graph.formats.wire import IdRule
from context_graph.formats.wires import WIRES

__all__ = ["ID_RULES", "IdRule", "provider_call_id"]


#: What each provider format accepts as a tool-call id (read-only); each format's
#: folder holds its own.
ID_RULES: Mapping[str, IdRule] = MappingProxyType(
    {name: wire.id_rule for name, wire in WIRES.items()}
)

_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")


def provider_call_id(original: str, seq: int | None, first_use: bool, fmt: str) -> str:
    """The id to send for a call in format `fmt`.

    Args:
        original: The call id as recorded.
        seq: The call node's transcript position.
        first_use: Whether no earlier call in the session used `original`.
        fmt: A format's name (a key of `ID_RULES`).
    """
    rule = ID_RULES[fmt]
    if first_use and len(original) <= rule.max_length and rule.pattern.fullmatch(original):
        return original
    seed = f"{original}\x00{seq}".encode()
    suffix = "_" + hashlib.blake2b(seed, digest_size=5).hexdigest()
    base = _UNSAFE.sub("_", original) or "call"
    return base[: rule.max_length - len(suffix)] + suffix
