"""The usage of each answer through the gateway: summed on the session's manager.

The upstream is the strict fake (`ProviderServer`), whose answers are recorded so the
usage a test expects is read from them in the provider's own terms
(`test_clients_usage.usage_said`). The fake's Anthropic reports no cache reads (it does
not model `cache_control`), so those answers are given some here, in a well-formed usage.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import Any

import anthropic
import pytest

from benchmarks.provider_server import ProviderServer
from context_graph.errors import IngestError
from context_graph.formats.anthropic import gateway as anthropic_wire
from context_graph.tokens.usage import Usage, UsageTotals
from orchestrator.gateway import GatewayThread
from tests.orchestrator.gateway.scripted import Steps
from tests.orchestrator.gateway.test_gateway import MODEL, SYSTEM, TOOLS, agent
from tests.orchestrator.gateway.test_gateway_responses import agent as responses_agent
from tests.orchestrator.integrations.test_clients_usage import recorded, usage_said

Serve = Callable[..., tuple[str, GatewayThread]]
STREAMS = pytest.mark.parametrize("stream", [False, True], ids=["create", "stream"])


def with_cache_reads(server: ProviderServer) -> None:
    """Anthropic answers that read part of their input from the cache (10 of every 11)."""
    answer = server.answer

    def cached(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        status, out = answer(path, body)
        usage = out.get("usage")
        if status == 200 and isinstance(usage, dict):
            read = usage["input_tokens"] * 10 // 11
            usage["input_tokens"] -= read
            usage["cache_read_input_tokens"] = read
        return status, out

    server.answer = cached


def settled(thread: Any, calls: int) -> UsageTotals:
    """The thread's usage once `calls` calls are in it.

    The gateway reads an answer's usage after its last byte went to the agent, so the
    agent may go on (and a test read the stats) a moment before it is recorded.
    """
    deadline = time.monotonic() + 5
    while (usage := thread.manager.stats().usage).calls < calls and time.monotonic() < deadline:
        time.sleep(0.01)
    return usage


def summed(usages: list[Usage]) -> UsageTotals:
    totals = UsageTotals()
    for usage in usages:
        totals = totals.add(usage)
    return totals


class TestAnthropic:
    @STREAMS
    def test_each_answer_adds_its_usage(
        self, provider_server: Callable[..., ProviderServer], serve_gateway: Serve, stream: bool
    ) -> None:
        """A message's usage, or a stream's (`message_start` with the last `message_delta`)."""
        server = provider_server("anthropic", respond=Steps(14), factor=1.0)
        with_cache_reads(server)
        sent = recorded(server)
        url, served = serve_gateway(server)
        agent(url, "s-1", stream=stream, turns=4)
        (thread,) = served.gateway.table.sessions["s-1"]
        expected = summed([usage_said("anthropic", answer) for answer in sent])
        assert (settled(thread, 4), expected.calls) == (expected, 4)
        stats = thread.manager.stats()
        assert expected.completion_tokens == 4 * 5, "the stream's final output count"
        assert stats.cache_hit_rate == expected.cached_tokens / expected.prompt_tokens
        assert stats.cache_hit_rate is not None and stats.cache_hit_rate > 0.8

    def test_a_token_count_is_no_call(
        self, provider_server: Callable[..., ProviderServer], serve_gateway: Serve
    ) -> None:
        """A count_tokens answer calibrates the count but adds no usage."""
        server = provider_server("anthropic", respond=Steps(14), factor=1.0)
        url, served = serve_gateway(server)
        messages = agent(url, "s-1", turns=2)
        (thread,) = served.gateway.table.sessions["s-1"]
        before = settled(thread, 2)
        sdk = anthropic.Anthropic(base_url=url, api_key="test-key", max_retries=0)
        asked = {"model": MODEL, "system": SYSTEM, "tools": TOOLS, "messages": messages}
        sdk.messages.count_tokens(**asked, extra_headers={"x-claude-code-session-id": "s-1"})
        assert len(server.counted) == 1, "the count reached the upstream"
        assert thread.manager.stats().usage == before
        assert before.calls == 2

    def test_a_malformed_usage_is_logged_and_left_out(
        self,
        provider_server: Callable[..., ProviderServer],
        serve_gateway: Serve,
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        """The agent gets the answer as sent; a negative count is not added to the session."""
        server = provider_server("anthropic", respond=Steps(14), factor=1.0)
        answer = server.answer

        def broken(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
            status, out = answer(path, body)
            out["usage"]["cache_read_input_tokens"] = -3
            return status, out

        server.answer = broken
        url, served = serve_gateway(server)
        with caplog.at_level(logging.WARNING, logger="context_graph.gateway"):
            messages = agent(url, "s-1", turns=1)
            (thread,) = served.gateway.table.sessions["s-1"]
            deadline = time.monotonic() + 5
            while "usage was left out" not in caplog.text and time.monotonic() < deadline:
                time.sleep(0.01)
        assert [m["role"] for m in messages[:2]] == ["user", "assistant"]
        assert thread.manager.stats().usage == UsageTotals()
        assert "`usage.cache_read_input_tokens` must be a count" in caplog.text


class TestResponses:
    @STREAMS
    def test_each_answer_adds_its_usage(
        self, provider_server: Callable[..., ProviderServer], serve_gateway: Serve, stream: bool
    ) -> None:
        """A response's usage, or a stream's (its `response.completed` event's response)."""
        server = provider_server("responses", respond=Steps(5), factor=1.0)
        sent = recorded(server)
        url, served = serve_gateway(server)
        responses_agent(url, "codex-1", stream=stream)
        (thread,) = served.gateway.table_of("responses").sessions["codex-1"]
        expected = summed([usage_said("responses", answer) for answer in sent])
        assert expected.calls == 6 and expected.cached_tokens > 0
        assert settled(thread, 6) == expected
        assert thread.manager.stats().cache_hit_rate == pytest.approx(
            expected.cached_tokens / expected.prompt_tokens
        )


def sse(*events: dict[str, Any]) -> bytes:
    return b"".join(b"event: x\ndata: " + json.dumps(e).encode() + b"\n\n" for e in events)


class TestStreamUsage:
    def test_message_start_is_updated_by_the_last_message_delta(self) -> None:
        """The input and cache counts of `message_start`, the final output of the last delta."""
        start = {
            "type": "message_start",
            "message": {"usage": {"input_tokens": 10, "cache_read_input_tokens": 90}},
        }
        first = {"type": "message_delta", "usage": {"output_tokens": 3}}
        last = {"type": "message_delta", "usage": {"output_tokens": 40, "input_tokens": None}}
        usage = anthropic_wire.sse_usage(sse(start, first, last))
        assert usage == Usage(prompt_tokens=100, completion_tokens=40, cached_tokens=90)

    def test_no_message_start_no_usage(self) -> None:
        """A stream cut before its first event says nothing of its input."""
        delta = {"type": "message_delta", "usage": {"output_tokens": 40}}
        assert anthropic_wire.sse_usage(sse(delta)) is None

    def test_a_malformed_count_names_its_field(self) -> None:
        """A string count is an `IngestError` naming where it was read."""
        start = {"type": "message_start", "message": {"usage": {"input_tokens": "ten"}}}
        with pytest.raises(IngestError, match=r"message_start\.usage\.input_tokens"):
            anthropic_wire.sse_usage(sse(start))
