"""The gateway's own error answers, shaped as the client's API shapes its errors.

An agent reads an error answer with its provider's SDK: Claude Code reads Anthropic's
`{"type": "error", "error": {...}}`, Codex and opencode read OpenAI's
`{"error": {"message", "type", "param", "code"}}`, gemini-cli reads a `google.rpc.Status`
under `error`. An answer of another API's shape is shown to the user as an unreadable
error, or retried as if it were a network fault; in the client's own shape it says what
went wrong.
"""

from __future__ import annotations

from typing import Any, Literal

__all__ = ["Api", "api_of_path", "openai_refusal", "unreachable_upstream"]

Api = Literal["anthropic", "openai", "gemini"]
"""The error shapes: one per provider API."""


def api_of_path(path: str) -> Api:
    """Whose API a request path belongs to (`anthropic` for any path of none of the three)."""
    if path.startswith("/v1beta/") or (path.startswith("/v1/models/") and ":" in path):
        return "gemini"  # `models/<model>:<method>`; OpenAI's `/v1/models/<id>` has no method
    if path.startswith(("/v1/chat/", "/v1/responses", "/v1/completions", "/v1/embeddings")):
        return "openai"
    return "anthropic"


def unreachable_upstream(api: Api, message: str) -> dict[str, Any]:
    """The body of the 502 answered when the upstream could not be reached."""
    if api == "openai":
        return {"error": {"message": message, "type": "server_error", "param": None, "code": None}}
    if api == "gemini":
        return {"error": {"code": 502, "message": message, "status": "UNAVAILABLE"}}
    return {"type": "error", "error": {"type": "api_error", "message": message}}


def openai_refusal(message: str) -> dict[str, Any]:
    """OpenAI's error body for a request refused as invalid (HTTP 400)."""
    return {
        "error": {
            "message": message,
            "type": "invalid_request_error",
            "param": None,
            "code": None,
        }
    }
