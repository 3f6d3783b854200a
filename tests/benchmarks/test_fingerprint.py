"""`python -m benchmarks.fingerprint`: request hashes that prove a speed change changed nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.compare.sessions import Session, discover
from benchmarks.fingerprint import differences, fingerprint, main

TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "traces"


@pytest.fixture(name="sessions", scope="module")
def fixture_sessions() -> list[Session]:
    if not TRACES.is_dir():
        pytest.skip(f"no shared traces at {TRACES}")
    found = discover(TRACES, only="tau_bench_gpt4o_airline")
    return sorted(found, key=lambda s: len(s.events))[:2]


def test_the_same_code_gives_the_same_fingerprint(sessions: list[Session]) -> None:
    first = fingerprint(sessions, ("50%",))
    again = fingerprint(sessions, ("50%",))
    assert first == again
    assert len(first) == 2 * 3  # sessions x profiles
    for session in sessions:
        requests = first[f"{session.family}/{session.label}/50%/coding"]
        assert len(requests) == len(session.calls)


def test_a_changed_request_is_found() -> None:
    before = {"a/s/50%/coding": ["1", "2", "3"], "a/s/50%/chat": ["1"]}
    after = {"a/s/50%/coding": ["1", "X", "3"], "a/s/8k/chat": ["1"]}
    lines = differences(before, after)
    assert lines == [
        "a/s/50%/chat: only in the first",
        "a/s/50%/coding: first differing call 2 of 3",
        "a/s/8k/chat: only in the second",
    ]
    assert differences(before, dict(before)) == []
    assert differences({"k": ["1"]}, {"k": ["1", None]}) == ["k: first differing call 2 of 2"]


def test_the_command_diffs_and_refuses_bad_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b, bad = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "bad.json"
    a.write_text(json.dumps({"k": ["1", None]}))
    b.write_text(json.dumps({"k": ["1", None]}))
    bad.write_text("[1, 2]")
    assert main(["--diff", str(a), str(b)]) == 0
    assert "1 runs, 0 differ" in capsys.readouterr().out
    b.write_text(json.dumps({"k": ["1", "2"]}))
    assert main(["--diff", str(a), str(b)]) == 1
    with pytest.raises(SystemExit, match="not a fingerprint"):
        main(["--diff", str(a), str(bad)])
    with pytest.raises(SystemExit, match="cannot read fingerprint"):
        main(["--diff", str(a), str(tmp_path / "missing.json")])
