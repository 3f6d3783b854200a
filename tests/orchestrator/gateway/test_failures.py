"""An upstream the gateway cannot reach: a 502 each agent's own SDK reads as its API's error."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import anthropic
import httpx
import openai
import pytest
from google import genai
from google.genai import errors as genai_errors

from benchmarks.gateway_script import MODEL
from orchestrator.gateway import OUTCOME, GatewayThread, gateway_for
from orchestrator.policy import get_policy


def _closed_port() -> int:
    """A local port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@pytest.fixture(name="gateway_url")
def gateway_url_fixture() -> Iterator[str]:
    gateway = gateway_for(
        f"http://127.0.0.1:{_closed_port()}",
        budget=30_000,
        policy=get_policy("coding"),
        store=None,
        wires=("anthropic", "responses", "chat", "gemini"),
    )
    with GatewayThread(gateway) as url:
        yield url


def test_anthropic_messages(gateway_url: str) -> None:
    client = anthropic.Anthropic(base_url=gateway_url, api_key="k", max_retries=0)
    with pytest.raises(anthropic.APIStatusError) as raised:
        client.messages.create(
            model=MODEL, max_tokens=10, messages=[{"role": "user", "content": "hi"}]
        )
    error = raised.value
    assert error.status_code == 502
    assert error.body == {
        "type": "error",
        "error": {"type": "api_error", "message": error.body["error"]["message"]},  # type: ignore[index]
    }
    assert "the upstream" in error.body["error"]["message"]  # type: ignore[index]


@pytest.mark.parametrize("method", ["chat", "responses"])
def test_openai_chat_and_responses(gateway_url: str, method: str) -> None:
    client = openai.OpenAI(base_url=f"{gateway_url}/v1", api_key="k", max_retries=0)
    with pytest.raises(openai.APIStatusError) as raised:
        if method == "chat":
            client.chat.completions.create(
                model="gpt-5", messages=[{"role": "user", "content": "hi"}]
            )
        else:
            client.responses.create(model="gpt-5", input="hi")
    error = raised.value
    # The SDK reads `error.message`, `error.type`, `error.code` of OpenAI's shape.
    assert error.status_code == 502 and error.type == "server_error" and error.code is None
    assert "the upstream" in error.message


def test_gemini_generate_content(gateway_url: str) -> None:
    client = genai.Client(
        api_key="k",
        http_options={
            "base_url": gateway_url,
            "api_version": "v1beta",  # gemini-cli's (the SDK says `v1` for a custom URL)
            "retry_options": {"attempts": 1},
        },
    )
    with pytest.raises(genai_errors.ServerError) as raised:
        client.models.generate_content(model="gemini-2.5-flash", contents="hi")
    error = raised.value
    assert error.code == 502 and error.status == "UNAVAILABLE"
    assert error.message is not None and "the upstream" in error.message


def test_the_answer_says_it_was_the_gateway(gateway_url: str) -> None:
    answer = httpx.post(f"{gateway_url}/v1/responses", json={"model": "gpt-5", "input": "hi"})
    assert answer.status_code == 502 and answer.headers[OUTCOME] == "rendered"
    assert set(answer.json()["error"]) == {"message", "type", "param", "code"}
