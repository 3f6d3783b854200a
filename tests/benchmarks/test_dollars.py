"""Dollars with prompt caching: each provider's rule, and the reused prefix the harness records."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from benchmarks.compare.contenders import (
    COST_GUARD,
    GUARD_PAIR,
    ContenderSpec,
    context_graph_specs,
)
from benchmarks.compare.dollars import (
    PRICES,
    CachePrice,
    call_dollars,
    cost_of,
    dollars_section,
    dollars_table,
    guard_lines,
)
from benchmarks.compare.runner import CallRow, Run, replay, setup
from benchmarks.compare.sessions import Session
from context_graph import (
    AgentEvent,
    AssistantTurn,
    SystemPrompt,
    TiktokenCounter,
    TokenCounter,
    ToolCall,
    ToolResult,
    UserTurn,
)
from context_graph.graph.node_tokens import NodeTokenCache
from context_graph.render import count_payload

ANTHROPIC, OPENAI, GEMINI = PRICES
PER_TOKEN = {p.provider: p.input_per_million / 1e6 for p in PRICES}


def _row(tokens: int | None, reused: int = 0, kept: int = 0, reference: int = 0) -> CallRow:
    return CallRow(
        fed=1,
        raw_tokens=0,
        tokens=tokens,
        over_budget=False,
        our_errors=0,
        sdk_errors=0,
        reference=reference,
        kept=kept,
        prefix_reused=reused > 0,
        time_ns=0,
        reused_tokens=reused,
    )


class TestProviderRules:
    """Each provider's cache rule, priced by hand."""

    def test_anthropic_reads_the_prefix_and_writes_the_rest(self) -> None:
        """A reused prefix is read at 0.1x; the rest is written at 1.25x."""
        dollars, cached = call_dollars(10_000, 8_000, ANTHROPIC)
        assert cached == 8_000
        assert dollars == (8_000 * 0.1 + 2_000 * 1.25) * PER_TOKEN["Anthropic"]

    def test_anthropic_short_prompts_are_plain_input(self) -> None:
        """Under 1,024 tokens nothing is cached or written: plain input."""
        assert call_dollars(900, 800, ANTHROPIC) == (900 * PER_TOKEN["Anthropic"], 0)

    def test_anthropic_first_long_call_writes_everything(self) -> None:
        """A long prompt with nothing reused is written to the cache whole."""
        dollars, cached = call_dollars(5_000, 0, ANTHROPIC)
        assert cached == 0 and dollars == 5_000 * 1.25 * PER_TOKEN["Anthropic"]

    def test_openai_serves_whole_steps_of_128_from_1024(self) -> None:
        """OpenAI serves the reused prefix in steps of 128 tokens, from 1,024 on."""
        dollars, cached = call_dollars(3_000, 1_300, OPENAI)
        assert cached == 1_280
        assert dollars == (1_280 * 0.1 + 1_720) * PER_TOKEN["OpenAI"]
        assert call_dollars(3_000, 1_000, OPENAI)[1] == 0

    def test_gemini_needs_4096_reused_tokens(self) -> None:
        """Gemini's implicit cache serves nothing under 4,096 reused tokens."""
        assert call_dollars(6_000, 4_000, GEMINI) == (6_000 * PER_TOKEN["Gemini"], 0)
        assert call_dollars(6_000, 4_096, GEMINI)[1] == 4_096

    @given(
        tokens=st.integers(0, 500_000),
        share=st.floats(0, 1),
        price=st.sampled_from(PRICES),
    )
    def test_never_more_than_uncached_times_the_write_factor(
        self, tokens: int, share: float, price: CachePrice
    ) -> None:
        """A call costs at least the all-cached price and at most every token written."""
        reused = int(tokens * share)
        dollars, cached = call_dollars(tokens, reused, price)
        per = price.input_per_million / 1e6
        assert 0 <= cached <= reused
        assert tokens * price.read * per - 1e-9 <= dollars <= tokens * price.write * per + 1e-9


class TestBills:
    """Runs are billed call by call; refused calls cost nothing."""

    def test_refused_calls_are_free_and_hit_share_pools_tokens(self) -> None:
        """A refusal adds nothing; the hit share is cached over sent tokens."""
        rows = [_row(2_000), _row(None), _row(3_000, 2_000)]
        cost = cost_of(rows, OPENAI)
        assert cost.sent == 5_000 and cost.cached == 1_920
        assert cost.hit_share == 1_920 / 5_000

    def test_table_has_one_cell_per_provider(self) -> None:
        """The page's table prices each contender under every provider."""
        run = Run(contender="x", family="f", session="s", budget_label="50%", budget=1)
        run.rows = [_row(2_000), _row(3_000, 2_000)]
        table = dollars_table([run], ["x", "absent"], "50%")
        lines = table.splitlines()
        assert lines[2].count("$") == 3 and "(cache 0." in lines[2]
        assert lines[0].endswith("| retention |")
        assert lines[3] == "| absent | - | - | - | - |"


def _events() -> list[AgentEvent]:
    return [
        SystemPrompt(content="You fix bugs. " * 50),
        UserTurn(content="Fix src/app/main.py."),
        AssistantTurn(content="Looking.", tool_calls=[ToolCall(id="c1", name="read")]),
        ToolResult(call_id="c1", content="def main():\n    return 1\n" * 40),
        AssistantTurn(content="Patching.", tool_calls=[ToolCall(id="c2", name="bash")]),
        ToolResult(call_id="c2", content="ok " * 300),
        UserTurn(content="Thanks."),
        AssistantTurn(content="Done."),
    ]


class _Growing:
    """Sends every message fed so far, except that call 3 rewrites the first user turn."""

    def __init__(self) -> None:
        self._messages: list[dict[str, Any]] = []
        self._calls = 0

    def prepare(self, events: Sequence[AgentEvent]) -> list[Any]:
        return list(events)

    async def feed(self, item: Any) -> None:
        self._messages.append({"role": "user", "content": str(item.content)})

    async def tune(self, budget: int) -> None:
        return None

    async def request(self, budget: int) -> Any | None:
        self._calls += 1
        messages = [dict(m) for m in self._messages]
        if self._calls == 3:
            messages[1]["content"] = "rewritten"
        return {"messages": messages}

    def payload(self, native: Any) -> dict[str, Any]:
        return dict(native)


class TestReusedPrefix:
    """The harness records the tokens of the leading messages equal to the last request's."""

    def test_reused_tokens_are_the_shared_leading_messages(self) -> None:
        """Growing requests reuse the whole previous one; a rewrite keeps only what precedes it."""
        counter = TiktokenCounter()
        events = _events()
        session = Session.made(events)

        def make(budget: int, counter: TokenCounter) -> _Growing:
            return _Growing()

        spec = ContenderSpec(name="growing", family="test", make=make, settings="")
        run = replay(spec, setup(session, counter), "50%", 10_000, counter, memory=False)
        cache = NodeTokenCache(counter)

        def tokens(messages: list[dict[str, Any]]) -> int:
            return count_payload({"messages": messages}, "openai", cache) - 3

        fed = sorted(session.calls)
        texts = [{"role": "user", "content": str(e.content)} for e in events]
        assert run.rows[0].reused_tokens == 0
        assert run.rows[1].reused_tokens == tokens(texts[: fed[0]])
        # Call 3 rewrote the second message: only the first is still shared.
        assert run.rows[2].reused_tokens == tokens(texts[:1])
        # Call 4 shares call 3's first message only (its second differs again).
        assert run.rows[3].reused_tokens == tokens(texts[:1])
        assert all(row.reused_tokens <= (row.tokens or 0) for row in run.rows)


class _Tooled(_Growing):
    """Sends every message fed so far with one tool, and a second tool from call 3 on."""

    async def request(self, budget: int) -> Any | None:
        self._calls += 1
        tools = [_tool("read")] + ([_tool("expand")] if self._calls >= 3 else [])
        return {"messages": [dict(m) for m in self._messages], "tools": tools}


def _tool(name: str) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}


class TestToolsLeadThePrefix:
    """Tool definitions are cached first: the same tools are reused, changed ones break all."""

    def test_changed_tools_reuse_nothing(self) -> None:
        counter = TiktokenCounter()
        session = Session.made(_events())
        spec = ContenderSpec(name="tooled", family="test", make=lambda b, c: _Tooled(), settings="")
        run = replay(spec, setup(session, counter), "50%", 10_000, counter, memory=False)
        cache = NodeTokenCache(counter)
        messages = [{"role": "user", "content": str(e.content)} for e in session.events]
        fed = sorted(session.calls)
        with_tools = count_payload(
            {"messages": messages[: fed[0]], "tools": [_tool("read")]}, "openai", cache
        )
        bare = count_payload({"messages": messages[: fed[0]]}, "openai", cache)
        first, second, third, fourth = run.rows[:4]
        # Call 2 reuses the tools and call 1's messages.
        assert second.prefix_reused
        assert second.reused_tokens == with_tools - 3
        assert second.reused_tokens > bare - 3
        # Call 3 sends a second tool: the cache holds nothing of it.
        assert not third.prefix_reused and third.reused_tokens == 0
        # Call 4 has call 3's tools again and reuses them and its messages.
        assert fourth.prefix_reused and fourth.reused_tokens > 0
        assert first.reused_tokens == 0


class TestCostGuard:
    """The page sets the coding profile with the cost guard against it without."""

    def test_the_guard_line_compares_dollars_cache_and_retention(self) -> None:
        """One line per budget: each provider's dollars and cache share, and retention."""
        without, with_guard = GUARD_PAIR
        plain = Run(contender=without, family="f", session="s", budget_label="50%", budget=1)
        plain.rows = [_row(4_000, 0, 1, 2), _row(5_000, 1_000, 2, 2)]
        guarded = Run(contender=with_guard, family="f", session="s", budget_label="50%", budget=1)
        guarded.rows = [_row(4_000, 0, 2, 2), _row(5_000, 4_000, 2, 2)]
        (line,) = guard_lines([plain, guarded], "50%")
        before = cost_of(plain.rows, ANTHROPIC).dollars
        after = cost_of(guarded.rows, ANTHROPIC).dollars
        assert line.startswith(f"The cost guard at 50%: Anthropic ${before:,.2f} -> ${after:,.2f}")
        # The plain run's 1,000 reused tokens are under the 1,024 the cache needs.
        assert f"({after / before - 1:+.1%}, cache 0.000 -> 0.444)" in line
        assert line.endswith("; retention 0.750 -> 1.000.")
        assert guard_lines([plain], "50%") == []

    def test_the_section_shows_both_contenders_on_a_small_session(self) -> None:
        """Replayed on a small session, both rows and the guard's line are on the page."""
        counter = TiktokenCounter()
        session = Session.made(_events())
        specs = {spec.name: spec for spec in context_graph_specs()}
        assert specs[COST_GUARD].ours and "cost_aware=True" in specs[COST_GUARD].settings
        runs = [
            replay(specs[name], setup(session, counter), "50%", 600, counter, memory=False)
            for name in GUARD_PAIR
        ]
        assert all(not run.error and run.rows for run in runs)
        lines = "\n".join(dollars_section(runs, list(GUARD_PAIR), ["50%"])).splitlines()
        rows = [line for line in lines if line.startswith(("| context-graph coding",))]
        assert [row.split(" | ")[0] for row in rows] == [f"| {name}" for name in GUARD_PAIR]
        assert all(row.count("$") == 3 and row.rstrip(" |").split()[-1][0] in "01-" for row in rows)
        assert any(line.startswith("The cost guard at 50%: Anthropic $") for line in lines)
