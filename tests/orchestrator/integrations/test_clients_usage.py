"""Usage through `manager.wrap(client)`: each call's usage, whole or streamed, sums per session.

The fake API (`benchmarks.provider_server`) reports usage in each provider's real shape,
cached tokens included (OpenAI, Responses and Gemini cache a prefix shared with the
previous request). Every answer it sends is recorded, and the usage a test expects is
read from that answer field by field, in the provider's own terms.
"""

from __future__ import annotations

from typing import Any

import pytest

from context_graph.errors import IngestError
from context_graph.tokens.usage import Usage, UsageTotals
from orchestrator import ContextManager
from orchestrator.policy import Policy
from tests.orchestrator.integrations.test_clients import reads
from tests.orchestrator.integrations.test_clients_streaming import (
    API,
    WIRES,
    answers,
    first_user,
    make_client,
)

TURNS = 4
BUDGET = 50_000
"""Room for every output: nothing is compacted, so each request extends the one before and
the fake reports its prefix cached."""
MODES = ("create", "stream")


def recorded(server: Any) -> list[dict[str, Any]]:
    """The answers the server sends from now on, in order (streamed ones too)."""
    sent: list[dict[str, Any]] = []
    answer = server.answer

    def recording(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        status, out = answer(path, body)
        if status == 200:
            sent.append(out)
        return status, out

    server.answer = recording
    return sent


def usage_said(wire: str, answer: dict[str, Any]) -> Usage:
    """What an answer's usage says, in the provider's terms (the fake writes every count)."""
    if wire == "openai":
        usage = answer["usage"]
        return Usage(
            prompt_tokens=usage["prompt_tokens"],
            completion_tokens=usage["completion_tokens"],
            cached_tokens=usage["prompt_tokens_details"]["cached_tokens"],
        )
    if wire == "responses":
        usage = answer["usage"]
        return Usage(
            prompt_tokens=usage["input_tokens"],
            completion_tokens=usage["output_tokens"],
            cached_tokens=usage["input_tokens_details"]["cached_tokens"],
        )
    if wire == "anthropic":
        usage = answer["usage"]
        read, written = usage["cache_read_input_tokens"], usage["cache_creation_input_tokens"]
        return Usage(
            prompt_tokens=usage["input_tokens"] + read + written,
            completion_tokens=usage["output_tokens"],
            cached_tokens=read,
            cache_creation_tokens=written,
        )
    usage = answer["usageMetadata"]
    return Usage(
        prompt_tokens=usage["promptTokenCount"],
        completion_tokens=usage["candidatesTokenCount"] + usage.get("thoughtsTokenCount", 0),
        cached_tokens=usage.get("cachedContentTokenCount", 0),
    )


def reply_of(wire: str, response: Any) -> tuple[list[Any], list[str]]:
    """What a loop appends of a whole response, and its calls."""
    if wire == "openai":
        message = response.choices[0].message
        return [message], [c.id for c in message.tool_calls or []]
    if wire == "responses":
        items = list(response.output)
        return items, [i.call_id for i in items if i.type == "function_call"]
    if wire == "anthropic":
        calls = [b.id for b in response.content if b.type == "tool_use"]
        return [{"role": "assistant", "content": response.content}], calls
    return [response.candidates[0].content], [c.name for c in response.function_calls or []]


def sync_loop(wire: str, client: Any, mode: str) -> None:
    api, history = API[wire], first_user(wire)
    while True:
        if mode == "stream":
            items, calls = api.reply(list(api.open(client, history)))
        else:
            items, calls = reply_of(wire, api.create(client)(**api.arguments(history)))
        history += items
        if not calls:
            return
        history += answers(wire, calls)


async def async_loop(wire: str, client: Any, mode: str) -> None:
    api, history = API[wire], first_user(wire)
    while True:
        if mode == "stream":
            items, calls = api.reply([e async for e in await api.aopen(client, history)])
        else:
            create = client.aio.models.generate_content if wire == "gemini" else api.create(client)
            items, calls = reply_of(wire, await create(**api.arguments(history)))
        history += items
        if not calls:
            return
        history += answers(wire, calls)


def check_usage(wire: str, manager: ContextManager, sent: list[Any], seen: list[Usage]) -> None:
    """The bus saw each call's usage once, in order, and the stats hold their sums."""
    expected = [usage_said(wire, answer) for answer in sent]
    assert len(expected) == TURNS
    assert seen == expected
    totals = UsageTotals()
    for usage in expected:
        totals = totals.add(usage)
    stats = manager.stats()
    assert stats.usage == totals
    assert stats.cache_hit_rate == totals.cached_tokens / totals.prompt_tokens
    if wire != "anthropic":  # the fake's Anthropic reports no cache (it needs marks)
        assert totals.cached_tokens > 0, "the shared prefix was reported cached"


def watched(wire: str) -> tuple[ContextManager, list[Usage]]:
    manager = ContextManager(format=wire, budget=BUDGET, policy=Policy())
    seen: list[Usage] = []
    manager.bus.connect("usage_recorded", lambda sender, **kw: seen.append(kw["usage"]))
    return manager, seen


class TestWrappedClientUsage:
    @pytest.mark.parametrize("mode", MODES)
    @pytest.mark.parametrize("wire", WIRES)
    def test_sync_calls_sum_their_usage(self, wire: str, mode: str, provider_server: Any) -> None:
        """Each sync call's usage (a stream's when it completes) is recorded once and summed."""
        server = provider_server(wire, respond=reads(TURNS), limit=BUDGET)
        sent = recorded(server)
        manager, seen = watched(wire)
        sync_loop(wire, manager.wrap(make_client(server)), mode)
        check_usage(wire, manager, sent, seen)

    @pytest.mark.parametrize("mode", MODES)
    @pytest.mark.parametrize("wire", WIRES)
    async def test_async_calls_sum_their_usage(
        self, wire: str, mode: str, provider_server: Any
    ) -> None:
        """The async clients record the same usage, whole or streamed."""
        server = provider_server(wire, respond=reads(TURNS), limit=BUDGET)
        sent = recorded(server)
        manager, seen = watched(wire)
        await async_loop(wire, manager.wrap(make_client(server, is_async=True)), mode)
        check_usage(wire, manager, sent, seen)

    def test_a_session_reopened_keeps_its_usage(self, provider_server: Any, tmp_path: Any) -> None:
        """The totals are stored with the session: a reopened manager reports them, and adds."""
        path = tmp_path / "session.db"
        server = provider_server("openai", respond=reads(TURNS), limit=BUDGET)
        sent = recorded(server)
        manager = ContextManager.open(path, format="openai", budget=BUDGET, policy=Policy())
        sync_loop("openai", manager.wrap(make_client(server)), "create")
        before = manager.stats().usage
        manager.close()
        assert before.calls == TURNS and before.cached_tokens > 0
        reopened = ContextManager.open(path, format="openai", budget=BUDGET, policy=Policy())
        try:
            assert reopened.stats().usage == before
            assert reopened.stats().cache_hit_rate == before.cache_hit_rate
            client = reopened.wrap(make_client(server))
            history = [{"role": "user", "content": "and once more"}]
            client.chat.completions.create(**API["openai"].arguments(history))
            assert reopened.stats().usage == before.add(usage_said("openai", sent[-1]))
        finally:
            reopened.close()

    def test_a_malformed_usage_is_refused_and_changes_nothing(self, provider_server: Any) -> None:
        """Cached tokens beyond the prompt: the call raises `IngestError`; nothing is added."""
        server = provider_server("openai")
        answer = server.answer

        def lying(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
            status, out = answer(path, body)
            usage = out["usage"]
            usage["prompt_tokens_details"]["cached_tokens"] = usage["prompt_tokens"] + 1
            return status, out

        server.answer = lying
        manager, seen = watched("openai")
        client = manager.wrap(make_client(server))
        with pytest.raises(IngestError, match=r"usage: the usage does not add up"):
            client.chat.completions.create(**API["openai"].arguments(first_user("openai")))
        assert (seen, manager.stats().usage, manager.stats().cache_hit_rate) == (
            [],
            UsageTotals(),
            None,
        )
        assert [node.kind for node in manager.raw] == ["user"], "the reply was not taken in"
