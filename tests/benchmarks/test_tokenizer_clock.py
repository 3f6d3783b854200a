"""The tokenizer's part of engine time: `TokenizerClock`, the replay's split, the table."""

from __future__ import annotations

import pytest

from benchmarks.compare.page import _engine_time_line
from benchmarks.compare.report import call_times, time_split, time_table
from benchmarks.compare.runner import CallRow, Run
from benchmarks.compare.tokenizer_clock import TokenizerClock
from context_graph import ContextGraph, TiktokenCounter
from context_graph.tokens.counting import default_counter


class TestTokenizerClock:
    def test_adds_up_every_counter_instance_while_open_and_nothing_after(self) -> None:
        shared, other = TiktokenCounter(), default_counter()
        with TokenizerClock() as clock:
            assert shared.count("hello world") == 2
            other.count("a longer text, counted by the process default counter")
            inside = clock.reading()
        shared.count("counted after the clock closed")
        assert clock.calls == 2
        assert inside[1] == len("hello world") + len(
            "a longer text, counted by the process default counter"
        )
        assert inside[0] > 0
        assert clock.reading() == inside

    def test_restores_the_counter_when_the_body_raises(self) -> None:
        real = TiktokenCounter.count
        with pytest.raises(RuntimeError), TokenizerClock():
            raise RuntimeError("boom")
        assert TiktokenCounter.count is real

    def test_counts_are_unchanged_under_the_clock(self) -> None:
        graph, timed = ContextGraph(), ContextGraph()
        text = "Traceback: KeyError at src/app/main.py line 1234\n" * 20
        graph.add_user(text)
        with TokenizerClock() as clock:
            timed.add_user(text)
        assert timed.total_tokens == graph.total_tokens
        assert clock.chars >= len(text)


class TestTimeSplit:
    @staticmethod
    def _run(name: str, label: str, engine: int, tokenize: int, chars: int) -> Run:
        run = Run(name, "fam", "s", label, 1_000)
        run.engine_ns, run.tokenize_ns, run.tokenize_chars = engine, tokenize, chars
        run.floor_ns, run.floor_chars = 100, 1_000
        return run

    def test_splits_engine_time_into_the_tokenizer_and_the_rest(self) -> None:
        runs = [
            self._run("ours", "50%", engine=500, tokenize=200, chars=1_500),
            self._run("ours", "8k", engine=300, tokenize=100, chars=1_000),
            self._run("peer", "50%", engine=150, tokenize=50, chars=1_000),
        ]
        pooled = time_split(runs, "ours")
        assert pooled.engine == pytest.approx(4.0)  # 800 over 200
        assert pooled.tokenizer == pytest.approx(1.5)
        assert pooled.rest == pytest.approx(2.5)
        assert pooled.text == pytest.approx(1.25)  # 2,500 of 2,000 characters
        assert pooled.per_char == pytest.approx(1.2)  # 0.12 ns a char against 0.1
        one = time_split(runs, "ours", "50%")
        assert (one.engine, one.tokenizer, one.text) == (5.0, 2.0, 1.5)
        table = time_table(runs, ["ours", "peer"], ["50%", "8k"])
        assert "| ours | 50% | 5.0 | 2.00 | 1.50 | 1.33 | 3.00 | 0 us / 0 us / 0 us |" in table
        assert "| peer | 50% | 1.5 | 0.50 | 1.00 | 0.50 | 1.00 |" in table
        assert "| peer | 8k |" not in table  # no run there

    def test_call_times_are_the_median_99th_percentile_and_worst(self) -> None:
        run = self._run("ours", "50%", engine=0, tokenize=0, chars=0)
        run.rows = [
            CallRow(i, 10, 5, False, 0, 0, 0, 0, True, ns)
            for i, ns in enumerate([*([1_000] * 150), 7_000, 2_500_000])
        ]
        assert call_times([run], "ours", "50%") == (1_000, 7_000, 2_500_000)
        assert call_times([run], "ours", "8k") == (0, 0, 0)
        assert "| 1 us / 7 us / 2.5 ms |" in time_table([run], ["ours"], ["50%"])

    def test_no_text_tokenized_has_no_cost_per_character(self) -> None:
        split = time_split([self._run("peer", "50%", engine=10, tokenize=0, chars=0)], "peer")
        assert split.per_char is None
        assert split.tokenizer == 0.0


class TestEngineTimeLine:
    @staticmethod
    def _run(engine: int, feed: int, tokenize: int) -> Run:
        run = Run("ours", "fam", "s", "50%", 1_000)
        run.engine_ns, run.feed_ns, run.tokenize_ns, run.tokenize_chars = (
            engine,
            feed,
            tokenize,
            1_200,
        )
        run.floor_ns, run.floor_chars = 100, 1_000
        run.feed_tokenize_ns = 130
        return run

    def test_says_when_the_tokenizer_alone_is_over_the_target(self) -> None:
        line = _engine_time_line([self._run(engine=600, feed=250, tokenize=240)], "ours")
        assert line.startswith(
            "Over every budget: taking the events (ingest) costs 2.5x the floor "
            "(1.3x of it the tokenizer)"
        )
        assert "answering the calls (triggers, compaction, render) 3.5x" in line
        assert "The tokenizer alone takes 2.40x the floor: 1.20x the floor's text" in line
        assert "at 2.00x its cost per character; everything else takes 3.60x." in line
        assert "over the 2x target" in line
        split = time_split([self._run(engine=600, feed=250, tokenize=240)], "ours")
        assert (split.feed, split.answer, split.feed_tokenizer) == (2.5, 3.5, 1.3)

    def test_says_nothing_more_when_the_tokenizer_is_under_it(self) -> None:
        line = _engine_time_line([self._run(engine=600, feed=250, tokenize=150)], "ours")
        assert "over the 2x target" not in line
