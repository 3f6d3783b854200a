"""Tool-call ids as each provider accepts them, mapped deterministically (and back).

Anthropic accepts `^[a-zA-Z0-9_-]+$` and rejects an id used twice in one request; OpenAI
caps ids at 40 characters in Chat Completions and at 64 in the Responses API (`call_id`).
Sessions break both: tau-bench reuses ids, other tools write
ids with dots or colons, some ids are long. An id that is valid and the first use of
its value is sent as it is (so most renders are byte-identical to the source); any
other id is rewritten from its value and the call's position, which never change once
ingested, so the mapping is stable from one render to the next.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

__all__ = ["ID_RULES", "IdRule", "provider_call_id"]


@dataclass(frozen=True, slots=True)
class IdRule:
    """What a provider accepts as a tool-call id."""

    pattern: re.Pattern[str]
    max_length: int


#: What each provider format accepts as a tool-call id (read-only).
ID_RULES: Mapping[str, IdRule] = MappingProxyType(
    {
        "openai": IdRule(re.compile(r"[^\x00-\x1f]+"), 40),
        "anthropic": IdRule(re.compile(r"[a-zA-Z0-9_-]+"), 64),
        "gemini": IdRule(re.compile(r"[^\x00-\x1f]+"), 64),
        # The Responses API refuses a `call_id` over 64 characters (`string_above_max_length`).
        "responses": IdRule(re.compile(r"[^\x00-\x1f]+"), 64),
    }
)

_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")


def provider_call_id(original: str, seq: int | None, first_use: bool, fmt: str) -> str:
    """The id to send for a call in format `fmt`.

    Args:
        original: The call id as recorded.
        seq: The call node's transcript position.
        first_use: Whether no earlier call in the session used `original`.
        fmt: `openai`, `anthropic`, `gemini` or `responses`.
    """
    rule = ID_RULES[fmt]
    if first_use and len(original) <= rule.max_length and rule.pattern.fullmatch(original):
        return original
    seed = f"{original}\x00{seq}".encode()
    suffix = "_" + hashlib.blake2b(seed, digest_size=5).hexdigest()
    base = _UNSAFE.sub("_", original) or "call"
    return base[: rule.max_length - len(suffix)] + suffix
