"""The gateway on Gemini's `generateContent` REST API (gemini-cli's wire format).

The agent here is a loop that sends what gemini-cli 0.61 sends (captured: camelCase
bodies with `systemInstruction` as a user content, `tools` declared with
`parametersJsonSchema`, `generationConfig`, the whole history every call, ids it gives
the model's calls); the upstream is `ProviderServer("gemini")`, which checks every body
and counts its prompt.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from benchmarks.provider_server import ProviderServer
from context_graph.errors import IngestError
from context_graph.formats.gemini.gateway import answer_usage, model_of, sse_usage
from orchestrator.gateway import ANONYMOUS, FORWARDED, OUTCOME, GatewayThread, gateway_for
from orchestrator.policy import get_policy
from tests.orchestrator.gateway.scripted import BUDGET, Steps

ROOT = Path(__file__).resolve().parents[3]
MODEL = "gemini-2.5-flash"
SYSTEM = {"role": "user", "parts": [{"text": "You are a coding agent. Run the steps."}]}
TOOLS = [
    {
        "functionDeclarations": [
            {
                "name": "run",
                "description": "Run one step and return its output.",
                "parametersJsonSchema": {
                    "type": "object",
                    "properties": {"step": {"type": "integer"}},
                },
            }
        ]
    }
]
CONFIG = {"temperature": 1, "thinkingConfig": {"includeThoughts": True, "thinkingBudget": 8192}}

Made = tuple[ProviderServer, str, GatewayThread]


@pytest.fixture(name="gemini_gateway")
def gemini_gateway_fixture(
    provider_server: Callable[..., ProviderServer],
) -> Iterator[Callable[..., Made]]:
    """A factory: a Gemini `ProviderServer` and a gateway serving the Gemini wire before it."""
    running: list[GatewayThread] = []

    def make(*, strict: bool = False, store: Path | None = None, **options: Any) -> Made:
        server = provider_server("gemini", **options)
        gateway = gateway_for(
            server.url,
            budget=BUDGET,
            policy=get_policy("coding"),
            store=store,
            strict=strict,
            wires=("gemini",),
        )
        thread = GatewayThread(gateway)
        url = thread.__enter__()
        running.append(thread)
        return server, url, thread

    yield make
    for thread in reversed(running):
        thread.__exit__(None, None, None)


def output(step: int) -> str:
    return "\n".join(f"step {step} line {n}: value {step * 1000 + n}" for n in range(100))


def body_of(contents: list[Any]) -> dict[str, Any]:
    return {
        "contents": contents,
        "systemInstruction": SYSTEM,
        "tools": TOOLS,
        "generationConfig": CONFIG,
    }


def ask(url: str, session: str, contents: list[Any], *, stream: bool) -> list[dict[str, Any]]:
    """One call; the model's parts (a stream's chunks joined, its text pieces merged)."""
    method = "streamGenerateContent?alt=sse" if stream else "generateContent"
    headers = {"x-goog-api-key": "test-key", "x-context-graph-session": session}
    answer = httpx.post(
        f"{url}/v1beta/models/{MODEL}:{method}",
        json=body_of(contents),
        headers=headers,
        timeout=60,
    )
    assert answer.status_code == 200, answer.text
    if not stream:
        return list(answer.json()["candidates"][0]["content"]["parts"])
    parts: list[dict[str, Any]] = []
    for line in answer.text.splitlines():
        if line.startswith("data:"):
            for part in json.loads(line[5:])["candidates"][0]["content"]["parts"]:
                if parts and set(part) == {"text"} and set(parts[-1]) == {"text"}:
                    parts[-1] = {"text": parts[-1]["text"] + part["text"]}
                else:
                    parts.append(part)
    return parts


def agent(url: str, session: str, *, stream: bool = False) -> list[Any]:
    """A gemini-cli-like loop: the whole history every call, its own ids on the calls."""
    contents: list[Any] = [{"role": "user", "parts": [{"text": "Run the steps."}]}]
    while True:
        parts = ask(url, session, contents, stream=stream)
        calls = [part["functionCall"] for part in parts if "functionCall" in part]
        for k, call in enumerate(calls):
            call.setdefault("id", f"run_{len(contents)}_{k}")
        contents.append({"role": "model", "parts": parts})
        if not calls:
            return contents
        answers = [
            {
                "functionResponse": {
                    "id": call["id"],
                    "name": call["name"],
                    "response": {"output": output(call["args"]["step"])},
                }
            }
            for call in calls
        ]
        contents.append({"role": "user", "parts": answers})


def tool_results(served: GatewayThread, session: str) -> list[int]:
    threads = served.gateway.table_of("gemini").sessions[session]
    return [[n.kind for n in t.manager.raw].count("tool_result") for t in threads]


class TestManaged:
    @pytest.mark.parametrize("stream", [False, True], ids=["generate", "stream"])
    def test_a_long_loop_stays_valid_and_under_budget(
        self, gemini_gateway: Callable[..., Made], stream: bool
    ) -> None:
        server, url, served = gemini_gateway(respond=Steps(14), factor=1.0, limit=BUDGET)
        contents = agent(url, "g-1", stream=stream)
        assert contents[-1]["parts"][-1]["text"] == "All done."
        assert server.refused == []
        assert len(server.requests) == 15 and max(server.prompts) <= BUDGET
        sent = server.requests[-1]
        assert sent["tools"] == TOOLS and sent["systemInstruction"] == SYSTEM
        assert sent["generationConfig"] == CONFIG, "every other field goes as sent"
        assert len(sent["contents"]) < len(contents) - 1, "the history was compacted"
        assert tool_results(served, "g-1") == [14]

    def test_a_conversation_under_the_budget_goes_as_it_came(
        self, gemini_gateway: Callable[..., Made]
    ) -> None:
        """Signatures on calls, on text and on thoughts, and the agent's ids, unchanged."""
        server, url, _ = gemini_gateway(factor=1.0)
        model = [
            {"text": "Planning.", "thought": True, "thoughtSignature": "dGhvdWdodA=="},
            {"text": "I will run step 1.", "thoughtSignature": "dGV4dA=="},
            {
                "functionCall": {"id": "run_1_0", "name": "run", "args": {"step": 1}},
                "thoughtSignature": "Y2FsbA==",
            },
        ]
        answer = {"id": "run_1_0", "name": "run", "response": {"output": "ok"}}
        contents = [
            {"role": "user", "parts": [{"text": "Run the steps."}]},
            {"role": "model", "parts": model},
            {"role": "user", "parts": [{"functionResponse": answer}]},
        ]
        ask(url, "g-1", contents, stream=False)
        assert server.requests[-1] == body_of(contents)

    def test_the_usage_of_the_last_chunk_calibrates(
        self, gemini_gateway: Callable[..., Made]
    ) -> None:
        """The provider counts 1.4 times ours: the streams' usage teaches the engine."""
        server, url, served = gemini_gateway(respond=Steps(14), factor=1.4)
        agent(url, "g-1", stream=True)
        assert max(server.prompts[-5:]) <= BUDGET, server.prompts
        (thread,) = served.gateway.table_of("gemini").sessions["g-1"]
        usage = thread.manager.stats().usage
        # The last stream's usage is read once its last byte went out: maybe not yet.
        assert usage.calls >= 14 and usage.prompt_tokens == sum(server.prompts[: usage.calls])


class TestCountTokens:
    def test_a_held_conversation_is_counted_as_it_would_be_sent(
        self, gemini_gateway: Callable[..., Made]
    ) -> None:
        server, url, _ = gemini_gateway(respond=Steps(12), factor=1.0, limit=BUDGET)
        contents = agent(url, "g-1")
        whole = {"model": f"models/{MODEL}", **body_of(contents[:-1])}
        asked = {"generateContentRequest": whole}
        path = f"/v1beta/models/{MODEL}:countTokens"
        headers = {"x-context-graph-session": "g-1"}
        counted = httpx.post(url + path, json=asked, headers=headers)
        direct = httpx.post(server.url + path, json=asked)
        assert counted.headers[OUTCOME] == "rendered"
        assert counted.json()["totalTokens"] <= BUDGET < direct.json()["totalTokens"]
        assert server.counted[-1]["generateContentRequest"]["model"] == f"models/{MODEL}"

    def test_bare_contents_are_counted_as_sent(self, gemini_gateway: Callable[..., Made]) -> None:
        """gemini-cli counts a new message's parts so: no system prompt, no conversation."""
        server, url, served = gemini_gateway(factor=1.0)
        asked = {"contents": [{"role": "user", "parts": [{"text": output(1)}]}]}
        path = f"/v1beta/models/{MODEL}:countTokens"
        counted = httpx.post(url + path, json=asked)
        assert counted.headers[OUTCOME] == "passthrough"
        assert counted.json() == httpx.post(server.url + path, json=asked).json()
        assert served.gateway.table_of("gemini").sessions == {}


class TestPassingThrough:
    def test_history_kept_upstream_is_passed_through(
        self, gemini_gateway: Callable[..., Made]
    ) -> None:
        server, url, served = gemini_gateway()
        body = {**body_of([{"role": "user", "parts": [{"text": "next"}]}])}
        body["cachedContent"] = "cachedContents/abc"
        answer = httpx.post(f"{url}/v1beta/models/{MODEL}:generateContent", json=body)
        assert answer.headers[OUTCOME] == "passthrough"
        assert server.requests[-1] == body
        assert served.gateway.table_of("gemini").sessions == {}

    def test_a_forwarded_request_is_not_rendered_twice(
        self, gemini_gateway: Callable[..., Made]
    ) -> None:
        server, url, served = gemini_gateway()
        body = body_of([{"role": "user", "parts": [{"text": "hi"}]}])
        answer = httpx.post(
            f"{url}/v1beta/models/{MODEL}:generateContent", json=body, headers={FORWARDED: "1"}
        )
        assert answer.headers[OUTCOME] == "passthrough" and server.requests[-1] == body
        assert served.gateway.table_of("gemini").sessions == {}

    @pytest.mark.parametrize("strict", [False, True])
    def test_a_request_the_engine_cannot_read(
        self, gemini_gateway: Callable[..., Made], strict: bool
    ) -> None:
        """An answer to a call nobody made: passed on with a warning, or refused (--strict)."""
        server, url, _ = gemini_gateway(strict=strict)
        stray = {"functionResponse": {"id": "nobody", "name": "run", "response": {"output": "x"}}}
        body = body_of([{"role": "user", "parts": [stray]}])
        answer = httpx.post(f"{url}/v1beta/models/{MODEL}:generateContent", json=body)
        if strict:
            assert answer.status_code == 400 and answer.headers[OUTCOME] == "refused"
            error = answer.json()["error"]  # the API's own shape, as gemini-cli reads errors
            assert error["code"] == 400 and error["status"] == "INVALID_ARGUMENT"
            assert "(--strict)" in error["message"] and "nobody" in error["message"]
            assert server.requests == server.refused == []
        else:
            assert answer.headers[OUTCOME] == "passthrough"
            assert len(server.requests) + len(server.refused) == 1, "the agent's own request"

    @pytest.mark.parametrize("raw", [b"not json", b"[1, 2]", b'{"contents": "hi"}'])
    def test_a_malformed_body_goes_to_the_upstream_as_sent(
        self, gemini_gateway: Callable[..., Made], raw: bytes
    ) -> None:
        server, url, served = gemini_gateway()
        seen: list[bytes] = []
        original = server.answer

        def answer(path: str, body: Any) -> Any:
            seen.append(json.dumps(body).encode())
            return original(path, body) if isinstance(body, dict) else (400, {})

        server.answer = answer  # type: ignore[method-assign]
        reply = httpx.post(f"{url}/v1beta/models/{MODEL}:generateContent", content=raw)
        assert reply.headers[OUTCOME] == "passthrough"
        if raw != b"not json":  # the fake cannot read that one: it hangs up
            assert json.loads(seen[-1]) == json.loads(raw)
        assert served.gateway.table_of("gemini").sessions.get(ANONYMOUS, []) == []

    def test_other_model_paths_pass_through(self, gemini_gateway: Callable[..., Made]) -> None:
        _, url, served = gemini_gateway()
        answer = httpx.post(f"{url}/v1beta/models/{MODEL}:embedContent", json={"content": {}})
        assert answer.headers[OUTCOME] == "passthrough"
        assert served.gateway.table_of("gemini").sessions == {}


class TestUsage:
    def test_a_stream_says_its_usage_in_its_last_chunk(self) -> None:
        chunks = [
            {"usageMetadata": {"promptTokenCount": 900, "totalTokenCount": 900}},
            {
                "usageMetadata": {
                    "promptTokenCount": 900,
                    "cachedContentTokenCount": 512,
                    "candidatesTokenCount": 7,
                    "totalTokenCount": 907,
                }
            },
        ]
        stream = b"".join(b"data: " + json.dumps(c).encode() + b"\r\n\r\n" for c in chunks)
        usage = sse_usage(b'ta: {"cut' + stream + b'data: {"candidates": [{"cu')
        assert usage is not None
        assert (usage.prompt_tokens, usage.cached_tokens, usage.completion_tokens) == (900, 512, 7)
        assert usage == answer_usage(chunks[-1])
        assert sse_usage(b"data: {}\n\n") is None

    def test_a_malformed_usage_is_a_typed_error_naming_the_field(self) -> None:
        with pytest.raises(IngestError, match="promptTokenCount"):
            answer_usage({"usageMetadata": {"promptTokenCount": -1}})

    @pytest.mark.parametrize(
        ("path", "model"),
        [
            ("/v1beta/models/gemini-2.5-flash:streamGenerateContent", "gemini-2.5-flash"),
            ("/v1/models/gemini-3-pro-preview:countTokens", "gemini-3-pro-preview"),
            ("/v1beta/models", None),
        ],
    )
    def test_the_model_is_read_from_the_path(self, path: str, model: str | None) -> None:
        assert model_of(path) == model


def test_the_command_serves_gemini_and_says_what_to_set(tmp_path: Path) -> None:
    with ProviderServer("gemini", factor=1.0) as upstream:
        command = [
            sys.executable,
            "-m",
            "orchestrator.cli",
            "proxy",
            "--upstream",
            "gemini",
            "--upstream-url",
            upstream.url,
            "--budget",
            "5000",
            "--store",
            str(tmp_path / "sessions"),
            "--port",
            "0",
        ]
        proxy = subprocess.Popen(
            command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        try:
            assert proxy.stdout is not None
            announced = [proxy.stdout.readline() for _ in range(3)]
            url = re.search(r"export GOOGLE_GEMINI_BASE_URL=(\S+)", announced[2])
            assert url is not None, announced
            body = body_of([{"role": "user", "parts": [{"text": "hi"}]}])
            answer = httpx.post(
                f"{url.group(1)}/v1beta/models/{MODEL}:streamGenerateContent?alt=sse",
                json=body,
                headers={"x-context-graph-session": "cli-1"},
            )
        finally:
            proxy.terminate()
            proxy.communicate(timeout=30)
    assert answer.status_code == 200 and answer.headers[OUTCOME] == "rendered"
    assert upstream.requests[-1] == body
    assert (tmp_path / "sessions" / "gemini" / "cli-1" / "thread-0.db").exists()
