"""The long-session benchmark: how it stitches the session, and that it replays (untimed)."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

import pytest

from benchmarks import long_session
from benchmarks.compare.contenders import Contender, ContenderSpec
from benchmarks.compare.sessions import Session, discover
from context_graph import AssistantTurn, Compaction, SystemPrompt, TokenCounter, UserTurn

TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "traces"
needs_traces = pytest.mark.skipif(
    not (TRACES / "swe_agent").is_dir(), reason="shared traces not present"
)


def _session(family: str, label: str, raw: int, *, subagent: bool = False) -> Session:
    events = [
        SystemPrompt(content=f"system of {label}"),
        UserTurn(content=f"task {label}"),
        AssistantTurn(content="looking"),
        Compaction(content="an earlier summary"),
        UserTurn(content="go on"),
        AssistantTurn(content="done"),
    ]
    return Session(
        family=family,
        label=label,
        source=f"{family}/{label}.json",
        events=list(events),
        facts=[],
        subagent=subagent,
        raw_tokens=raw,
        calls=frozenset({2, 5, 6}),
    )


class TestStitching:
    """Tasks are taken in turn from each coding family and repeated to the asked size."""

    def test_tasks_alternate_between_families_largest_first(self) -> None:
        """Each family gives its largest main session before any family gives a second."""
        sessions = [
            _session("swe_agent", "small", 10),
            _session("swe_agent", "large", 90),
            _session("claude_code", "only", 50),
            _session("claude_code", "helper", 500, subagent=True),
            _session("tau_bench_gpt4o_airline", "not coding", 999),
        ]
        picked = long_session.pick_tasks(sessions, 3)
        assert [s.label for s in picked] == ["only", "large", "small"]

    def test_no_coding_session_is_a_clear_exit(self) -> None:
        """Without any coding session the benchmark says where to point it."""
        with pytest.raises(SystemExit, match="--traces"):
            long_session.pick_tasks([_session("tau_bench_gpt4o_airline", "x", 5)], 2)

    def test_rounds_reach_the_size_with_one_system_prompt_and_no_compaction(self) -> None:
        """Rounds repeat until the raw size is reached; only the first system prompt stays."""
        tasks = [_session("swe_agent", "a", 100), _session("claude_code", "b", 50)]
        stitched = long_session.stitch(tasks, 1_000)
        assert stitched.rounds == 7 and stitched.raw_tokens == 1_050
        assert sum(isinstance(e, SystemPrompt) for e in stitched.events) == 1
        assert not any(isinstance(e, Compaction) for e in stitched.events)
        assert len(stitched.events) == 1 + 7 * 2 * 4
        assert stitched.calls[-1] == len(stitched.events)
        assert all(isinstance(stitched.events[i], AssistantTurn) for i in stitched.calls[:-1])


class TestSizes:
    """`--tokens` and `--budget` read 3M, 200k or a plain number."""

    @pytest.mark.parametrize(
        ("text", "value"), [("3M", 3_000_000), ("200k", 200_000), ("1.5m", 1_500_000), ("42", 42)]
    )
    def test_sizes_read(self, text: str, value: int) -> None:
        """Suffixes scale the number."""
        assert long_session._size(text) == value

    @pytest.mark.parametrize("text", ["", "M", "three", "-5k", "0"])
    def test_bad_sizes_are_refused(self, text: str) -> None:
        """A size that does not read, or is not positive, is an argparse error."""
        with pytest.raises(argparse.ArgumentTypeError):
            long_session._size(text)


def _failing(budget: int, counter: TokenCounter) -> Contender:
    raise RuntimeError("this contender cannot start")


@needs_traces
class TestReplay:
    """Both contenders replay a small stitched session; a dead replay is an error."""

    @pytest.fixture(scope="class")
    @classmethod
    def stitched(cls) -> long_session.Stitched:
        sessions = discover(TRACES, only="swe_agent")
        return long_session.stitch(long_session.pick_tasks(sessions, 2), 60_000)

    def test_every_call_is_timed_and_ours_are_valid(self, stitched: long_session.Stitched) -> None:
        """One time per call for each contender; ours are never invalid or over budget."""
        results = [
            asyncio.run(long_session._replay(spec, stitched, 8_000))
            for spec in long_session.contenders()
        ]
        assert [r.name for r in results] == ["context-graph coding", "langchain trim_messages"]
        for result in results:
            assert result.calls == len(stitched.calls)
            assert result.checked >= 1
            assert len(result.quarter_means_ms) == 4
            assert result.p50_ms <= result.p99_ms <= result.max_ms
        ours = results[0]
        assert ours.invalid == 0 and ours.over_budget == 0
        table = long_session.report(stitched, 8_000, [long_session.Replays([r]) for r in results])
        assert "| context-graph coding |" in table and "| total <= 0.5x" in table
        assert "replayed" not in table  # one replay each: no line of repeats

    def test_isolated_replay_reports_back(self, stitched: long_session.Stitched) -> None:
        """A replay in its own process returns the same count of calls."""
        spec = long_session.contenders()[0]
        result = long_session.replay_isolated(spec, stitched, 8_000)
        assert result.calls == len(result.call_ns) == len(stitched.calls)
        assert sum(result.call_ns) / 1e9 == pytest.approx(result.total_s)

    def test_a_replay_that_dies_is_an_error_not_a_hang(
        self, stitched: long_session.Stitched
    ) -> None:
        """A child that fails before reporting raises instead of waiting forever."""
        spec = ContenderSpec(name="broken", family="test", make=_failing, settings="")
        with pytest.raises(RuntimeError, match="broken exited"):
            long_session.replay_isolated(spec, stitched, 8_000)


def _timed(name: str, total_ms: int) -> long_session.Timings:
    """A replay of four calls of equal time (one a quarter), `total_ms` in all."""
    return long_session._timings(name, [total_ms * 250_000] * 4, 0, 0, 0, 0, 0)


class TestRepeats:
    """The contenders replay in turns; each one's figures are its median replay's."""

    def test_median_is_the_middle_total_whatever_the_order(self) -> None:
        """Of three replays the middle total is reported, of two the lower."""
        runs = [_timed("x", 300), _timed("x", 100), _timed("x", 200)]
        assert long_session.Replays(runs).median.total_s == pytest.approx(0.2)
        assert long_session.Replays(runs[:2]).median.total_s == pytest.approx(0.1)

    @pytest.mark.parametrize("names", [[], ["a", "b"]])
    def test_replays_of_nothing_or_of_two_contenders_are_refused(self, names: list[str]) -> None:
        """A `Replays` is one contender's, and holds at least one replay."""
        with pytest.raises(ValueError, match="one contender"):
            long_session.Replays([_timed(n, 1) for n in names])

    def test_contenders_take_turns(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Each repeat replays every contender once, in order, before the next repeat."""
        order: list[str] = []

        def replay(spec: ContenderSpec, stitched: object, budget: int) -> long_session.Timings:
            order.append(spec.name)
            return _timed(spec.name, len(order))

        monkeypatch.setattr(long_session, "replay_isolated", replay)
        specs = [
            ContenderSpec(name=n, family="test", make=_failing, settings="") for n in ("a", "b")
        ]
        stitched = long_session.stitch([_session("swe_agent", "a", 100)], 100)
        replays = long_session.replay_in_turns(specs, stitched, 8_000, 3)
        assert order == ["a", "b", "a", "b", "a", "b"]
        assert [r.name for r in replays] == ["a", "b"]
        assert [[t.total_s for t in r.runs] for r in replays] == [
            pytest.approx([0.001, 0.003, 0.005]),
            pytest.approx([0.002, 0.004, 0.006]),
        ]

    def test_report_gives_every_total_the_medians_and_the_fastest_calls(self) -> None:
        """The first table holds the median replays, every total is listed, and the
        targets judge each call at its fastest (one call a replay here: the fastest)."""
        ours = long_session.Replays([_timed("context-graph coding", ms) for ms in (900, 400, 500)])
        theirs = long_session.Replays(
            [_timed("langchain trim_messages", ms) for ms in (1_000, 1_200, 800)]
        )
        stitched = long_session.stitch([_session("swe_agent", "a", 100)], 100)
        table = long_session.report(stitched, 8_000, [ours, theirs])
        assert "replayed 3 times" in table
        assert "context-graph coding 0.9 s (1.00x), 0.4 s (1.00x), 0.5 s (1.00x)" in table
        median, fastest = table.split("Each call at its fastest")
        assert "| context-graph coding | 0.5 s |" in median
        assert "| langchain trim_messages | 1.0 s |" in median
        assert "| context-graph coding | 0.4 s |" in fastest
        assert "| langchain trim_messages | 0.8 s |" in fastest
        assert "| total <= 0.5x trim_messages | 0.50x | yes |" in fastest

    def test_the_fastest_replay_takes_each_call_at_its_fastest(self) -> None:
        """Call by call, the least time over the replays; the rest is the median's."""
        runs = [
            long_session._timings("x", [5, 1, 9, 4], 7.0, 0, 0, 0, 2),
            long_session._timings("x", [2, 8, 3, 4], 1.0, 0, 0, 0, 2),
            long_session._timings("x", [6, 6, 6, 6], 3.0, 0, 0, 0, 2),
        ]
        fastest = long_session.Replays(runs).fastest
        assert fastest.call_ns == (2, 1, 3, 4)
        assert fastest.total_s == pytest.approx(10e-9)
        assert fastest.quarter_means_ms == pytest.approx([2e-6, 1e-6, 3e-6, 4e-6])
        assert fastest.peak_memory_mb == 7.0  # the median replay's (19 ns, of 17, 19, 24)
        assert long_session.Replays(runs[:1]).fastest is runs[0]

    def test_replays_that_time_different_calls_are_refused(self) -> None:
        """The fastest of each call needs the same calls in every replay."""
        runs = [
            long_session._timings("x", [1, 2], 0, 0, 0, 0, 0),
            long_session._timings("x", [1, 2, 3], 0, 0, 0, 0, 0),
        ]
        with pytest.raises(ValueError, match="same calls"):
            long_session.Replays(runs)

    def test_a_slow_stretch_in_one_replay_does_not_decide_the_growth(self) -> None:
        """The median replay's last quarter is slow (the machine); the calls are not."""
        flat = [1_000_000] * 8
        slow_end = [1_000_000] * 6 + [2_000_000] * 2
        slow_start = [2_000_000] * 2 + [1_000_000] * 6
        runs = [
            long_session._timings("context-graph coding", t, 0, 0, 0, 0, 0)
            for t in (slow_end, slow_start, flat)
        ]
        replays = long_session.Replays(runs)
        assert replays.median.growth == pytest.approx(2.0)
        assert replays.fastest.growth == pytest.approx(1.0)
        stitched = long_session.stitch([_session("swe_agent", "a", 100)], 100)
        table = long_session.report(stitched, 8_000, [replays])
        assert "| last quarter's mean call <= 1.3x the first | 1.00x | yes |" in table
        assert "0.0 s (2.00x), 0.0 s (0.50x), 0.0 s (1.00x)" in table

    def test_the_small_budget_run_is_reported_and_judged(self) -> None:
        """The small budget's median replay has its own table and a growth target."""
        ours = long_session.Replays([_timed("context-graph coding", ms) for ms in (300, 200)])
        growing = [1_000_000] * 6 + [3_000_000] * 2  # the last quarter 3x the first
        small = long_session.Replays(
            [long_session._timings("context-graph coding", growing, 0, 0, 0, 0, 0)]
        )
        stitched = long_session.stitch([_session("swe_agent", "a", 100)], 100)
        table = long_session.report(stitched, 8_000, [ours], (2_000, small))
        assert "At a 2,000-token budget, context-graph alone" in table
        assert "its replays: 0.0 s (3.00x)." in table
        assert "| context-graph coding | 0.0 s | 1.00 -> 1.00 -> 1.00 -> 3.00 |" in table
        assert table.index("| context-graph coding | 0.2 s |") < table.index("At a 2,000")
        verdicts = long_session.verdicts([ours.median], (2_000, small.median))
        assert verdicts[-1] == {
            "target": "at a 2,000-token budget: last quarter's mean call <= 1.3x the first",
            "measured": "3.00x",
            "met": False,
        }
        assert f"| {verdicts[-1]['target']} | 3.00x | no |" in table

    @pytest.mark.parametrize(("text", "value"), [("0", 0), ("16k", 16_000)])
    def test_small_budget_zero_leaves_it_out(self, text: str, value: int) -> None:
        """`--small-budget 0` turns the run off; any other size is read like `--budget`."""
        assert long_session._size_or_zero(text) == value

    def test_no_repeats_is_a_usage_error(self, tmp_path: Path) -> None:
        """`--repeats 0` is refused before anything is read."""
        with pytest.raises(SystemExit) as exit_info:
            long_session.main(["--traces", str(tmp_path), "--repeats", "0"])
        assert exit_info.value.code == 2


class TestWindows:
    """The plot's points: consecutive windows of calls, each at its mean."""

    @pytest.mark.parametrize(("length", "count"), [(4_866, 100), (7, 100), (100, 100), (1, 5)])
    def test_windows_cover_every_call_once_in_order(self, length: int, count: int) -> None:
        """The windows join back into the calls, none is empty, and there are at most `count`."""
        values = [float(i) for i in range(length)]
        windows = long_session._windows(values, count)
        assert [v for w in windows for v in w] == values
        assert all(windows) and len(windows) == min(count, length)
        sizes = [len(w) for w in windows]
        assert max(sizes) - min(sizes) <= 1

    def test_no_calls_no_windows(self) -> None:
        """An empty replay has nothing to draw."""
        assert long_session._windows([], 100) == []

    def test_the_means_are_those_of_the_windows(self) -> None:
        """Each window's mean is reported, in order."""
        timings = long_session._timings("x", [1_000_000] * 50 + [3_000_000] * 50, 0, 0, 0, 0, 0)
        assert timings.window_means_ms[0] == pytest.approx(1.0)
        assert timings.window_means_ms[-1] == pytest.approx(3.0)
        assert len(timings.window_means_ms) == 100


def test_plot_without_matplotlib_is_refused_before_the_replay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--plot` without matplotlib is a usage error naming the install, before any replay."""
    monkeypatch.setattr(long_session, "matplotlib_available", lambda: False)
    out = tmp_path / "p.png"
    with pytest.raises(SystemExit) as exit_info:
        long_session.main(["--traces", str(tmp_path / "absent"), "--plot", str(out)])
    assert exit_info.value.code == 2
    assert "pip install '.[bench]'" in capsys.readouterr().err
    assert not out.exists()


def test_plot_draws_a_png(tmp_path: Path) -> None:
    """With matplotlib, the plot is a PNG file of both contenders' times."""
    pytest.importorskip("matplotlib")
    stitched = long_session.stitch([_session("swe_agent", "a", 100)], 300)
    results = [
        long_session._timings(name, [1_000_000 * (i % 7 + 1) for i in range(40)], 0, 0, 0, 0, 0)
        for name in ("context-graph coding", "langchain trim_messages")
    ]
    out = tmp_path / "img" / "long.png"
    long_session.plot(stitched, 8_000, results, out)
    assert out.read_bytes().startswith(b"\x89PNG")


class TestPageCommand:
    """The page runs the long-session benchmark as its own command, in a fresh interpreter."""

    def test_the_command_output_is_returned(self) -> None:
        """What the command prints is the section's table."""
        from benchmarks.compare.legacy import _command

        out = _command("benchmarks.long_session", ["--help"])
        assert out.startswith("usage:") and "--tokens" in out

    def test_a_failing_command_says_how(self, tmp_path: Path) -> None:
        """A command that exits non-zero raises with its exit code and its last words."""
        from benchmarks.compare.legacy import _command

        with pytest.raises(RuntimeError, match=r"exited with 2: .*--tasks must be at least 1"):
            _command("benchmarks.long_session", ["--traces", str(tmp_path), "--tasks", "0"])
