"""An interrupted stream through `manager.wrap(client)` ingests nothing; the next call works.

Interruptions: the caller stops reading or closes the stream, the connection drops, the
API's error event arrives, or the body ends without the closing events (the fake's
`StreamFault`). Each time the record holds no half-made reply, and the caller's retry
with the same conversation sends the very request the interrupted call sent.
"""

from __future__ import annotations

import contextlib
from typing import Any

import anthropic
import httpx2
import openai
import pytest
from google.genai import errors as genai_errors
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks.provider_streams import StreamFault
from orchestrator import ContextManager
from orchestrator.policy import Policy
from tests.orchestrator.integrations.test_clients_streaming import (
    API,
    WIRES,
    first_user,
    kinds,
    make_client,
)

SPEC = {"text": "a reply in several pieces", "calls": [["read_file", {"path": "a.py"}]]}

# What the SDK raises, per wire, when the connection drops or the error event arrives
# (`None`: the SDK hands the error event on and ends the stream).
DROPPED: tuple[type[BaseException], ...] = (
    openai.APIConnectionError,
    anthropic.APIConnectionError,  # anthropic 2.17 wraps a drop mid-stream in it
    httpx2.TransportError,
)
try:  # google-genai's async client reads through aiohttp when it is installed
    import aiohttp

    DROPPED += (aiohttp.ClientError,)
except ImportError:  # pragma: no cover - aiohttp comes with LiteLLM in the dev environment
    pass
ERRORS: dict[str, type[BaseException] | None] = {
    "openai": openai.APIError,
    "responses": None,
    "anthropic": anthropic.APIStatusError,
    "gemini": genai_errors.APIError,
}
FAILURES = (*DROPPED, openai.APIError, anthropic.APIStatusError, genai_errors.APIError)
FAULTS = [(wire, kind) for wire in WIRES for kind in ("drop", "error", "end")]


def expected_error(
    wire: str, kind: str
) -> type[BaseException] | tuple[type[BaseException], ...] | None:
    """What reading a stream with this fault raises (`None`: nothing)."""
    return {"drop": DROPPED, "error": ERRORS[wire], "end": None}[kind]


def setup(provider_server: Any, wire: str, *, is_async: bool = False) -> tuple[Any, Any, Any]:
    """A server answering text and a call, its manager, and the wrapped client."""
    server = provider_server(wire, respond=lambda body: SPEC)
    manager = ContextManager(format=wire, policy=Policy())
    return server, manager, manager.wrap(make_client(server, is_async=is_async))


async def _closed(client: Any) -> None:
    """Close an async SDK client's connections inside the test's own loop.

    Left open, a cut stream's connection is collected later, in whatever test runs then,
    as an unclosed-socket warning that fails that test.
    """
    aio = getattr(client, "aio", None)  # google-genai keeps its async client there
    closer = getattr(aio if aio is not None else client, "aclose", None) or getattr(
        client, "close", None
    )
    if closer is not None:
        await closer()


def read_all(stream: Any, error: Any) -> list[Any]:
    """The events of a stream, and the SDK's error if one is expected."""
    if error is None:
        return list(stream)
    with pytest.raises(error):
        list(stream)
    return []


def retried_cleanly(server: Any, manager: ContextManager, client: Any, wire: str) -> None:
    """The same conversation again: the interrupted call's request, then a whole reply."""
    before = kinds(manager)
    assert "assistant" not in before and "tool_call" not in before
    list(API[wire].open(client, first_user(wire)))
    assert server.requests[-1] == server.requests[0]
    assert kinds(manager) == [*before, "assistant", "tool_call"]


class TestInterrupted:
    @pytest.mark.parametrize(("wire", "kind"), FAULTS)
    def test_a_cut_stream_ingests_nothing(self, wire: str, kind: str, provider_server: Any) -> None:
        """A dropped connection, an error event or a body cut short leaves no half reply."""
        server, manager, client = setup(provider_server, wire)
        server.stream_fault = StreamFault(3, kind)  # type: ignore[arg-type]
        read_all(API[wire].open(client, first_user(wire)), expected_error(wire, kind))
        server.stream_fault = None
        retried_cleanly(server, manager, client, wire)

    @pytest.mark.parametrize(("wire", "kind"), FAULTS)
    async def test_a_cut_async_stream_ingests_nothing(
        self, wire: str, kind: str, provider_server: Any
    ) -> None:
        """The async clients: a cut stream leaves no half reply; the retry is the same request."""
        server, manager, client = setup(provider_server, wire, is_async=True)
        try:
            server.stream_fault = StreamFault(3, kind)  # type: ignore[arg-type]
            stream = await API[wire].aopen(client, first_user(wire))
            error = expected_error(wire, kind)
            if error is None:
                [e async for e in stream]
            else:
                with pytest.raises(error):
                    [e async for e in stream]
            server.stream_fault = None
            before = kinds(manager)
            assert "assistant" not in before
            [e async for e in await API[wire].aopen(client, first_user(wire))]
            assert server.requests[-1] == server.requests[0]
            assert kinds(manager) == [*before, "assistant", "tool_call"]
        finally:
            await _closed(client)

    @pytest.mark.parametrize("wire", WIRES)
    def test_a_caller_that_stops_reading_ingests_nothing(
        self, wire: str, provider_server: Any
    ) -> None:
        """Breaking out of the loop after a few events (and closing) leaves no half reply."""
        server, manager, client = setup(provider_server, wire)
        stream = API[wire].open(client, first_user(wire))
        for count, _event in enumerate(stream):
            if count == 2:
                break
        stream.close()
        retried_cleanly(server, manager, client, wire)

    @pytest.mark.parametrize("wire", WIRES)
    async def test_an_async_caller_that_stops_reading_ingests_nothing(
        self, wire: str, provider_server: Any
    ) -> None:
        """`async for ...: break`, then closing: nothing ingested, the next call as before."""
        server, manager, client = setup(provider_server, wire, is_async=True)
        stream = await API[wire].aopen(client, first_user(wire))
        async for _event in stream:
            break
        await (stream.aclose() if wire == "gemini" else stream.close())
        assert "assistant" not in kinds(manager)
        [e async for e in await API[wire].aopen(client, first_user(wire))]
        assert server.requests[-1] == server.requests[0]
        assert kinds(manager).count("assistant") == 1

    @pytest.mark.parametrize("wire", ["openai", "responses", "anthropic"])
    def test_a_helper_left_early_ingests_nothing(self, wire: str, provider_server: Any) -> None:
        """Leaving a `with client.….stream(...)` block after one event leaves no half reply."""
        from tests.orchestrator.integrations.test_clients_streaming import helper

        server, manager, client = setup(provider_server, wire)
        with helper(client, wire)(**API[wire].arguments(first_user(wire))) as stream:
            next(iter(stream))
        retried_cleanly(server, manager, client, wire)


class TestStale:
    @pytest.mark.parametrize("wire", WIRES)
    def test_a_stream_finished_after_a_later_call_is_not_ingested(
        self, wire: str, provider_server: Any
    ) -> None:
        """A reply read to its end after the next call took the conversation in stays out."""
        server, manager, client = setup(provider_server, wire)
        late = API[wire].open(client, first_user(wire))
        next(iter(late))
        list(API[wire].open(client, first_user(wire)))  # the caller retried meanwhile
        list(late)
        assert kinds(manager).count("assistant") == 1
        assert len(server.requests) == 2


class TestAnyCut:
    @settings(
        max_examples=40,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture],
    )
    @given(
        wire=st.sampled_from(WIRES),
        after=st.integers(0, 30),
        kind=st.sampled_from(["drop", "error", "end"]),
    )
    def test_the_record_holds_the_reply_whole_or_not_at_all(
        self, wire: str, after: int, kind: str, provider_server: Any
    ) -> None:
        """Wherever a stream is cut, its reply is in the record whole or not at all."""
        server, manager, client = setup(provider_server, wire)
        server.stream_fault = StreamFault(after, kind)  # type: ignore[arg-type]
        with contextlib.suppress(*FAILURES):
            list(API[wire].open(client, first_user(wire)))
        server.stream_fault = None
        replies = [k for k in kinds(manager) if k not in ("system", "user")]
        assert replies in ([], ["assistant", "tool_call"])
        list(API[wire].open(client, first_user(wire)))  # the manager takes the next call
        assert server.refused == []
        assert [k for k in kinds(manager) if k not in ("system", "user")] == [
            *replies,
            "assistant",
            "tool_call",
        ]
