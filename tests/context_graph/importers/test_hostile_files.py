"""Hostile session files: a typed error with a location, or a valid render; never a crash.

Each case was a raw `TypeError`, `ValueError` or traceback before: a role or block type
that is a list, an integer longer than Python reads, a budget that is not an int, a
profile that is not UTF-8 or is nested too deeply. The fuzz test mutates real shared
traces (seeded, bounded) and holds every importer to the same rule.
"""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

import pytest

from context_graph import ConfigurationError, ContextGraph, IngestError
from context_graph.importers import load_sessions
from context_graph.render import Renderer
from context_graph.testing import graph_snapshot, strict_trace, trace_files
from context_graph.validate.request import validate
from orchestrator import ContextManager
from orchestrator.policy import Policy

TRACES = Path(__file__).resolve().parents[3].parent / "shared" / "traces"


def _write(tmp_path: Path, name: str, data: Any, *, jsonl: bool = False) -> Path:
    path = tmp_path / name
    if jsonl:
        path.write_text("".join(json.dumps(r) + "\n" for r in data), encoding="utf-8")
    else:
        path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _ingest_all(path: Path) -> ContextGraph:
    graph = ContextGraph()
    for session in load_sessions(path):
        graph.ingest(session.events)
    return graph


class TestNamesThatAreNotStrings:
    @pytest.mark.parametrize(
        ("name", "data", "jsonl", "where"),
        [
            (
                "anthropic_block.json",
                {"system": "s", "messages": [{"role": "user", "content": [{"type": ["text"]}]}]},
                False,
                "messages[0].content[0].type",
            ),
            (
                "anthropic_assistant_block.json",
                {
                    "system": "s",
                    "messages": [
                        {"role": "user", "content": "hi"},
                        {"role": "assistant", "content": [{"type": {"a": 1}, "text": "x"}]},
                    ],
                },
                False,
                "messages[1].content[0].type",
            ),
            (
                "claude_code_block.jsonl",
                [
                    {
                        "type": "user",
                        "uuid": "u1",
                        "sessionId": "s",
                        "message": {"role": "user", "content": [{"type": ["text"], "text": "x"}]},
                    }
                ],
                True,
                "message.content[0].type",
            ),
        ],
    )
    def test_a_list_where_a_name_belongs_is_an_ingest_error(
        self, tmp_path: Path, name: str, data: Any, jsonl: bool, where: str
    ) -> None:
        """A block type that is a list or an object is named by its path, not `unhashable`."""
        path = _write(tmp_path, name, data, jsonl=jsonl)
        with pytest.raises(IngestError) as caught:
            _ingest_all(path)
        assert caught.value.location is not None
        assert caught.value.location.file == str(path)
        assert where in str(caught.value)

    @pytest.mark.parametrize(
        "messages",
        [[{"role": ["user"], "content": "hi"}], [{"role": {"x": 1}, "content": "hi"}]],
    )
    def test_a_role_that_is_not_a_string_is_not_recognized(
        self, tmp_path: Path, messages: list[dict[str, Any]]
    ) -> None:
        """A payload whose role is a list is an unrecognized input, not a TypeError."""
        path = _write(tmp_path, "chat.json", {"messages": messages})
        with pytest.raises(IngestError, match="unrecognized input"):
            _ingest_all(path)


class TestNumbersPythonWillNotRead:
    def test_a_huge_integer_in_a_json_file(self, tmp_path: Path) -> None:
        """An integer over Python's digit limit is an IngestError naming the file."""
        path = tmp_path / "big.json"
        path.write_text(
            '{"messages": [{"role": "user", "content": "hi", "n": ' + "9" * 5_000 + "}]}"
        )
        with pytest.raises(IngestError, match="integer longer than 4,300 digits") as caught:
            _ingest_all(path)
        assert caught.value.location is not None and caught.value.location.file == str(path)

    def test_a_huge_integer_on_a_jsonl_line(self, tmp_path: Path) -> None:
        """In JSONL the error names the line."""
        path = tmp_path / "big.jsonl"
        path.write_text('{"type": "user"}\n{"n": ' + "1" * 4_400 + "}\n")
        with pytest.raises(IngestError, match="integer longer") as caught:
            _ingest_all(path)
        assert caught.value.location is not None and caught.value.location.line == 2


class TestRendererBudget:
    @pytest.mark.parametrize("budget", [float("nan"), float("inf"), "100", 99.9, True, -1])
    def test_a_budget_that_is_not_a_whole_number_of_tokens_is_refused(self, budget: Any) -> None:
        """NaN, infinity, strings, floats and booleans are configuration errors."""
        graph = ContextGraph()
        graph.add_user("Fix the parser.")
        with pytest.raises(ConfigurationError, match="non-negative int"):
            Renderer(format="openai").render(graph, budget=budget)


class TestProfileFiles:
    def test_a_profile_that_is_not_utf8(self, tmp_path: Path) -> None:
        """Bad UTF-8 is named, with the byte."""
        path = tmp_path / "p.toml"
        path.write_bytes(b'name = "\xff\xfe"\n')
        with pytest.raises(ConfigurationError, match="not valid UTF-8"):
            Policy.load(path)

    def test_a_profile_nested_too_deeply(self, tmp_path: Path) -> None:
        """Arrays nested thousands deep are a configuration error, not a RecursionError."""
        path = tmp_path / "p.toml"
        path.write_text("x = " + "[" * 3_000 + "]" * 3_000 + "\n")
        with pytest.raises(ConfigurationError, match="nested too deeply"):
            Policy.load(path)


# --- fuzz: mutated real traces -----------------------------------------------------------

JUNK: tuple[Any, ...] = (
    None,
    [],
    {},
    [1, "x"],
    {"type": ["text"]},
    -1,
    0,
    1e308,
    True,
    "",
    "x" * 3,
    10**40,
    "lone \ud800 surrogate",
)
#: Mutations of each file; larger files get fewer (the suite stays quick).
MUTATIONS_SMALL, MUTATIONS_LARGE, LARGE_BYTES = 6, 2, 300_000


def _readable_files() -> list[Path]:
    """Every shared session file an importer reads (sub-agent files come with their parent)."""
    return [path for path in trace_files(TRACES) if "subagents" not in path.parts]


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a JSON value, as a key path."""
    found = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, item in value.items():
            found.extend(_paths(item, (*prefix, key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found.extend(_paths(item, (*prefix, index)))
    return found


def _set(value: Any, path: tuple[Any, ...], new: Any) -> None:
    for key in path[:-1]:
        value = value[key]
    value[path[-1]] = new


def _read(path: Path) -> tuple[Any, bool]:
    text = path.read_text(encoding="utf-8")
    try:
        return json.loads(text), False
    except json.JSONDecodeError:
        lines = [line for line in text.splitlines() if line.strip() and not line.startswith("//")]
        return [json.loads(line) for line in lines], True


@pytest.mark.slow
@pytest.mark.skipif(not TRACES.is_dir(), reason="shared traces not present")
@pytest.mark.parametrize("trace", _readable_files(), ids=lambda p: str(p.relative_to(TRACES)))
def test_mutated_traces_give_a_typed_error_or_a_valid_render(trace: Path, tmp_path: Path) -> None:
    """Any one value replaced by junk: an IngestError with the file, or a valid request.

    What is accepted also survives the session file: written, closed and reopened, the
    pristine record is the same.
    """
    data, jsonl = _read(trace)
    places = _paths(data)
    rng = random.Random(f"{trace.name}:fuzz")
    large = trace.stat().st_size > LARGE_BYTES
    for n in range(MUTATIONS_LARGE if large else MUTATIONS_SMALL):
        mutated = copy.deepcopy(data)
        _set(mutated, rng.choice(places), rng.choice(JUNK))
        path = _write(tmp_path, f"m{n}{trace.suffix}", mutated, jsonl=jsonl)
        graph = ContextGraph()
        graph.add_system("Kept whatever the import does.")
        before = graph_snapshot(graph)
        sessions: list[Any] = []
        try:
            sessions = load_sessions(path, strict=strict_trace(trace))
            for session in sessions:
                graph.ingest(session.events)
        except IngestError as exc:
            assert exc.location is not None and exc.location.file == str(path), exc
            if graph_snapshot(graph) != before:
                # A refused batch changes nothing; earlier sessions of the file may be in.
                assert len(sessions) > 1, f"mutation {n}: a refused ingest changed the graph"
            continue
        for fmt in ("openai", "anthropic", "gemini"):
            body = Renderer(format=fmt).render(graph, budget=None).payload
            assert validate(body, fmt) == [], f"mutation {n}: {fmt} body invalid"
        _assert_survives_the_store(sessions[0].events, tmp_path / f"m{n}.session", n)


def _assert_survives_the_store(events: Any, path: Path, n: int) -> None:
    """Ingested through a session file, closed and reopened: the same pristine record."""
    manager = ContextManager.open(path, durable=False, policy=Policy())
    manager.ingest(events)
    written = graph_snapshot(manager.raw)
    manager.close()
    reopened = ContextManager.open(path, durable=False, policy=Policy())
    try:
        assert graph_snapshot(reopened.raw) == written, f"mutation {n}: changed by reopening"
    finally:
        reopened.close()
