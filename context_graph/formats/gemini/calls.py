"""Gemini's tool-call shape, as `ToolCall` reads it: a `functionCall` part or a bare call.

A part is `{functionCall: {id?, name, args}, thoughtSignature?}` (camelCase, or the
SDK's snake_case); a bare `FunctionCall` is `{id?, name, args}`. A call without an id
gets `gemini_<name>_<k>`, `k` counting the same-named calls before it in its turn, the
rule the Gemini importer follows for a content that stands alone. The signature Gemini
puts over a call is kept (`ProviderSignature`), to be sent back only to Gemini.

Imports nothing of the graph: `context_graph.formats.wires` holds this below it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from context_graph.formats.wire import CallProblem, Places

__all__ = ["GeminiCalls"]

_PART_KEYS = ("functionCall", "function_call")
_SIGNATURE_KEYS = ("thoughtSignature", "thought_signature")


class GeminiCalls:
    """Reads Gemini's `functionCall` parts and bare `FunctionCall`s."""

    def wrapper(self, value: Mapping[str, Any]) -> str | None:
        """`functionCall` (or `function_call`) when the part holds one."""
        return next((key for key in _PART_KEYS if value.get(key) is not None), None)

    def read_wrapped(
        self, value: Mapping[str, Any], key: str, k: int
    ) -> tuple[dict[str, Any], Places]:
        """The part's call, with the part's signature when it has one."""
        call = value[key]
        if not isinstance(call, Mapping):
            raise CallProblem(f"`{key}` must be an object, got {call!r}", key)
        fields = _call_fields(call, k)
        places = {"id": f"{key}.id", "name": f"{key}.name", "arguments": f"{key}.args"}
        for sig_key in _SIGNATURE_KEYS:
            signature = value.get(sig_key)
            if signature is None:
                continue
            if not isinstance(signature, str):
                reason = f"`{sig_key}` must be the base64 text the API returned, got {signature!r}"
                raise CallProblem(reason, sig_key)
            fields["signature"] = {"provider": "gemini", "value": signature}
            break
        return fields, places

    def is_bare(self, value: Mapping[str, Any]) -> bool:
        """A call with Gemini's `args` (not the flat shape's `arguments`)."""
        return "args" in value and "arguments" not in value

    def read_bare(self, value: Mapping[str, Any], k: int) -> tuple[dict[str, Any], Places]:
        """The bare call's fields, read where Gemini names them."""
        return _call_fields(value, k), {"id": "id", "name": "name", "arguments": "args"}

    def name_of(self, value: Any) -> str | None:
        """The name of a part's call or of a bare call."""
        if not isinstance(value, Mapping):
            return None
        key = self.wrapper(value)
        call = value[key] if key is not None else value if self.is_bare(value) else None
        name = call.get("name") if isinstance(call, Mapping) else None
        return name if isinstance(name, str) else None


def _call_fields(call: Mapping[str, Any], k: int) -> dict[str, Any]:
    name, call_id = call.get("name"), call.get("id")
    if call_id in (None, "") and isinstance(name, str) and name:
        call_id = f"gemini_{name}_{k}"
    return {"id": call_id, "name": name, "arguments": call.get("args")}
