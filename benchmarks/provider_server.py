"""A strict local model server: four wire formats, every body validated, prompts counted.

`ProviderServer(wire)` listens on 127.0.0.1 (port 0) and answers like the real API:
`POST /v1/chat/completions` (`openai`), `POST /v1/responses` (`responses`),
`POST /v1/messages` and `/v1/messages/count_tokens` (`anthropic`) and
`POST /v1beta/models/<model>:generateContent` and `:countTokens` (`gemini`). Every body
is checked with the engine's validator (`context_graph.validate.validate`) and the SDK
request types (`sdk_problems`), and its prompt is counted the provider's way: the
renderer's count times `factor` (a provider whose tokenizer counts more than ours). A
body that breaks a rule, or whose prompt is over `limit`, is refused with the provider's
own error shape (HTTP 400), so a client sees what the real API would answer. Answers come from
`respond(body)`: a dict of `Turn`'s fields (`{"text": ...}`,
`{"calls": [["read_file", {"path": "a.py"}]], "reasoning": True}`).

An answer has the real API's whole shape, checked against the SDKs' response types
(tests/benchmarks/test_provider_server.py): a Responses `Response` echoes its request
(`instructions`, `tools`, settings, with the API's defaults), and usage carries its
details (cached tokens from a prefix shared with the previous request, reasoning
tokens, Anthropic's cache and server-tool counts), so a client that reads a response
by every field present fails here as it would against the real API.

The integrations' tests (tests/orchestrator/integrations/conftest.py, fixture
`provider_server`) and `python -m benchmarks.integrations` share this one server.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal, Self

from benchmarks.provider_streams import StreamFault, stream_events, wants_stream, write_stream
from benchmarks.sdk_types import sdk_problems
from context_graph.render import count_payload
from context_graph.tokens.counting import default_counter
from context_graph.validate import validate

__all__ = ["ProviderServer", "Turn", "Wire"]

Wire = Literal["openai", "responses", "anthropic", "gemini"]
#: The one thread every server counts its prompts on (see `ProviderServer`); it lives as
#: long as the process, so a server can still count after it stopped serving.
_COUNTING = ThreadPoolExecutor(1, thread_name_prefix="provider-server-count")
_BODY_KEYS = {
    "openai": ("messages", "tools"),
    "responses": ("instructions", "input", "tools"),
    "anthropic": ("system", "messages", "tools"),
    "gemini": ("systemInstruction", "contents", "tools"),
}


@dataclass(frozen=True)
class Turn:
    """One answer: text, tool calls (name, arguments), and a reasoning item first."""

    text: str = ""
    calls: tuple[tuple[str, dict[str, Any]], ...] = ()
    reasoning: bool = False


@dataclass
class ProviderServer:
    """A validating fake API.

    `requests` and `prompts` hold each accepted body and its count; `refused` the reason
    for each refused body and `refused_prompts` its count.

    Every prompt is counted on one thread (`_COUNTING`, the module's, for every server):
    the tokenizer (tiktoken) counts about a quarter slower on any thread but the first to
    count (measured: 24.4 vs 30.8 ms for a 100k-token body), and each connection is
    served from a thread of its own, so the same body would take longer to answer on one
    client's connection than on another's. `benchmarks.proxy`, which times one body sent
    direct and through the gateway, read that difference as the gateway's cost (about
    5 ms at 100k).
    """

    wire: Wire
    respond: Callable[[dict[str, Any]], dict[str, Any]] = field(
        default=lambda body: {"text": "done"}
    )
    limit: int | None = None
    factor: float = 1.25
    requests: list[dict[str, Any]] = field(default_factory=list)
    prompts: list[int] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    refused_prompts: list[int] = field(default_factory=list)
    counted: list[dict[str, Any]] = field(default_factory=list)
    stream_fault: StreamFault | None = None
    """Interrupts every streamed answer while set (a body with `"stream": true`, or Gemini's
    `:streamGenerateContent`, is answered by `benchmarks.provider_streams`)."""
    keep: bool = True
    """False: keep no body in `requests` or `counted` (a server that only answers, as
    `benchmarks.proxy`'s upstream in a process of its own). A hundred kept 100k-token
    bodies are millions of objects that each full pass of the garbage collector walks:
    50-115 ms pauses, landing on whichever request is being answered."""
    _serial: int = 0
    _previous: dict[str, Any] | None = None

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._http = _Quiet(("127.0.0.1", 0), _handler(self))
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        """`http://127.0.0.1:<port>`."""
        host, port = self._http.server_address[:2]
        return f"http://{host!s}:{port}"

    def count(self, body: dict[str, Any]) -> int:
        """The prompt tokens of a body, as this provider counts them (on the counting thread)."""
        return _COUNTING.submit(self._count, body).result()

    def _count(self, body: dict[str, Any]) -> int:
        part = {k: body[k] for k in _BODY_KEYS[self.wire] if k in body}
        if self.wire == "responses":
            part["input"] = _text_as_parts(part.get("input", []))
        fmt = "anthropic" if self.wire == "anthropic" else self.wire
        return math.ceil(count_payload(part, fmt, default_counter()) * self.factor)

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """The status and JSON answer to one request."""
        if self.wire == "anthropic" and path.split("?")[0] == "/v1/messages/count_tokens":
            return self.count_tokens(body)
        if self.wire == "gemini" and path.split("?")[0].endswith(":countTokens"):
            return self.count_gemini_tokens(body)
        checked = _sent_back(body) if self.wire == "openai" else body
        problems = [f"{v.rule}: {v.message}" for v in validate(checked, self.wire)]
        problems += _known_to_sdk(sdk_problems(checked, self.wire), checked)
        try:
            tokens = self.count(body)
        except (AttributeError, TypeError, KeyError):
            if not problems:
                raise
            tokens = 0  # too malformed to count (`messages` not a list): refused for its problems
        if not problems and self.limit is not None and tokens > self.limit:
            problems = [f"prompt is {tokens} tokens, over the {self.limit}-token limit"]
        with self._lock:
            if problems:
                self.refused.append("; ".join(problems))
                self.refused_prompts.append(tokens)
                return 400, _error(self.wire, "; ".join(problems))
            if self.keep:
                self.requests.append(body)
            self.prompts.append(tokens)
            self._serial += 1
            serial = self._serial
            previous, self._previous = self._previous, body
        spec = self.respond(body)
        turn = Turn(
            text=spec.get("text", ""),
            calls=tuple((name, dict(args)) for name, args in spec.get("calls", ())),
            reasoning=spec.get("reasoning", False),
        )
        model = str(body.get("model", path.split("/")[-1].split(":")[0]))
        answer = _WRITERS[self.wire](model, turn, tokens, serial)
        if self.wire == "responses":
            answer.update(_responses_echo(body))
        _report_cached(self.wire, answer, min(tokens, self.cached(body, previous)))
        return 200, answer

    def count_tokens(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """Anthropic's `count_tokens`: the prompt tokens of a body, checked as a request is.

        Counted bodies are kept in `counted`, not in `requests` (no model call was made).
        """
        problems = [f"{v.rule}: {v.message}" for v in validate(body, "anthropic")]
        problems += sdk_problems(body, "anthropic")
        if not isinstance(body.get("model"), str):
            problems.append("model: Field required")
        if problems:
            return 400, _error("anthropic", "; ".join(problems))
        tokens = self.count(body)
        with self._lock:
            if self.keep:
                self.counted.append(body)
        return 200, {"input_tokens": tokens}

    def count_gemini_tokens(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """Gemini's `countTokens`: bare `contents`, or a whole `generateContentRequest`
        (which names its `model`), checked as a request is; kept in `counted`."""
        inner = body.get("generateContentRequest")
        request = inner if isinstance(inner, dict) else {"contents": body.get("contents")}
        problems = [f"{v.rule}: {v.message}" for v in validate(request, "gemini")]
        if isinstance(inner, dict) and not isinstance(inner.get("model"), str):
            problems.append("generateContentRequest.model: required")
        if problems:
            return 400, _error("gemini", "; ".join(problems))
        tokens = self.count(request)
        with self._lock:
            if self.keep:
                self.counted.append(body)
        details = [{"modality": "TEXT", "tokenCount": tokens}]
        return 200, {"totalTokens": tokens, "promptTokensDetails": details}

    def cached(self, body: dict[str, Any], previous: dict[str, Any] | None) -> int:
        """The prompt tokens an automatic prefix cache holds after `previous` (OpenAI, Gemini).

        The leading part both prompts share (the same system prompt and tools, then the
        same first items), counted, in steps of 128 tokens from 1,024 up, as OpenAI's
        prompt caching reports it; Gemini's implicit caching is taken to report alike.
        Anthropic caches only at the request's `cache_control` marks: not modelled (0).
        """
        key = _CACHED_HISTORY.get(self.wire)
        if key is None or previous is None:
            return 0
        rest = [k for k in _BODY_KEYS[self.wire] if k != key]
        if any(body.get(k) != previous.get(k) for k in rest):
            return 0
        items, before = _items(body.get(key)), _items(previous.get(key))
        shared = next(
            (i for i, (a, b) in enumerate(zip(items, before, strict=False)) if a != b),
            min(len(items), len(before)),
        )
        prefix = self.count({**{k: body[k] for k in rest if k in body}, key: items[:shared]})
        return 0 if prefix < _CACHE_MIN else prefix // _CACHE_STEP * _CACHE_STEP

    def start(self) -> None:
        """Serve in a daemon thread."""
        self._thread.start()

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self._http.shutdown()
        self._http.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _known_to_sdk(problems: list[str], body: dict[str, Any]) -> list[str]:
    """The SDK-type problems but those of the provider's own (server) tools.

    A server tool's definition (Responses `web_search`, `tool_search`, a freeform
    `custom` tool) gains fields faster than the installed SDK's request types: Codex
    CLI 0.171 sends `web_search.search_content_types`, which the real API takes and the
    SDK's `WebSearchToolParam` does not know. Those tools are checked by the API alone.
    """
    tools = body.get("tools")
    if not isinstance(tools, list):
        return problems
    server = {
        f"tools[{n}]"
        for n, tool in enumerate(tools)
        if isinstance(tool, dict) and tool.get("type") not in (None, "function")
    }
    return [p for p in problems if p.split(".", 1)[0].split(":", 1)[0] not in server]


def _text_as_parts(items: Any) -> list[Any]:
    """Responses input with its text shorthands spelled out, as the renderer's counter reads it.

    The API takes `input="..."` and a message whose `content` is a string (an SDK loop
    sends those); the engine's renderer never writes them, and its counter reads lists of
    parts only.
    """
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    out = []
    for item in items:
        content = item.get("content") if isinstance(item, dict) else None
        if isinstance(content, str):
            kind = "output_text" if item.get("role") == "assistant" else "input_text"
            item = {**item, "content": [{"type": kind, "text": content}]}
        out.append(item)
    return out


_CREATED = 1_700_000_000
_OUTPUT_TOKENS = 5
"""What every answer counts as its output (the text is short and fixed)."""


_CACHED_HISTORY = {"openai": "messages", "responses": "input", "gemini": "contents"}
_CACHE_MIN, _CACHE_STEP = 1024, 128


def _items(history: Any) -> list[Any]:
    return (
        [{"role": "user", "content": history}] if isinstance(history, str) else list(history or [])
    )


def _report_cached(wire: Wire, answer: dict[str, Any], cached: int) -> None:
    """Put the cached prompt tokens where the provider's usage reports them."""
    if wire == "openai":
        answer["usage"]["prompt_tokens_details"]["cached_tokens"] = cached
    elif wire == "responses":
        answer["usage"]["input_tokens_details"]["cached_tokens"] = cached
    elif wire == "gemini" and cached:  # the API leaves zero counts out
        usage = answer["usageMetadata"]
        usage["cachedContentTokenCount"] = cached
        usage["cacheTokensDetails"] = [{"modality": "TEXT", "tokenCount": cached}]


def _sent_back(body: dict[str, Any]) -> dict[str, Any]:
    """A chat body without the `annotations` of assistant messages, which the API takes back.

    The API's messages carry `annotations` (`[]` without citations), and a loop that
    appends `choices[0].message` sends them back; the real API accepts them, though the
    SDK's request type does not declare them.
    """
    messages = body.get("messages")
    if not isinstance(messages, list):
        return body
    kept = [
        {k: v for k, v in m.items() if k != "annotations"}
        if isinstance(m, dict) and m.get("role") == "assistant"
        else m
        for m in messages
    ]
    return {**body, "messages": kept}


class _Quiet(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up is not the test's failure."""


def _handler(server: ProviderServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        # The providers' APIs keep a connection open from request to request (HTTP/1.1
        # keep-alive); HTTP/1.0's close after each answer would make every client, the
        # gateway's included, connect anew for each request.
        protocol_version = "HTTP/1.1"
        # Each answer goes out as its pieces are written, as a provider's server sends
        # it: on a connection kept open, Nagle's algorithm would hold a small write back
        # until the client acknowledged the last (tens of ms behind a delayed ACK).
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:
            """Keep the test output quiet."""

        def do_POST(self) -> None:
            started = time.perf_counter()
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            status, answer = server.answer(self.path, body)
            if status == 200 and wants_stream(self.path, body):
                events = stream_events(server.wire, answer, body)
                write_stream(self, server.wire, events, server.stream_fault)
                return
            data = json.dumps(answer).encode()
            spent = (time.perf_counter() - started) * 1000
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            # How long this server took to answer (W3C Server-Timing), so that a client
            # timing a proxy in front of it can set the server's own time aside.
            self.send_header("Server-Timing", f"answer;dur={spent:.3f}")
            self.end_headers()
            self.wfile.write(data)

    return Handler


def _error(wire: Wire, message: str) -> dict[str, Any]:
    if wire == "anthropic":
        return {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
    if wire == "gemini":
        return {"error": {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}}
    error = {"message": message, "type": "invalid_request_error", "param": None, "code": None}
    return {"error": error}


def _chat(model: str, turn: Turn, tokens: int, serial: int) -> dict[str, Any]:
    message: dict[str, Any] = {
        "role": "assistant",
        "content": turn.text or None,
        "refusal": None,
        "annotations": [],
    }
    if turn.calls:
        message["tool_calls"] = [
            {
                "id": f"call_{serial}_{i}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
            for i, (name, args) in enumerate(turn.calls)
        ]
    finish = "tool_calls" if turn.calls else "stop"
    return {
        "id": f"chatcmpl-{serial}",
        "object": "chat.completion",
        "created": _CREATED,
        "model": model,
        "system_fingerprint": "fp_fake",
        "service_tier": "default",
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": {
            "prompt_tokens": tokens,
            "completion_tokens": _OUTPUT_TOKENS,
            "total_tokens": tokens + _OUTPUT_TOKENS,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {
                "reasoning_tokens": 0,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 0,
                "rejected_prediction_tokens": 0,
            },
        },
    }


def _responses(model: str, turn: Turn, tokens: int, serial: int) -> dict[str, Any]:
    output: list[dict[str, Any]] = []
    if turn.reasoning:
        output.append(
            {
                "type": "reasoning",
                "id": f"rs_{serial}",
                "summary": [{"type": "summary_text", "text": f"thinking {serial}"}],
                "encrypted_content": f"enc-{serial}",
            }
        )
    if turn.text:
        output.append(
            {
                "type": "message",
                "id": f"msg_{serial}",
                "role": "assistant",
                "status": "completed",
                "content": [
                    {"type": "output_text", "text": turn.text, "annotations": [], "logprobs": []}
                ],
            }
        )
    for i, (name, args) in enumerate(turn.calls):
        output.append(
            {
                "type": "function_call",
                "id": f"fc_{serial}_{i}",
                "call_id": f"call_{serial}_{i}",
                "name": name,
                "arguments": json.dumps(args),
                "status": "completed",
            }
        )
    reasoning_tokens = _OUTPUT_TOKENS if turn.reasoning else 0
    return {
        "id": f"resp_{serial}",
        "object": "response",
        "created_at": _CREATED,
        "completed_at": _CREATED + 1,
        "status": "completed",
        "background": False,
        "billing": {"payer": "developer"},
        "error": None,
        "incomplete_details": None,
        "model": model,
        "output": output,
        "usage": {
            "input_tokens": tokens,
            "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
            "output_tokens": _OUTPUT_TOKENS + reasoning_tokens,
            "output_tokens_details": {"reasoning_tokens": reasoning_tokens},
            "total_tokens": tokens + _OUTPUT_TOKENS + reasoning_tokens,
        },
    }


def _responses_echo(body: dict[str, Any]) -> dict[str, Any]:
    """What a real `Response` repeats of its request: settings, with the API's defaults.

    The real API echoes `instructions` and `tools` on every response; a client that read
    the whole response as history would take the system prompt in again on each call.
    """
    tools = [
        {"description": None, "strict": True, **tool} if tool.get("type") == "function" else tool
        for tool in body.get("tools", [])
    ]
    reasoning = body.get("reasoning") or {}
    return {
        "instructions": body.get("instructions"),
        "tools": tools,
        "tool_choice": body.get("tool_choice", "auto"),
        "parallel_tool_calls": body.get("parallel_tool_calls", True),
        "temperature": body.get("temperature", 1.0),
        "top_p": body.get("top_p", 1.0),
        "top_logprobs": body.get("top_logprobs", 0),
        "max_output_tokens": body.get("max_output_tokens"),
        "max_tool_calls": body.get("max_tool_calls"),
        "previous_response_id": body.get("previous_response_id"),
        "reasoning": {"effort": reasoning.get("effort"), "summary": reasoning.get("summary")},
        "text": body.get("text", {"format": {"type": "text"}, "verbosity": "medium"}),
        "truncation": body.get("truncation", "disabled"),
        "metadata": body.get("metadata", {}),
        "store": body.get("store", True),
        "service_tier": "default",
        "prompt_cache_key": body.get("prompt_cache_key"),
        "prompt_cache_retention": None,
        "safety_identifier": body.get("safety_identifier"),
        "user": body.get("user"),
    }


def _anthropic(model: str, turn: Turn, tokens: int, serial: int) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if turn.reasoning:
        content.append({"type": "thinking", "thinking": f"thinking {serial}", "signature": "sig"})
    if turn.text:
        content.append({"type": "text", "text": turn.text})
    content += [
        {"type": "tool_use", "id": f"toolu_{serial}_{i}", "name": name, "input": args}
        for i, (name, args) in enumerate(turn.calls)
    ]
    return {
        "id": f"msg_{serial}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "tool_use" if turn.calls else "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
            "output_tokens": _OUTPUT_TOKENS,
            "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0},
            "service_tier": "standard",
        },
    }


def _gemini(model: str, turn: Turn, tokens: int, serial: int) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [{"text": turn.text}] if turn.text else []
    parts += [{"functionCall": {"name": name, "args": args}} for name, args in turn.calls]
    thoughts = _OUTPUT_TOKENS if turn.reasoning else 0
    usage: dict[str, Any] = {
        "promptTokenCount": tokens,
        "candidatesTokenCount": _OUTPUT_TOKENS,
        "totalTokenCount": tokens + _OUTPUT_TOKENS + thoughts,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": tokens}],
    }
    if thoughts:  # the API leaves zero counts out (proto3 JSON)
        usage["thoughtsTokenCount"] = thoughts
    return {
        "candidates": [
            {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": usage,
        "modelVersion": model,
        "responseId": f"resp-{serial}",
    }


_WRITERS: dict[Wire, Callable[[str, Turn, int, int], dict[str, Any]]] = {
    "openai": _chat,
    "responses": _responses,
    "anthropic": _anthropic,
    "gemini": _gemini,
}
