"""`python -m benchmarks.proxy --quick`: its tables, and the task's invariants (untimed).

The overhead figures are timings and are not asserted; what is asserted is that every
timed request went through the gateway rendered, and that the scripted task through the
gateway stays valid and under the budget and keeps its prefix between compactions.
"""

from __future__ import annotations

import json
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchmarks import proxy
from benchmarks.gateway_script import BUDGET, MODEL, SYSTEM, TOOLS
from benchmarks.provider_server import ProviderServer


@pytest.fixture(name="figures", scope="module")
def figures_fixture(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, str]:  # type: ignore[type-arg]
    out = tmp_path_factory.mktemp("proxy") / "proxy.json"
    section = _run(["--quick", "--json", str(out)])
    return json.loads(out.read_text(encoding="utf-8")), section


def _run(argv: list[str]) -> str:
    import contextlib
    import io

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert proxy.main(argv) == 0
    return printed.getvalue()


class TestQuick:
    def test_overhead_is_measured_on_both_wires(self, figures: tuple[dict, str]) -> None:  # type: ignore[type-arg]
        data, section = figures
        runs = data["overhead"]
        assert [run["wire"] for run in runs] == ["anthropic", "responses"]
        for run in runs:
            assert run["tokens"] >= run["size"], "the history holds the size asked"
            assert len(run["steady"]) == len(run["steady_direct"]) == 10
            assert len(run["first"]) == len(run["first_direct"]) == 3
        assert section.count("| steady state (one new turn) |") == 2
        assert section.count("| first of a session |") == 2

    @pytest.mark.skipif(sys.platform != "linux", reason="read from /proc")
    def test_the_gateways_own_cpu_time_is_measured(self, figures: tuple[dict, str]) -> None:  # type: ignore[type-arg]
        """Each steady request's gateway CPU time is read, and the section shows its table."""
        data, section = figures
        for run in data["overhead"]:
            assert len(run["steady_cpu"]) == 10
            assert all(spent > 0 for spent in run["steady_cpu"])
        assert "| wire | history (tokens) | requests | gateway CPU p50 |" in section

    def test_the_task_through_the_gateway_is_valid_under_budget(
        self,
        figures: tuple[dict, str],  # type: ignore[type-arg]
    ) -> None:
        data, section = figures
        direct, gated = data["tasks"]
        assert direct["budget"] is None and gated["budget"] == BUDGET
        assert direct["invalid"] == gated["invalid"] == 0
        assert direct["requests"] == gated["requests"] == 15
        assert max(gated["prompts"]) <= BUDGET < max(direct["prompts"])
        assert gated["billed"] < direct["billed"]
        assert direct["compactions"] == 0
        assert gated["compactions"] >= 1
        assert gated["reuse_between_compactions"] >= 0.9
        assert "| through the gateway, budget 6,000 | 15 | 0 |" in section


def _body(messages: list[dict], system: str = SYSTEM) -> dict:  # type: ignore[type-arg]
    return {
        "model": MODEL,
        "max_tokens": 64,
        "system": system,
        "tools": TOOLS,
        "messages": messages,
    }


class TestReusedPrefix:
    def test_a_moved_cache_mark_still_reuses_the_whole_previous_request(self) -> None:
        first = [{"role": "user", "content": [{"type": "text", "text": "Run the steps."}]}]
        marked = [
            {
                "role": "user",
                "content": [
                    {
                        "type": "text",
                        "text": "Run the steps.",
                        "cache_control": {"type": "ephemeral"},
                    }
                ],
            }
        ]
        turn = proxy.CASES["anthropic"].turn(0, "out")
        with ProviderServer("anthropic", factor=1.0) as server:
            before, after = _body(marked), _body(first + turn)
            assert proxy.reused_prefix(server, after, before) == server.count(_body(first))

    def test_another_system_prompt_reuses_nothing(self) -> None:
        messages = [{"role": "user", "content": "Run the steps."}]
        with ProviderServer("anthropic", factor=1.0) as server:
            assert proxy.reused_prefix(server, _body(messages, "other"), _body(messages)) == 0

    def test_a_changed_first_message_reuses_nothing(self) -> None:
        before = _body([{"role": "user", "content": "Run the steps."}])
        after = _body([{"role": "user", "content": "Run other steps."}])
        with ProviderServer("anthropic", factor=1.0) as server:
            assert proxy.reused_prefix(server, after, before) == 0


@given(st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=50), st.sampled_from([0.5, 0.9, 0.99]))
def test_a_percentile_lies_within_the_values(values: list[float], share: float) -> None:
    found = proxy.percentile(values, share)
    assert min(values) <= found <= max(values)
    assert proxy.percentile(values, 0.5) <= proxy.percentile(values, 0.99)


def test_the_history_holds_the_size_asked() -> None:
    case = proxy.CASES["responses"]
    with ProviderServer("responses") as server:
        items = proxy.history(case, server, 5_000)
        assert server.count(case.body(items)) >= 5_000
        assert server.count(case.body(items[:-2])) < 5_000, "one turn less is under it"


def test_a_percentile_interpolates_between_ranks() -> None:
    assert proxy.percentile([4.0, 1.0, 3.0, 2.0], 0.5) == 2.5
    assert proxy.percentile([float(n) for n in range(1, 101)], 0.99) == pytest.approx(99.01)
    assert proxy.percentile([7.0], 0.99) == 7.0


def test_the_page_section_runs_the_benchmark_and_says_how() -> None:
    from benchmarks.compare.proxy_section import proxy_section

    ran: list[tuple[str, list[str]]] = []

    def run(module: str, argv: list[str]) -> str:
        ran.append((module, argv))
        return "| the tables |"

    section = proxy_section(lambda message: None, run)
    assert ran == [("benchmarks.proxy", [])]
    assert section.startswith("## The gateway")
    assert "python -m benchmarks.proxy " in section
    assert section.endswith("| the tables |")


@given(
    st.floats(0, 1e4, allow_nan=False),
    st.lists(st.sampled_from(["db;dur=3", "cache;desc=hit", "total;dur=9.5"]), max_size=3),
)
def test_the_upstreams_own_time_is_read_among_other_metrics(
    upstream: float, others: list[str]
) -> None:
    header = ", ".join([*others, f"answer;dur={upstream:.3f}"])
    assert proxy.upstream_ms(header) == pytest.approx(upstream, abs=1e-3)


@pytest.mark.parametrize("header", ["", "total;dur=9", "answer", "answer;desc=x"])
def test_an_answer_without_the_upstreams_time_is_an_error(header: str) -> None:
    with pytest.raises(RuntimeError, match="Server-Timing"):
        proxy.upstream_ms(header)


@given(st.lists(st.tuples(st.floats(0, 1e3), st.floats(0, 1e3)), min_size=1, max_size=20))
def test_the_overhead_sets_the_upstreams_own_time_aside(rows: list[tuple[float, float]]) -> None:
    """Whatever the upstream takes on each side, the overhead is the rest of the trip."""
    direct = [proxy.Timing(wall=spare + answer, upstream=answer) for spare, answer in rows]
    through = [
        proxy.Timing(wall=spare + 5 + answer * 3, upstream=answer * 3) for spare, answer in rows
    ]
    run = proxy.Overhead("anthropic", 1, 1, steady_direct=direct, steady_proxy=through)
    assert run.steady == pytest.approx([5.0] * len(rows), abs=1e-6)


@pytest.mark.parametrize("wire", ["chat", "claude", ""])
def test_a_fake_upstream_of_no_wire_is_refused(
    wire: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--serve-upstream` takes the fake's wires only: `chat` (the gateway's name for the
    Chat Completions wire) served before, and failed every request it was sent."""
    with pytest.raises(SystemExit) as info:
        proxy.main(["--serve-upstream", wire])
    assert info.value.code == 2
    assert "invalid choice" in capsys.readouterr().err
