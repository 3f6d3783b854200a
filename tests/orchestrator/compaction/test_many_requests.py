"""A session of many requests under a large budget keeps compacting, and keeps them.

The extractive brief was capped at its own `max_tokens` (4,000 by default) whatever
room the budget left. Once the user's messages held more than that, the cap dropped the
oldest, the check (nothing the user said may be lost) refused the brief, and no summary
landed again: on a stitched long session every later call ran the whole pipeline for
nothing (0.15-0.3 s) and sent a request cut in its floor instead. With the cap giving
way to the user's words (up to their share of the budget), the summary lands, every
request stays in it, and the requests that follow are below the budget with room to grow.
"""

from __future__ import annotations

import json

import pytest

from context_graph.testing import WordCounter
from context_graph.tokens.counting import TokenCounter
from orchestrator.manager import ContextManager
from processors.summarize.said import lost_sentences, user_sentences

#: Tokens. The policy's summary may take a quarter of it for the user's words, 15,000:
#: more than the extractive brief's own cap of 4,000 (tokens), and than all 72 requests.
_BUDGET = 60_000

_TOPICS = (
    "billing invoices ledger payroll refunds coupons carts orders shipping returns taxes "
    "vendors audits alerts reports exports imports quotas tokens sessions webhooks mailers "
    "queues caches search ranking pricing catalog reviews ratings banners emails sms "
    "locales currencies timezones"
).split()


#: Two requests per topic, each sentence its own: none restates another with a new value.
_REQUESTS = [(shade, topic) for topic in _TOPICS for shade in ("red", "green")]


def _request(shade: str, topic: str) -> str:
    # About 170 words.
    return " ".join(
        f"For the {shade} {topic} work, step {word} needs care: check the {word} path twice."
        for word in (
            "alpha",
            "bravo",
            "charlie",
            "delta",
            "echo",
            "foxtrot",
            "golf",
            "hotel",
            "india",
            "juliet",
            "kilo",
            "lima",
        )
    )


def _thought(topic: str, step: int) -> str:
    # The assistant's reasoning: only a summary can make room for it (no output stage
    # takes an assistant's text).
    return " ".join(f"Considering {topic} case {step}.{i} before the next run." for i in range(50))


def _payload_text(payload: dict[str, object]) -> str:
    return json.dumps(payload, ensure_ascii=False).replace("\\n", "\n")


@pytest.mark.parametrize("counter", [None, WordCounter()], ids=["tiktoken", "words"])
async def test_every_request_is_kept_and_the_budget_is_not_cut_in_its_floor(
    counter: TokenCounter | None,
) -> None:
    """With the manager's own counter too: the brief's room is in the manager's tokens,
    and the brief counted itself with tiktoken, so under another counter it was bound to
    the wrong size, dropped requests and was refused."""
    manager = ContextManager("openai", _BUDGET, counter=counter)
    manager.add_system("You are a careful coding agent. Use the `bash` tool.")
    requests = [_request(shade, topic) for shade, topic in _REQUESTS]
    sizes: list[int] = []
    last = None
    for number, text in enumerate(requests):
        manager.add_user(text)
        for step in range(2):
            last = await manager.render()
            sizes.append(last.tokens)
            call = {"id": f"c{number}_{step}", "name": "bash", "arguments": '{"cmd": "pytest"}'}
            manager.add_assistant(_thought(_REQUESTS[number][1], step), tool_calls=[call])
            manager.add_tool_result(call["id"], "3 passed")
    last = await manager.render()
    words = sum(len(text.split()) for text in requests)
    assert words > 10_000  # more than the brief's own cap: the case this covers
    assert max(sizes) <= _BUDGET
    # Compacted to the policy's target and grown from there: not held at the budget's
    # edge by a cut floor on every call.
    assert min(sizes[len(sizes) // 2 :]) < 0.8 * _BUDGET
    # The first request stays in the floor; every later one is in the request, in its
    # own turn or in the brief.
    said = user_sentences(requests[1:], message_chars=2_000)
    assert lost_sentences(said, _payload_text(last.payload)) == []


async def test_past_their_share_the_oldest_requests_give_way_and_no_call_is_refused() -> None:
    """At a budget whose quarter cannot hold every request, the summary keeps the newest
    whole and leaves the oldest out (expandable). Requiring them all refused every
    summary, and a long tool loop then grew in the floor until every call was refused."""
    budget = 8_000
    manager = ContextManager("openai", budget)
    manager.add_system("You are a careful coding agent. Use the `bash` tool.")
    requests = [_request(shade, topic) for shade, topic in _REQUESTS[:40]]
    sizes: list[int] = []
    for number, text in enumerate(requests):
        manager.add_user(text)
        # The last request starts a long tool loop: only summaries keep it in the budget.
        for step in range(30 if number == len(requests) - 1 else 2):
            sizes.append((await manager.render()).tokens)  # raises if refused
            call = {"id": f"c{number}_{step}", "name": "bash", "arguments": '{"cmd": "pytest"}'}
            manager.add_assistant(_thought(_REQUESTS[number][1], step), tool_calls=[call])
            manager.add_tool_result(call["id"], "3 passed")
    last = await manager.render()
    assert max(sizes) <= budget
    text = _payload_text(last.payload)
    # The newest requests are there, whole; the oldest gave way.
    assert lost_sentences(user_sentences(requests[-3:], message_chars=2_000), text) == []
    assert lost_sentences(user_sentences(requests[1:4], message_chars=2_000), text)
