"""A local fake of the providers' compaction endpoints, speaking their wire formats.

`POST /v1/responses/compact` answers as OpenAI's compact endpoint does (a
`response.compaction` object: the input's user messages, then one `compaction` item with
`encrypted_content`); `POST /v1/messages` with a `compact_20260112` edit answers as
Anthropic's server-side compaction does when it pauses after compacting (a message whose
only content block is a `compaction` block, `stop_reason: "compaction"`). `mode` makes it
fail the ways a real service does: `"500"` (an API error body), `"slow"` (answers after
`delay` seconds), `"empty"` (a compaction with nothing in it), `"malformed"` (a body
that is not JSON). Every request body is kept in `bodies`.

```python
with CompactServer() as server:
    client = AsyncOpenAI(base_url=f"{server.url}/v1", api_key="test")
```
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal, Self

__all__ = ["CompactServer", "Mode"]

Mode = Literal["ok", "500", "slow", "empty", "malformed"]

_SUMMARY = "Summary of the conversation so far"


@dataclass
class CompactServer:
    """The fake; `start()`/`stop()` or a `with` block.

    Attributes:
        mode: How it answers (see the module docstring).
        delay: Seconds a `"slow"` answer waits.
        summary: Anthropic's readable `content` (the identifiers it was told to keep are
            appended, as a faithful summary would keep them).
        bodies: Each request's path and JSON body, in order.
    """

    mode: Mode = "ok"
    delay: float = 5.0
    summary: str = _SUMMARY
    bodies: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        """The base URL (no `/v1`)."""
        assert self._server is not None, "start() the server first"
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> None:
        """Serve on a free local port, in a daemon thread."""
        self._server = _Quiet(("127.0.0.1", 0), _handler(self))
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        """Stop serving."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """The status and JSON body for a request."""
        self.bodies.append((path, body))
        anthropic = path.startswith("/v1/messages")
        if self.mode == "500":
            return 500, _error(anthropic=anthropic)
        if path == "/v1/responses/compact":
            return 200, _compacted(body, empty=self.mode == "empty")
        if anthropic:
            return 200, _message(body, self.summary, empty=self.mode == "empty")
        return 404, _error(anthropic=False)


def _error(*, anthropic: bool) -> dict[str, Any]:
    if anthropic:
        return {
            "type": "error",
            "error": {"type": "api_error", "message": "Internal server error"},
        }
    return {
        "error": {
            "message": "The server had an error while processing your request.",
            "type": "server_error",
            "param": None,
            "code": None,
        }
    }


def _compacted(body: dict[str, Any], *, empty: bool) -> dict[str, Any]:
    items = body.get("input") or []
    users = [
        {
            "id": f"msg_{i}",
            "type": "message",
            "status": "completed",
            "role": "user",
            "content": [{"type": "input_text", "text": item.get("content", "")}],
        }
        for i, item in enumerate(items)
        if isinstance(item, dict) and item.get("role") == "user"
    ]
    compaction = (
        []
        if empty
        else [{"id": "cmp_1", "type": "compaction", "encrypted_content": "gAAAA-opaque-1"}]
    )
    return {
        "id": "resp_cmp_1",
        "object": "response.compaction",
        "created_at": int(time.time()),
        "output": [*users, *compaction],
        "usage": {
            "input_tokens": 120,
            "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
            "output_tokens": 40,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 160,
        },
    }


def _kept(body: dict[str, Any]) -> str:
    """The identifiers the edit's instructions asked to keep, as the summary quotes them."""
    for edit in (body.get("context_management") or {}).get("edits", []):
        text = edit.get("instructions") or ""
        for line in text.splitlines():
            if line.startswith("Keep these exactly as written: "):
                return line.removeprefix("Keep these exactly as written: ")
    return ""


def _message(body: dict[str, Any], summary: str, *, empty: bool) -> dict[str, Any]:
    kept = _kept(body)
    text = f"{summary}: {kept}." if kept else f"{summary}."
    block = {"type": "compaction", "content": None if empty else text, "encrypted_content": None}
    return {
        "id": "msg_cmp_1",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "claude"),
        "content": [block],
        "stop_reason": "compaction",
        "stop_sequence": None,
        "context_management": {"applied_edits": []},
        "usage": {
            "input_tokens": 0,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
            "output_tokens": 0,
            "iterations": [
                {
                    "type": "compaction",
                    "input_tokens": 120,
                    "output_tokens": 40,
                    "cache_creation_input_tokens": 0,
                    "cache_read_input_tokens": 0,
                }
            ],
            "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0},
            "service_tier": "standard",
        },
    }


class _Quiet(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # a "slow" answer still sleeping must not hold up stop()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up (a timeout) is no error worth printing."""


def _handler(server: CompactServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            """Quiet."""

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            path = self.path.split("?")[0]
            status, answer = server.answer(path, body)
            if server.mode == "slow":
                time.sleep(server.delay)
            data = b"{not json" if server.mode == "malformed" else json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler
