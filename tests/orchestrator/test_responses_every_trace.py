"""Every shared trace renders valid in the Responses format at 25%, 50% and 8,000 tokens.

Each trace is rendered by a `ContextManager` (the CLI's `coding` profile), once with no
tools and once with the tools the trace names: one function schema per tool the agent
called, its parameters typed from the arguments it was called with. Every body is checked
by our validator and by the openai SDK's request types. One manager per trace and tool
set renders the three budgets from the largest down, so the compaction done for one
budget carries on into the next, as it would in a live session shrinking its window;
this keeps the module to one ingest per trace and tool set.

A budget the floor cannot meet is refused with `BudgetExceededError` (never an invalid
body); run with `-s` to see the refusals.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchmarks.sdk_types import sdk_problems
from context_graph.errors import BudgetExceededError
from context_graph.graph.context_graph import ContextGraph
from context_graph.graph.events import AgentEvent, AssistantTurn
from context_graph.importers import load_sessions
from context_graph.render import Renderer
from context_graph.testing import strict_trace, trace_files
from context_graph.validate.request import validate
from orchestrator.manager import ContextManager

TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "traces"
FILES = trace_files(TRACES)
LEVELS = ("50%", "25%", "8000")
#: The Responses API's rule for a function name.
_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_JSON_TYPES = {str: "string", bool: "boolean", int: "integer", float: "number"}
#: A few schemas for traces that call no tool, so that every trace is rendered with tools.
FIXED_TOOLS: tuple[dict[str, Any], ...] = (
    {
        "type": "function",
        "name": "read_file",
        "description": "Read a file of the repository.",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string"}, "offset": {"type": "integer"}},
            "required": ["path"],
        },
    },
    {
        "type": "function",
        "name": "run_command",
        "description": "Run a shell command and return its output.",
        "parameters": {
            "type": "object",
            "properties": {"command": {"type": "string"}, "timeout": {"type": "number"}},
            "required": ["command"],
        },
    },
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not FILES, reason="shared traces not present"),
]


@functools.cache
def _events(path: Path) -> tuple[AgentEvent, ...]:
    return tuple(load_sessions(path, strict=strict_trace(path))[0].events)


def trace_tools(events: tuple[AgentEvent, ...]) -> list[dict[str, Any]]:
    """One Responses function tool per tool the session called, typed from its arguments."""
    properties: dict[str, dict[str, dict[str, str]]] = {}
    for event in events:
        if not isinstance(event, AssistantTurn):
            continue
        for call in event.tool_calls:
            if not _NAME.match(call.name):
                continue
            found = properties.setdefault(call.name, {})
            try:
                arguments = json.loads(call.arguments)
            except ValueError:
                continue
            if isinstance(arguments, dict):
                for key, value in arguments.items():
                    found.setdefault(str(key), {"type": _json_type(value)})
    return [
        {
            "type": "function",
            "name": name,
            "description": f"The `{name}` tool of the recorded agent.",
            "parameters": {"type": "object", "properties": props},
        }
        for name, props in sorted(properties.items())
    ] or list(FIXED_TOOLS)


def _json_type(value: Any) -> str:
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return _JSON_TYPES.get(type(value), "string")


def _budget(level: str, raw: int) -> int:
    """`8000` as given, `25%` of the trace's whole size with the tools."""
    return int(level) if level.isdigit() else max(1, raw * int(level[:-1]) // 100)


def _params() -> list[object]:
    return [
        pytest.param(path, tools, id=f"{path.relative_to(TRACES)}-{tools}")
        for path in FILES
        for tools in ("no-tools", "trace-tools")
    ]


@pytest.fixture(name="refused", scope="module")
def refused_fixture() -> Iterator[list[str]]:
    """Collects the budgets the manager refused; printed at the end (run with -s)."""
    table: list[str] = []
    yield table
    print(f"\nResponses renders refused (BudgetExceededError) {len(table)} times:")
    for row in table:
        print(f"  {row}")


def test_trace_tools_are_typed_from_the_calls() -> None:
    """A called tool becomes a function schema whose properties are its arguments' keys."""
    call = {"id": "c1", "name": "grep", "arguments": {"pattern": "x", "max": 3, "paths": []}}
    tools = trace_tools((AssistantTurn(tool_calls=(call,)),))
    assert tools == [
        {
            "type": "function",
            "name": "grep",
            "description": "The `grep` tool of the recorded agent.",
            "parameters": {
                "type": "object",
                "properties": {
                    "pattern": {"type": "string"},
                    "max": {"type": "integer"},
                    "paths": {"type": "array"},
                },
            },
        }
    ]
    assert trace_tools(()) == list(FIXED_TOOLS)


@pytest.mark.parametrize(("path", "tools"), _params())
@pytest.mark.ingests_traces
def test_every_budget_renders_a_valid_responses_body(
    path: Path, tools: str, refused: list[str]
) -> None:
    """At each budget the body is valid by our rules and the SDK types, and fits."""
    events = _events(path)  # raises IngestError for files no importer reads yet
    specs = trace_tools(events) if tools == "trace-tools" else []
    graph = ContextGraph()
    graph.ingest(events)
    raw = Renderer(format="responses", tools=specs).render(graph).tokens
    budgets = sorted({_budget(level, raw) for level in LEVELS}, reverse=True)
    manager = ContextManager("responses", policy="coding", tools=specs)
    manager.ingest(events)
    for budget in budgets:
        try:
            result = manager.render_sync(budget=budget)
        except BudgetExceededError as exc:
            assert exc.required > budget
            refused.append(f"{path.relative_to(TRACES)} {tools} {budget:,} of {raw:,}")
            continue
        assert result.tokens <= budget
        assert validate(result.payload, "responses") == []
        assert sdk_problems(result.payload, "responses") == []
        if specs:
            assert [t["name"] for t in result.payload["tools"]] == [t["name"] for t in specs]
        else:
            assert "tools" not in result.payload
