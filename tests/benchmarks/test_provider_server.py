"""`benchmarks.provider_server` answers with the real APIs' whole response shapes.

Each answer is parsed with the SDK's own response type (`model_validate`, which checks
every required field), no field is one the SDK does not know (but the few the real API
sends untyped), and the top-level fields are those the real API sends, echoed request
settings included: a client that reads a response by every field present (the Responses
API's echoed `instructions`) fails here as it would against the real API.
"""

from __future__ import annotations

import http.client
import json
import threading
from typing import Any, ClassVar

import pytest
from anthropic.types import Message
from google.genai.types import GenerateContentResponse
from openai.types.chat import ChatCompletion
from openai.types.responses import Response
from pydantic import BaseModel

from benchmarks.provider_server import ProviderServer, Wire
from benchmarks.provider_streams import StreamFault
from context_graph.graph.sdk_replies import read_response
from orchestrator import ContextManager
from orchestrator.policy import Policy

SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
TOOLS: dict[Wire, list[Any]] = {
    "openai": [{"type": "function", "function": {"name": "read_file", "parameters": SCHEMA}}],
    "responses": [{"type": "function", "name": "read_file", "parameters": SCHEMA}],
    "anthropic": [{"name": "read_file", "input_schema": SCHEMA}],
    "gemini": [{"functionDeclarations": [{"name": "read_file", "parameters": SCHEMA}]}],
}
PATHS: dict[Wire, str] = {
    "openai": "/v1/chat/completions",
    "responses": "/v1/responses",
    "anthropic": "/v1/messages",
    "gemini": "/v1beta/models/g:generateContent",
}
SDK_TYPES: dict[Wire, type[BaseModel]] = {
    "openai": ChatCompletion,
    "responses": Response,
    "anthropic": Message,
    "gemini": GenerateContentResponse,
}
#: The top-level fields each real API sends (its reference's example responses).
TOP_FIELDS: dict[Wire, set[str]] = {
    "openai": {
        *("id", "object", "created", "model", "system_fingerprint", "service_tier"),
        *("choices", "usage"),
    },
    "responses": {
        *("id", "object", "created_at", "completed_at", "status", "background", "billing"),
        *("error", "incomplete_details", "instructions", "max_output_tokens"),
        *("max_tool_calls", "model", "output", "parallel_tool_calls", "previous_response_id"),
        *("prompt_cache_key", "prompt_cache_retention", "reasoning", "safety_identifier"),
        *("service_tier", "store", "temperature", "text", "tool_choice", "tools"),
        *("top_logprobs", "top_p", "truncation", "usage", "user", "metadata"),
    },
    "anthropic": {
        *("id", "type", "role", "model", "content", "stop_reason", "stop_sequence", "usage"),
    },
    "gemini": {"candidates", "usageMetadata", "modelVersion", "responseId"},
}
#: Fields the real API sends that the SDK's type does not declare (kept as extras).
UNTYPED: dict[Wire, set[str]] = {"responses": {"billing", "store"}}
USAGE_FIELDS: dict[Wire, set[str]] = {
    "openai": {
        *("prompt_tokens", "completion_tokens", "total_tokens"),
        *("prompt_tokens_details", "completion_tokens_details"),
    },
    "responses": {
        *("input_tokens", "input_tokens_details", "output_tokens"),
        *("output_tokens_details", "total_tokens"),
    },
    "anthropic": {
        *("input_tokens", "output_tokens", "cache_creation_input_tokens"),
        *("cache_read_input_tokens", "cache_creation", "server_tool_use", "service_tier"),
    },
    "gemini": {
        *("promptTokenCount", "candidatesTokenCount", "totalTokenCount"),
        *("promptTokensDetails", "thoughtsTokenCount"),
    },
}
USAGE_KEY: dict[Wire, str] = {
    "openai": "usage",
    "responses": "usage",
    "anthropic": "usage",
    "gemini": "usageMetadata",
}
TURNS: list[dict[str, Any]] = [
    {"text": "done"},
    {"calls": [["read_file", {"path": "a.py"}], ["read_file", {"path": "b.py"}]]},
    {"text": "so", "calls": [["read_file", {"path": "a.py"}]], "reasoning": True},
]


def answer(wire: Wire, turn: dict[str, Any], **request: Any) -> dict[str, Any]:
    """The server's answer to a valid rendered request, with `request`'s settings added."""
    manager = ContextManager(format=wire, policy=Policy())
    manager.add_system("Be careful.")
    manager.add_user("read a.py")
    body = {"model": "m", **manager.render_sync(tools=TOOLS[wire]).payload, **request}
    if wire == "anthropic":
        body["max_tokens"] = 100
    with ProviderServer(wire, respond=lambda body: turn) as server:
        status, data = server.answer(PATHS[wire], body)
    assert (status, server.refused) == (200, [])
    return data


def extras(value: Any, path: str = "$") -> list[str]:
    """The fields of a parsed SDK object that its type does not declare, as paths."""
    found: list[str] = []
    if isinstance(value, BaseModel):
        found += [f"{path}.{key}" for key in value.model_extra or {}]
        for name in type(value).model_fields:
            found += extras(getattr(value, name), f"{path}.{name}")
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            found += extras(item, f"{path}[{index}]")
    elif isinstance(value, dict):
        for key, item in value.items():
            found += extras(item, f"{path}.{key}")
    return found


class TestShapes:
    @pytest.mark.parametrize("turn", TURNS, ids=["text", "calls", "reasoning"])
    @pytest.mark.parametrize("wire", list(PATHS))
    def test_the_sdk_type_parses_every_field(self, wire: Wire, turn: dict[str, Any]) -> None:
        """The SDK's response type validates the answer, and knows every field in it."""
        data = answer(wire, turn)
        parsed = SDK_TYPES[wire].model_validate(data)  # genai's types forbid unknown fields
        untyped = {f"$.{key}" for key in UNTYPED.get(wire, set())}
        assert set(extras(parsed)) == untyped

    @pytest.mark.parametrize("wire", list(PATHS))
    def test_the_fields_are_the_real_apis(self, wire: Wire) -> None:
        """The answer's top-level and usage fields are the ones the real API sends."""
        data = answer(wire, TURNS[2])
        usage = data[USAGE_KEY[wire]]
        assert (set(data), set(usage)) == (TOP_FIELDS[wire], USAGE_FIELDS[wire])
        declared = set(SDK_TYPES[wire].model_fields)
        if wire == "gemini":
            declared = {SDK_TYPES[wire].model_fields[name].alias or name for name in declared}
        assert TOP_FIELDS[wire] - declared == UNTYPED.get(wire, set())

    def test_responses_echo_the_request(self) -> None:
        """A `Response` repeats its request's `instructions`, `tools` and settings."""
        data = answer("responses", TURNS[0], temperature=0.2, metadata={"run": "7"})
        assert data["instructions"] == "Be careful."
        assert [t["name"] for t in data["tools"]] == ["read_file"]
        assert (data["temperature"], data["top_p"], data["metadata"]) == (0.2, 1.0, {"run": "7"})
        assert (data["tool_choice"], data["parallel_tool_calls"], data["store"]) == (
            "auto",
            True,
            True,
        )

    def test_usage_details_add_up(self) -> None:
        """Reasoning counts in the output tokens, as the real APIs report it."""
        data = answer("responses", TURNS[2])
        usage = data["usage"]
        assert usage["output_tokens"] > usage["output_tokens_details"]["reasoning_tokens"] > 0
        assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]


class TestRepliesReadByWhatTheyAdd:
    @pytest.mark.parametrize("wire", list(PATHS))
    def test_a_whole_answer_adds_one_assistant_turn(self, wire: Wire) -> None:
        """`add_response` of a whole answer (echoed request included) adds the model's turn only."""
        data = answer(wire, TURNS[2])
        reply = read_response(SDK_TYPES[wire].model_validate(data))
        assert [type(e).__name__ for e in reply.events] == ["AssistantTurn"]
        manager = ContextManager(format=wire, policy=Policy())
        manager.add_user("read a.py")
        manager.add_response(data)
        assert [n.kind for n in manager.raw] == ["user", "assistant", "tool_call"]
        assert reply.prompt_tokens == data[USAGE_KEY[wire]][PROMPT_KEY[wire]]


PROMPT_KEY: dict[Wire, str] = {
    "openai": "prompt_tokens",
    "responses": "input_tokens",
    "anthropic": "input_tokens",
    "gemini": "promptTokenCount",
}


class TestCachedTokens:
    @pytest.mark.parametrize("wire", ["openai", "responses", "gemini"])
    def test_a_shared_prefix_is_reported_cached(self, wire: Wire) -> None:
        """A request that extends the previous one reports its shared prefix as cached."""
        manager = ContextManager(format=wire, policy=Policy())
        manager.add_system("Be careful. " + " ".join(f"rule {i}" for i in range(900)))
        manager.add_user("read a.py")
        first = {"model": "m", **manager.render_sync().payload}
        manager.add_response(answer(wire, {"text": "ok"}))
        manager.add_user("and b.py")
        second = {"model": "m", **manager.render_sync().payload}
        with ProviderServer(wire) as server:
            answers = [server.answer(PATHS[wire], body)[1] for body in (first, second)]
        SDK_TYPES[wire].model_validate(answers[1])  # the cache's fields are the SDK's
        usages = [data[USAGE_KEY[wire]] for data in answers]
        cached = [_cached(wire, usage) for usage in usages]
        prompt = usages[1][PROMPT_KEY[wire]]
        assert cached[0] == 0
        assert 1024 <= cached[1] < prompt
        assert cached[1] % 128 == 0


def _cached(wire: Wire, usage: dict[str, Any]) -> int:
    if wire == "openai":
        return int(usage["prompt_tokens_details"]["cached_tokens"])
    if wire == "responses":
        return int(usage["input_tokens_details"]["cached_tokens"])
    return int(usage.get("cachedContentTokenCount", 0))


class TestGeminiCountTokens:
    """`:countTokens` answers as the API does: a count of what it was given, no model call."""

    PATH = "/v1beta/models/gemini-2.5-flash:countTokens"
    CONTENTS: ClassVar[list[Any]] = [{"role": "user", "parts": [{"text": "read a.py " * 50}]}]

    def test_bare_contents_and_a_whole_request_are_counted(self) -> None:
        whole = {
            "model": "models/gemini-2.5-flash",
            "systemInstruction": {"parts": [{"text": "Be careful."}]},
            "contents": self.CONTENTS,
        }
        with ProviderServer("gemini", factor=1.0) as server:
            bare = server.answer(self.PATH, {"contents": self.CONTENTS})
            counted = server.answer(self.PATH, {"generateContentRequest": whole})
        assert bare[0] == counted[0] == 200
        assert 0 < bare[1]["totalTokens"] < counted[1]["totalTokens"]
        assert server.requests == [] and len(server.counted) == 2

    def test_a_whole_request_without_its_model_is_refused(self) -> None:
        with ProviderServer("gemini") as server:
            status, answer = server.answer(
                self.PATH, {"generateContentRequest": {"contents": self.CONTENTS}}
            )
        assert status == 400 and "generateContentRequest.model" in answer["error"]["message"]


class TestConnections:
    """A connection stays open from request to request, as the providers' APIs keep it."""

    @staticmethod
    def _post(connection: http.client.HTTPConnection, body: dict[str, Any]) -> Any:
        connection.request(
            "POST", PATHS["anthropic"], json.dumps(body), {"Content-Type": "application/json"}
        )
        response = connection.getresponse()
        response.read()
        return response

    def _body(self, *, stream: bool) -> dict[str, Any]:
        manager = ContextManager(format="anthropic", policy=Policy())
        manager.add_user("read a.py")
        payload = manager.render_sync(tools=TOOLS["anthropic"]).payload
        return {"model": "m", "max_tokens": 100, "stream": stream, **payload}

    @pytest.mark.parametrize("stream", [False, True])
    def test_answers_keep_the_connection_open(self, stream: bool) -> None:
        with ProviderServer("anthropic", respond=lambda body: {"text": "done"}) as server:
            connection = http.client.HTTPConnection(server.url.removeprefix("http://"))
            try:
                first = self._post(connection, self._body(stream=stream))
                opened = connection.sock
                second = self._post(connection, self._body(stream=stream))
                assert connection.sock is opened is not None, "a second connection was made"
            finally:
                connection.close()
        assert (first.status, second.status) == (200, 200)
        assert first.version == 11 and not first.will_close and not second.will_close

    def test_a_dropped_stream_closes_it(self) -> None:
        with ProviderServer("anthropic", respond=lambda body: {"text": "done"}) as server:
            server.stream_fault = StreamFault(after=2, kind="drop")
            connection = http.client.HTTPConnection(server.url.removeprefix("http://"))
            try:
                connection.request(
                    "POST",
                    PATHS["anthropic"],
                    json.dumps(self._body(stream=True)),
                    {"Content-Type": "application/json"},
                )
                response = connection.getresponse()
                assert response.will_close
                with pytest.raises(http.client.IncompleteRead):
                    response.read()
            finally:
                connection.close()


class TestTimedFairly:
    """What `benchmarks.proxy` relies on to time a gateway in front of this server."""

    def test_a_json_answer_says_how_long_the_server_took(self) -> None:
        with ProviderServer("anthropic") as server:
            connection = http.client.HTTPConnection(server.url.removeprefix("http://"))
            try:
                body = TestConnections()._body(stream=False)
                response = TestConnections._post(connection, body)
            finally:
                connection.close()
        timing = response.getheader("Server-Timing")
        assert timing is not None and timing.startswith("answer;dur=")
        assert float(timing.removeprefix("answer;dur=")) > 0

    def test_every_connection_is_counted_on_one_thread(self) -> None:
        """The tokenizer is slower on every thread but the first that counted: each
        connection's thread hands its counting to the one counting thread."""
        counted_on: list[int] = []
        with ProviderServer("anthropic") as server:
            count = server._count

            def spy(body: dict[str, Any]) -> int:
                counted_on.append(threading.get_ident())
                return count(body)

            server._count = spy  # type: ignore[method-assign]
            body = TestConnections()._body(stream=False)
            for _ in range(3):  # a connection, so a serving thread, of its own each
                connection = http.client.HTTPConnection(server.url.removeprefix("http://"))
                try:
                    assert TestConnections._post(connection, body).status == 200
                finally:
                    connection.close()
        assert len(counted_on) == 3 and len(set(counted_on)) == 1
        assert counted_on[0] != threading.get_ident()

    @pytest.mark.parametrize("keep", [True, False])
    def test_a_server_that_keeps_nothing_still_counts(self, keep: bool) -> None:
        body = TestConnections()._body(stream=False)
        with ProviderServer("anthropic", keep=keep) as server:
            assert server.answer(PATHS["anthropic"], body)[0] == 200
            assert server.answer("/v1/messages/count_tokens", body)[0] == 200
        assert len(server.prompts) == 1 and server.prompts[0] > 0
        assert (server.requests, server.counted) == (([body], [body]) if keep else ([], []))

    def test_a_stopped_server_still_counts(self) -> None:
        """Tests count what a server received after its block ends."""
        body = TestConnections()._body(stream=False)
        with ProviderServer("anthropic") as server:
            assert server.answer(PATHS["anthropic"], body)[0] == 200
        assert server.count(body) == server.prompts[0] > 0
