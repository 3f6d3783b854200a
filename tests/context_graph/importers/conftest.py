"""Fixtures shared by the importer tests, and the shared traces they run over.

A conftest cannot be imported under `--import-mode=importlib`, so the lists a module
parametrizes over come from `pytest_generate_tests` here:

- a test that takes `shared_trace` runs once per shared trace file;
- a test that takes `other_trace` runs once per shared trace file outside its
  module's `FAMILY` folder (the traces that importer must not claim).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from context_graph.graph.context_graph import ContextGraph
from context_graph.testing import WordCounter

TRACES = Path(__file__).resolve().parents[3].parent / "shared" / "traces"
TRACE_FILES = (
    sorted(p for p in TRACES.rglob("*") if p.suffix in (".json", ".jsonl", ".traj"))
    if TRACES.is_dir()
    else []
)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "shared_trace" in metafunc.fixturenames:
        metafunc.parametrize("shared_trace", TRACE_FILES, ids=lambda p: p.name)
    if "other_trace" in metafunc.fixturenames:
        family: Path = metafunc.module.FAMILY
        others = [p for p in TRACE_FILES if family not in p.parents]
        metafunc.parametrize("other_trace", others, ids=lambda p: p.name)


@pytest.fixture(name="graph")
def graph_fixture() -> ContextGraph:
    """An empty graph that counts words, so token numbers can be worked out by hand."""
    return ContextGraph(counter=WordCounter())


@pytest.fixture(name="write_json")
def write_json_fixture(tmp_path: Path) -> Callable[..., Path]:
    """A function `(payload, name="payload.json") -> Path` that writes JSON under `tmp_path`.

    `name` may hold folders (`llm_completions/demo/model.json`); they are created.
    """

    def write(payload: Any, name: str = "payload.json") -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(payload), encoding="utf-8")
        return path

    return write
