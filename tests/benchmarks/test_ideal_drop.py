"""The ideal drop compactor: the bound the page sets prefix stability against."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.compare.ideal_drop import IdealDropContender, bound_line, ideal_drop_spec
from benchmarks.compare.runner import CallRow, Run, replay, setup
from benchmarks.compare.sessions import Session
from benchmarks.compare.stats import summarize
from benchmarks.probes_quick import main as probes_quick
from context_graph import (
    AgentEvent,
    AssistantTurn,
    Compaction,
    SystemPrompt,
    TiktokenCounter,
    ToolCall,
    ToolResult,
    UserTurn,
)

COUNTER = TiktokenCounter()


def _turn(number: int, output_words: int) -> list[AgentEvent]:
    call = f"c{number}"
    return [
        AssistantTurn(content=f"Step {number}.", tool_calls=[ToolCall(id=call, name="bash")]),
        ToolResult(call_id=call, content=" ".join(f"w{number}x{i}" for i in range(output_words))),
    ]


def _session(outputs: list[int]) -> list[AgentEvent]:
    events: list[AgentEvent] = [
        SystemPrompt(content="You fix bugs."),
        UserTurn(content="Fix ticket ABC-123."),
    ]
    for number, words in enumerate(outputs):
        events += _turn(number, words)
    return events


def _requests(
    events: list[AgentEvent], budget: int, low: float
) -> tuple[IdealDropContender, list[list[Any]]]:
    """The requests made after each tool result (where an agent calls the model)."""
    contender = IdealDropContender(budget, COUNTER, low)

    async def run() -> list[list[Any]]:
        sent = []
        for event, item in zip(events, contender.prepare(events), strict=True):
            await contender.feed(item)
            if isinstance(event, ToolResult):
                sent.append(list(await contender.request(budget)))
        return sent

    return contender, anyio.run(run)


def _starts_with(request: list[Any], previous: list[Any]) -> bool:
    return [m.model_dump() for m in request[: len(previous)]] == [m.model_dump() for m in previous]


def test_it_sends_everything_while_it_fits() -> None:
    """Under the budget nothing is dropped: each request extends the one before."""
    _, sent = _requests(_session([20] * 6), 10_000, 0.5)
    assert all(_starts_with(now, before) for before, now in itertools.pairwise(sent))
    assert len(sent[-1]) == 2 + 2 * 6


def test_a_request_that_would_not_fit_drops_the_oldest_down_to_low() -> None:
    """It drops the oldest turns after the task until at or under low x the budget, then
    extends that request again until the next does not fit."""
    budget, low = 600, 0.5
    contender, sent = _requests(_session([60] * 20), budget, low)
    sizes = [contender._count(request) for request in sent]
    assert all(size <= budget for size in sizes)
    dropped = [i for i in range(1, len(sent)) if not _starts_with(sent[i], sent[i - 1])]
    assert dropped, "twenty outputs of 60 words must overflow 600 tokens"
    for i in dropped:
        assert sizes[i] <= low * budget
        # it dropped only because extending the previous request would not fit
        extended = sent[i - 1] + sent[i][-2:]
        assert contender._count(extended) > budget
    for request in sent:
        assert [m.type for m in request[:2]] == ["system", "human"]
        assert request[2].type == "ai"  # a kept window never starts on a tool result


def test_new_content_that_alone_does_not_fit_is_cut_before_it_is_sent() -> None:
    """An output larger than the budget is cut at its end, so the request fits."""
    budget = 400
    contender, sent = _requests(_session([30, 2_000]), budget, 0.5)
    last = sent[-1]
    assert contender._count(last) <= budget
    assert last[-1].content.startswith("w1x0 w1x1")
    assert len(last[-1].content) < len(" ".join(f"w1x{i}" for i in range(2_000)))


def test_a_task_over_the_budget_is_sent_over_it() -> None:
    """The task is never dropped, even when it alone is over the budget."""
    events: list[AgentEvent] = [
        SystemPrompt(content="rule " * 500),
        UserTurn(content="Fix it."),
        *_turn(0, 10),
    ]
    contender, sent = _requests(events, 100, 0.5)
    assert sent[-1][0].content == "rule " * 500
    assert contender._count(sent[-1]) > 100


def test_a_recorded_compaction_starts_the_window_again() -> None:
    """After another tool's compaction the held history is its summary: the window
    restarts there instead of pointing past its end."""
    events = [*_session([40] * 8), Compaction(content="Summary: fixed."), *_turn(99, 10)]
    _, sent = _requests(events, 500, 0.5)
    assert any("Summary: fixed." in str(m.content) for m in sent[-1])
    assert sent[-1][-1].content.startswith("w99x0")


@pytest.mark.parametrize("low", [0.0, -0.5, 1.5, float("nan")])
def test_low_must_be_a_share_of_the_budget(low: float) -> None:
    with pytest.raises(ValueError, match="share of the budget"):
        IdealDropContender(1_000, COUNTER, low)


@settings(max_examples=40, deadline=None)
@given(
    outputs=st.lists(st.integers(min_value=0, max_value=400), min_size=1, max_size=25),
    budget=st.integers(min_value=200, max_value=3_000),
    low=st.floats(min_value=0.1, max_value=1.0),
)
def test_every_request_keeps_the_task_and_its_pairs(
    outputs: list[int], budget: int, low: float
) -> None:
    """Property: every request keeps the task, fits the budget (the task fits it here),
    never holds a tool result without its call, and breaks the prefix only when the
    previous request extended by what came would not fit."""
    events = _session(outputs)
    contender, sent = _requests(events, budget, low)
    for index, request in enumerate(sent):
        assert [m.type for m in request[:2]] == ["system", "human"]
        assert contender._count(request) <= budget
        calls = {c["id"] for m in request if m.type == "ai" for c in m.tool_calls}
        assert all(m.tool_call_id in calls for m in request if m.type == "tool")
        if index and not _starts_with(request, sent[index - 1]):
            assert contender._count(sent[index - 1] + request[-2:]) > budget


def test_the_replay_reports_its_prefix_and_fill() -> None:
    """Through the page's harness: prefix stability is 1 but at its compactions, and fill
    is measured at the calls it sent less than the history."""
    events = _session([80] * 30)  # 330 tokens a turn
    session = Session.made(events, ())
    ctx = setup(session, COUNTER)
    run = replay(ideal_drop_spec(0.5), ctx, "fixed", 4_000, COUNTER, memory=False)
    assert run.error is None
    figures = summarize([run], "ideal drop to 0.5", "fixed")
    misses = sum(not row.prefix_reused for row in run.rows[1:])
    assert 0 < misses < len(run.rows) // 3
    assert figures.fill is not None and 0.5 <= figures.fill <= 1.0
    assert figures.over_budget == 0


def test_probes_quick_adds_a_row_per_share(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """`--ideal-drop` replays the bound beside the policy, a row per share."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You fix bugs."},
        {"role": "user", "content": "Fix ticket ABC-123."},
    ]
    for n in range(12):
        call = {"id": f"c{n}", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
        messages += [
            {"role": "assistant", "content": f"Step {n}.", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{n}", "content": f"out{n} " * 150},
        ]
    (tmp_path / "family").mkdir()
    (tmp_path / "family" / "one.json").write_text(json.dumps({"messages": messages}))
    argv = ["--traces", str(tmp_path), "--budgets", "50%", "--no-peer"]
    assert probes_quick([*argv, "--ideal-drop", "0.5", "0.7"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ")]
    assert [row.split(" | ")[0] for row in rows[1:]] == [
        "| context-graph coding",
        "| ideal drop to 0.5",
        "| ideal drop to 0.7",
    ]
    with pytest.raises(SystemExit):
        probes_quick([*argv, "--ideal-drop", "1.5"])
    assert "share of the budget" in capsys.readouterr().err


def _run(share: str, label: str, fill: float, reused: list[bool]) -> Run:
    """A replay whose every call after the first sent `fill` of a 10,000-token budget, the
    whole of it again when `reused`."""
    run = Run(f"ideal drop to {share}", "fam", "s", label, 10_000)
    tokens = int(fill * 10_000)
    run.rows = [CallRow(0, 10, 10, False, 0, 0, 0, 0, False, 0)]
    run.rows += [
        CallRow(i, 50_000, tokens, False, 0, 0, 0, 0, r, 0, reused_tokens=tokens * r)
        for i, r in enumerate(reused)
    ]
    return run


def test_the_bound_line_gives_each_share_and_the_best_at_the_fill_target() -> None:
    runs = [
        _run("0.5", "50%", 0.70, [True] * 19 + [False]),  # prefix 0.95 at fill 0.70
        _run("0.8", "50%", 0.85, [True] * 17 + [False] * 3),  # 0.85 at 0.85
        _run("0.9", "25%", 0.95, [True] * 20),  # another budget: left out
    ]
    line = bound_line(runs, "50%")
    assert "down to 0.5 / 0.8 of the budget" in line
    assert "prefix stability 0.950 / 0.850 at fill 0.700 / 0.850" in line
    assert "at a fill of 0.8 or more, at most 0.850. The share" in line
    assert "at a fill of 0.9 or more, no share replayed." in bound_line(runs, "50%", 0.9)
    # 19 of 20 requests of 7,000 tokens served from the cache (the first, of 10, not):
    # 133,000 of 140,010; and 17 of 20 of 8,500.
    assert line.endswith("cache would serve (as in the dollars table): 0.950 / 0.850.")
    assert bound_line(runs, "8k") == ""
