"""Local fake model servers for the summarizer adapters' tests.

Each server is a threading HTTP server on 127.0.0.1 (port 0) that speaks the real wire
format: `POST /v1/chat/completions` answers a ChatCompletion, `POST /v1/messages` a
Message. It records every request body and answers from a script: a text, a tool call,
an HTTP error, or a text after a delay. The real SDKs talk to it; no network, no keys.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

import pytest

Wire = Literal["openai", "anthropic"]


@dataclass(frozen=True)
class Reply:
    """One scripted answer."""

    text: str = ""
    status: int = 200
    delay: float = 0.0
    tool_call: bool = False
    truncated: bool = False


def _openai_body(model: str, reply: Reply) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text}
    finish = "length" if reply.truncated else "stop"
    if reply.tool_call:
        call = {"name": "bash", "arguments": json.dumps({"command": "ls"})}
        message = {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "call_1", "type": "function", "function": call}],
        }
        finish = "tool_calls"
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def _anthropic_body(model: str, reply: Reply) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": reply.text}]
    stop = "max_tokens" if reply.truncated else "end_turn"
    if reply.tool_call:
        content = [{"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {"cmd": "ls"}}]
        stop = "tool_use"
    return {
        "id": "msg_test",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


def _error_body(wire: Wire, message: str) -> dict[str, Any]:
    if wire == "openai":
        return {"error": {"message": message, "type": "server_error", "code": None}}
    return {"type": "error", "error": {"type": "api_error", "message": message}}


class _QuietServer(ThreadingHTTPServer):
    """Daemon handler threads; a client that hung up (a timeout test) is not an error."""

    daemon_threads = True
    block_on_close = False

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Ignore broken connections: the client gave up on purpose."""


class FakeServer:
    """A scripted model server; `requests` holds the JSON bodies it received."""

    def __init__(self, wire: Wire) -> None:
        self.wire = wire
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self._replies: deque[Reply] = deque()
        self._lock = threading.Lock()
        self.stopping = threading.Event()
        self._http = _QuietServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(
            target=self._http.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        """`http://127.0.0.1:<port>`."""
        host, port = self._http.server_address[:2]
        return f"http://{host!s}:{port}"

    def script(self, *replies: dict[str, Any]) -> None:
        """Answer the next requests with `replies` (`Reply` fields as dicts), in order."""
        with self._lock:
            self._replies.extend(Reply(**reply) for reply in replies)

    def next_reply(self) -> Reply:
        with self._lock:
            if self._replies:
                return self._replies.popleft()
        return Reply(status=500, text="no scripted reply left")

    def record(self, path: str, body: dict[str, Any]) -> None:
        with self._lock:
            self.paths.append(path)
            self.requests.append(body)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self.stopping.set()
        self._http.shutdown()
        self._http.server_close()
        self._thread.join(timeout=5)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                """Keep the test output quiet."""

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                server.record(self.path, body)
                reply = server.next_reply()
                if reply.delay and server.stopping.wait(reply.delay):
                    return
                if reply.status != 200:
                    payload = _error_body(server.wire, reply.text)
                elif server.wire == "openai":
                    payload = _openai_body(str(body.get("model")), reply)
                else:
                    payload = _anthropic_body(str(body.get("model")), reply)
                data = json.dumps(payload).encode()
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler


def _serve(wire: Wire) -> Iterator[FakeServer]:
    server = FakeServer(wire)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(name="openai_server")
def openai_server_fixture() -> Iterator[FakeServer]:
    """A fake OpenAI-compatible server (`POST /v1/chat/completions`)."""
    yield from _serve("openai")


@pytest.fixture(name="anthropic_server")
def anthropic_server_fixture() -> Iterator[FakeServer]:
    """A fake Anthropic server (`POST /v1/messages`)."""
    yield from _serve("anthropic")


@pytest.fixture(name="openai_client")
async def openai_client_fixture(openai_server: FakeServer) -> AsyncIterator[Any]:
    """A real `AsyncOpenAI` client pointed at the fake server, without retries."""
    import openai

    client = openai.AsyncOpenAI(base_url=f"{openai_server.url}/v1", api_key="test", max_retries=0)
    yield client
    await client.close()


@pytest.fixture(name="anthropic_client")
async def anthropic_client_fixture(anthropic_server: FakeServer) -> AsyncIterator[Any]:
    """A real `AsyncAnthropic` client pointed at the fake server, without retries."""
    import anthropic

    client = anthropic.AsyncAnthropic(base_url=anthropic_server.url, api_key="test", max_retries=0)
    yield client
    await client.close()
