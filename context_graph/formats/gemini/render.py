"""Gemini `generateContent`: neutral turns to `systemInstruction` + `contents`.

Rules enforced here: system content goes to `systemInstruction`; roles are `user` and
`model`, alternating, opening with `user` (neighbours merged; a leading user turn added
when needed); a model turn's `functionCall` parts are answered by `functionResponse`
parts first in the next user turn, in call order, each with the call's id and name;
`response` is an object (`{"output": ...}`, or `{"error": ...}` for a failed call);
thought parts go back only with a Gemini signature, and a call's Gemini signature goes
back on its `functionCall` part (Gemini 3 refuses function calls without it); a plain
text part's signature (`Turn.part_signatures`) goes back on that part.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final

from context_graph.formats.gemini.wire import WIRE
from context_graph.graph.content import ContentPart, DocumentPart, ImagePart, TextPart, ThinkingPart
from context_graph.graph.node_tokens import DOCUMENT_TOKENS, IMAGE_TOKENS, NodeTokenCache
from context_graph.render.provider import EMPTY_USER_TEXT, LEADING_USER_TEXT, AssemblyStats
from context_graph.render.tools import ToolSpec
from context_graph.render.tools import count_tools as count_tool_field
from context_graph.render.turns import Result, Turn, UnitTurns, arguments_object, call_id_for

__all__ = [
    "GeminiContentsRenderer",
    "assemble",
    "count_messages",
    "count_payload",
    "count_tools",
    "system_instruction",
    "tools_field",
    "unit_messages",
]

Content = dict[str, Any]
Part = dict[str, Any]
_OVERHEAD = WIRE.overhead


def system_instruction(parts: Sequence[ContentPart]) -> list[Part]:
    """The parts of `systemInstruction` (text only)."""
    return [{"text": p.text} for p in parts if isinstance(p, TextPart) and p.text]


def unit_messages(unit: UnitTurns) -> list[Content]:
    """The contents of one unit, standing alone (not yet merged with neighbours)."""
    out: list[Content] = []
    for turn in unit.turns:
        if turn.role == "assistant":
            parts = _model_parts(turn)
            role = "model"
        else:
            parts = [_response_part(r) for r in turn.results]
            parts.extend(p for p in (_part(x) for x in turn.parts) if p is not None)
            # An empty user turn still happened: keep it (see the Anthropic twin).
            parts = parts or [{"text": EMPTY_USER_TEXT}]
            role = "user"
        if parts:
            out.append({"role": role, "parts": parts})
    return out


def _model_parts(turn: Turn) -> list[Part]:
    parts: list[Part] = []
    signatures = dict(turn.part_signatures)
    for n, part in enumerate(turn.parts):
        if isinstance(part, ThinkingPart):
            if part.provider == "gemini" and part.signature is not None:
                parts.append(
                    {"text": part.thinking, "thought": True, "thoughtSignature": part.signature}
                )
        elif isinstance(part, TextPart) and part.text:
            text: Part = {"text": part.text}
            if n in signatures:
                text["thoughtSignature"] = signatures[n]
            parts.append(text)
    for call in turn.calls:
        args = arguments_object(call.node)
        call_part: Part = {
            "functionCall": {
                "id": call_id_for(call, "gemini"),
                "name": call.node.name,
                "args": args,
            }
        }
        signature = call.node.signature
        if signature is not None and signature.provider == "gemini":
            call_part["thoughtSignature"] = signature.value
        parts.append(call_part)
    return parts


def _response_part(result: Result) -> Part:
    text = "\n".join(p.text for p in result.parts if isinstance(p, TextPart))
    key = "error" if result.is_error else "output"
    return {
        "functionResponse": {
            "id": call_id_for(result.call, "gemini"),
            "name": result.call.node.name,
            "response": {key: text},
        }
    }


def _part(part: ContentPart) -> Part | None:
    if isinstance(part, TextPart):
        return {"text": part.text} if part.text else None
    if isinstance(part, ImagePart | DocumentPart):
        if part.data is not None:
            media = part.media_type or ("image/png" if isinstance(part, ImagePart) else "")
            return {"inlineData": {"mimeType": media or "application/pdf", "data": part.data}}
        if part.url:
            return {"fileData": {"mimeType": part.media_type or "", "fileUri": part.url}}
    return None


def assemble(
    system: list[Part], units: Sequence[list[Content]], stats: AssemblyStats | None = None
) -> dict[str, Any]:
    """The request body: merged, alternating contents that open with a user turn."""
    stats = stats if stats is not None else AssemblyStats()
    contents: list[Content] = []
    for unit in units:
        for content in unit:
            if contents and contents[-1]["role"] == content["role"]:
                last = contents[-1]
                contents[-1] = {"role": last["role"], "parts": [*last["parts"], *content["parts"]]}
                stats.merges += 1
            else:
                contents.append(content)
    if not contents or contents[0]["role"] != "user":
        contents.insert(0, {"role": "user", "parts": [{"text": LEADING_USER_TEXT}]})
        stats.lead = True
    body: dict[str, Any] = {}
    if system:
        body["systemInstruction"] = {"parts": system}
    body["contents"] = contents
    return body


def tools_field(specs: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    """The `tools` field: one tool of every spec's `functionDeclarations`.

    The parameters go as `parametersJsonSchema` (plain JSON schema), not as Gemini's
    own `parameters` Schema, which spells types differently.
    """
    declarations: list[dict[str, Any]] = []
    for spec in specs:
        declaration: dict[str, Any] = {"name": spec.name}
        if spec.description:
            declaration["description"] = spec.description
        declaration["parametersJsonSchema"] = dict(spec.parameters)
        declarations.append(declaration)
    return [{"functionDeclarations": declarations}] if declarations else []


def count_tools(field_value: Any, cache: NodeTokenCache) -> int:
    """Tokens of a rendered `tools` field, with the format's tool overheads."""
    return count_tool_field(field_value, _OVERHEAD, cache, nested_in="functionDeclarations")


# --- counting -----------------------------------------------------------------------------


def count_payload(payload: dict[str, Any], cache: NodeTokenCache) -> int:
    """Tokens of a request body: system instruction, every content, the reply priming."""
    instruction = payload.get("systemInstruction") or payload.get("system_instruction") or {}
    system = sum(cache.count_text(p.get("text", "")) for p in instruction.get("parts", ()))
    tools = count_tools(payload.get("tools"), cache)
    return (
        tools + _OVERHEAD.per_request + system + count_messages(payload.get("contents", ()), cache)
    )


def count_messages(contents: Sequence[Content], cache: NodeTokenCache) -> int:
    """Tokens of contents, each with its overhead."""
    total = 0
    for content in contents:
        total += _OVERHEAD.per_message
        for part in content["parts"]:
            total += _part_tokens(part, cache)
    return total


def _part_tokens(part: Part, cache: NodeTokenCache) -> int:
    if "text" in part:
        return cache.count_text(part["text"])
    if "functionCall" in part:
        call = part["functionCall"]
        arguments = json.dumps(call.get("args", {}), ensure_ascii=False)
        return (
            _OVERHEAD.per_tool_call + cache.count_text(call["name"]) + cache.count_text(arguments)
        )
    if "functionResponse" in part:
        response = part["functionResponse"].get("response", {})
        values = [v for v in response.values() if isinstance(v, str)]
        body = "\n".join(values) if values else json.dumps(response, ensure_ascii=False)
        return _OVERHEAD.per_tool_result + cache.count_text(body)
    if "inlineData" in part and str(part["inlineData"].get("mimeType", "")).startswith("image/"):
        return IMAGE_TOKENS
    return DOCUMENT_TOKENS


# --- as a provider renderer ---------------------------------------------------------------


class GeminiContentsRenderer:
    """Gemini `generateContent` as a `ProviderRenderer`: the functions of this module."""

    format: Final = "gemini"
    overhead: Final = _OVERHEAD
    #: None: Gemini's context caching is a separate API, not marks in a body.
    cache_marking: Final = None
    system = staticmethod(system_instruction)
    unit_messages = staticmethod(unit_messages)
    assemble = staticmethod(assemble)
    count_messages = staticmethod(count_messages)
    count_payload = staticmethod(count_payload)
    render_tools = staticmethod(tools_field)
    count_tools = staticmethod(count_tools)
