"""`InputHistory`: one JSON line per input, whole under many writers, trimmed, repaired."""

from __future__ import annotations

import json
import multiprocessing
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph.errors import ConfigurationError
from orchestrator import ContextManager
from orchestrator.persistence.input_history import TRIM_TO, InputHistory
from orchestrator.policy import Policy


def _writer(path: str, worker: int, count: int, max_bytes: int) -> None:
    history = InputHistory(path, max_bytes=max_bytes)
    for n in range(count):
        history.append(f"worker {worker} input {n} " + "x" * (n % 7) * 40, session_id=f"s{worker}")


class TestAppend:
    def test_an_input_is_one_json_line(self, tmp_path: Path) -> None:
        """Each append adds one line holding the session, the time and the text."""
        history = InputHistory(tmp_path / "h" / "inputs.jsonl", clock=lambda: 12.5)
        history.append("Fix the test\nthen stop", session_id="s1")
        history.append("Skip the invoices table", session_id="s2")
        lines = (tmp_path / "h" / "inputs.jsonl").read_text().splitlines()
        assert [json.loads(line) for line in lines] == [
            {"session_id": "s1", "ts": 12.5, "text": "Fix the test\nthen stop"},
            {"session_id": "s2", "ts": 12.5, "text": "Skip the invoices table"},
        ]
        assert [e.text for e in history.entries(session_id="s2")] == ["Skip the invoices table"]

    def test_bad_options_and_inputs_are_refused(self, tmp_path: Path) -> None:
        """A non-positive cap or a non-string text is a ConfigurationError; nothing written."""
        with pytest.raises(ConfigurationError, match="max_bytes"):
            InputHistory(tmp_path / "x.jsonl", max_bytes=0)
        history = InputHistory(tmp_path / "x.jsonl")
        with pytest.raises(ConfigurationError, match="strings"):
            history.append(b"bytes", session_id="s")  # type: ignore[arg-type]
        assert not (tmp_path / "x.jsonl").exists()

    def test_many_processes_write_whole_lines(self, tmp_path: Path) -> None:
        """Eight processes appending and trimming at once: every line whole, none lost."""
        path = tmp_path / "inputs.jsonl"
        workers, count = 8, 60
        context = multiprocessing.get_context("fork")
        processes = [
            context.Process(target=_writer, args=(str(path), w, count, 10**9))
            for w in range(workers)
        ]
        for process in processes:
            process.start()
        for process in processes:
            process.join(timeout=120)
            assert process.exitcode == 0
        history = InputHistory(path)
        assert history.check().ok
        for worker in range(workers):
            texts = [e.text for e in history.entries(session_id=f"s{worker}")]
            assert [t.split(" x")[0].rstrip("x ") for t in texts] == [
                f"worker {worker} input {n}" for n in range(count)
            ]

    def test_no_append_is_lost_while_others_trim(self, tmp_path: Path) -> None:
        """Writers that wait on a file a trim replaced write to the new one: the newest stay."""
        path = tmp_path / "inputs.jsonl"
        context = multiprocessing.get_context("fork")
        processes = [
            context.Process(target=_writer, args=(str(path), w, 80, 6_000)) for w in range(8)
        ]
        for process in processes:
            process.start()
        for process in processes:
            process.join(timeout=120)
            assert process.exitcode == 0
        history = InputHistory(path, max_bytes=6_000)
        assert history.check().ok
        assert path.stat().st_size <= 6_000
        kept = 0
        for worker in range(8):
            # A trim drops the oldest lines only: what is left of a worker's inputs is a run
            # that ends with its last one. An append lost to a replaced file leaves a gap.
            numbers = [int(e.text.split()[3]) for e in history.entries(session_id=f"s{worker}")]
            assert numbers == list(range(80 - len(numbers), 80))
            kept += len(numbers)
        assert kept > 0


class TestTrim:
    @settings(max_examples=60, deadline=None)
    @given(
        st.lists(st.text(max_size=300), min_size=1, max_size=40),
        st.integers(min_value=200, max_value=4_000),
    )
    def test_the_file_stays_under_the_cap_and_keeps_the_newest(
        self, texts: list[str], cap: int
    ) -> None:
        """After each append the file is at most the cap; a trim keeps a newest run."""
        import tempfile

        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "inputs.jsonl"
            history = InputHistory(path, max_bytes=cap, clock=lambda: 1.0)
            for text in texts:
                history.append(text, session_id="s")
                assert path.stat().st_size <= cap
            kept = [e.text for e in history.entries()]
            assert kept == texts[len(texts) - len(kept) :]

    def test_a_trim_goes_down_to_four_fifths(self, tmp_path: Path) -> None:
        """Crossing the cap drops the oldest lines until the file is at most 0.8 of it."""
        path = tmp_path / "inputs.jsonl"
        history = InputHistory(path, max_bytes=1_000, clock=lambda: 1.0)
        history.append("y" * 20, session_id="s")
        line = path.stat().st_size
        for _ in range(1_000 // line - 1):
            history.append("y" * 20, session_id="s")
        assert path.stat().st_size == (1_000 // line) * line  # full, not trimmed yet
        history.append("z" * 20, session_id="s")
        assert len(history.entries()) == int(1_000 * TRIM_TO) // line
        assert history.entries()[-1].text == "z" * 20


class TestRepair:
    def test_damaged_lines_are_skipped_counted_and_rebuilt(self, tmp_path: Path) -> None:
        """Half a line, garbage and a wrong shape are skipped; repair keeps the whole ones."""
        path = tmp_path / "inputs.jsonl"
        history = InputHistory(path, clock=lambda: 2.0)
        history.append("first", session_id="s")
        with open(path, "ab") as file:
            file.write(b'{"session_id": "s", "ts": 3, "te\n')
            file.write(b"\xff\xfe not json\n")
            file.write(b'["a list"]\n{"session_id": "s", "ts": NaN, "text": "nan"}\n')
        history.append("second", session_id="s")
        assert [e.text for e in history.entries()] == ["first", "second"]
        found = history.repair()
        assert (found.entries, found.damaged) == (2, 4)
        assert history.check().ok
        assert len(path.read_text().splitlines()) == 2
        assert os.stat(path).st_mode & 0o777 == 0o600


class TestFollow:
    def test_a_manager_s_user_turns_are_recorded(self, tmp_path: Path) -> None:
        """Every user turn from then on, not the system prompt or an assistant turn."""
        history = InputHistory(tmp_path / "inputs.jsonl")
        manager = ContextManager(budget=4_000, policy=Policy())
        manager.add_system("You are terse.")
        receiver = history.follow(manager, session_id="run-1")
        manager.add_user("Rename the module.")
        manager.add_assistant("Done.")
        manager.add_user("禁止修改 tests/")
        manager.bus.disconnect("node_added", receiver)
        manager.add_user("Not recorded.")
        assert [e.text for e in history.entries(session_id="run-1")] == [
            "Rename the module.",
            "禁止修改 tests/",
        ]
