"""Tool definitions through the manager: every render, calibration, replay and the CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks.sdk_types import sdk_problems
from context_graph.errors import ConfigurationError
from context_graph.examples import EXAMPLE_SESSION
from context_graph.graph.node_tokens import NodeTokenCache
from context_graph.importers import load_sessions
from context_graph.render import FORMATS, Renderer, RenderResult
from context_graph.render.tools import ToolSpec, read_tools
from context_graph.tokens.counting import default_counter
from context_graph.validate import validate
from orchestrator.cli import main
from orchestrator.manager import ContextManager
from orchestrator.policy import Policy
from orchestrator.replay import replay

#: Two tool schemas of the size real agents send (a shell and a file editor).
TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "bash",
            "description": (
                "Run a shell command in the repository and return its standard output and "
                "standard error. Long-running commands are stopped after two minutes; use "
                "it to run tests, search the code and inspect files."
            ),
            "parameters": {
                "type": "object",
                "properties": {
                    "command": {"type": "string", "description": "The command line to run."},
                    "timeout": {"type": "integer", "description": "Seconds before it stops."},
                },
                "required": ["command"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "edit_file",
            "description": (
                "Replace one exact occurrence of a string in a file with another string. "
                "The old string must match the file exactly, whitespace included, and "
                "occur once; otherwise the edit is refused and nothing changes."
            ),
            "parameters": {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "The file, from the root."},
                    "old": {"type": "string", "description": "The text to replace."},
                    "new": {"type": "string", "description": "The text to put there."},
                },
                "required": ["path", "old", "new"],
            },
        },
    },
]


def _session(manager: ContextManager) -> None:
    manager.add_system("You are a coding agent.")
    manager.add_user("Fix the failing test.")


def _provider_count(body: dict[str, Any], tools: list[Any]) -> int:
    """What a provider counting like us reports: the body with `tools` sent beside it."""
    provider = Renderer().provider
    sent = {**body, "tools": provider.render_tools(read_tools(tools))}
    return provider.count_payload(sent, NodeTokenCache(default_counter()))


class TestManagerTools:
    @pytest.mark.parametrize("fmt", FORMATS)
    def test_every_render_carries_the_tools(self, fmt: Any) -> None:
        """`ContextManager(tools=...)` puts them in every render's tools field, valid."""
        manager = ContextManager(format=fmt, tools=TOOLS, policy=Policy())
        _session(manager)
        body = manager.render_sync().payload
        assert "tools" in body
        assert validate(body, fmt) == []
        assert sdk_problems(body, fmt) == []

    def test_render_tools_override_one_call(self) -> None:
        """`render(tools=...)` sends another set once; the manager's is back after."""
        manager = ContextManager(tools=TOOLS, policy=Policy())
        _session(manager)
        other = manager.render_sync(tools=[ToolSpec("clock")]).payload
        assert [t["function"]["name"] for t in other["tools"]] == ["clock"]
        again = manager.render_sync().payload
        assert [t["function"]["name"] for t in again["tools"]] == ["bash", "edit_file"]

    def test_bad_tools_fail_at_construction(self) -> None:
        """A bad tool definition is a ConfigurationError naming the option and the tool."""
        with pytest.raises(ConfigurationError, match=r"ContextManager: tools\[1\]"):
            ContextManager(tools=[TOOLS[0], {"name": "bad name"}], policy=Policy())

    def test_compaction_counts_the_tools(self) -> None:
        """Under a budget the whole request, tools included, fits."""
        manager = ContextManager(tools=TOOLS, budget=1_500, policy=Policy())
        _session(manager)
        for n in range(20):
            manager.add_assistant(f"step {n}", tool_calls=[{"id": f"c{n}", "name": "bash"}])
            manager.add_tool_result(f"c{n}", f"output line {n} " * 40)
        result = manager.render_sync()
        assert result.tokens <= 1_500
        assert "tools" in result.payload


def _long(manager: ContextManager) -> None:
    for n in range(150):
        manager.add_assistant(f"step {n} " + "word " * 30)
        manager.add_user(f"go on {n}")


class TestCalibrationWithTools:
    def test_uncounted_tools_push_the_factor_to_its_ceiling(self) -> None:
        """Today's failure: tools sent beside an uncounted body make the factor 2.0.

        The usable budget is then halved: the next render fits half of it.
        """
        manager = ContextManager(budget=5_000, policy=Policy(pipeline=[]))
        _session(manager)
        result = manager.render_sync()
        reported = _provider_count(result.payload, TOOLS)
        assert reported > 2 * result.tokens
        assert manager.report_usage(reported) == 2.0
        _long(manager)
        assert manager.render_sync().tokens <= 2_500

    def test_counted_tools_keep_the_factor_at_one(self) -> None:
        """With `tools=` the estimate is the whole request: a faithful report learns 1.0.

        The whole budget stays usable.
        """
        manager = ContextManager(tools=TOOLS, budget=5_000, policy=Policy(pipeline=[]))
        _session(manager)
        result = manager.render_sync()
        plain = {k: v for k, v in result.payload.items() if k != "tools"}
        reported = _provider_count(plain, TOOLS)
        assert reported == result.tokens
        assert manager.report_usage(reported) == 1.0
        _long(manager)
        assert 2_500 < manager.render_sync().tokens <= 5_000


class TestReplayTools:
    def test_a_changed_tool_set_breaks_the_prefix(self) -> None:
        """Replay reports a call whose tool set changed as not reusing the prefix."""
        events = load_sessions(EXAMPLE_SESSION)[0].events
        same = replay(events, budget=None, tools=TOOLS)
        assert same.calls[-1].prefix_reused
        manager = ContextManager(tools=TOOLS, policy=Policy())
        changing = _ChangingTools(manager)
        report = replay(events, budget=None, manager=changing.manager)
        assert not report.calls[changing.changed_at].prefix_reused


class _ChangingTools:
    """A manager whose tool set changes at the second call its renders make."""

    def __init__(self, manager: ContextManager) -> None:
        self.manager = manager
        self.changed_at = 1
        calls = {"n": 0}
        original = manager.render_sync

        def render_sync(**kwargs: Any) -> RenderResult:
            calls["n"] += 1
            tools = TOOLS if calls["n"] <= self.changed_at else TOOLS[:1]
            return original(tools=tools, **kwargs)

        manager.render_sync = render_sync  # type: ignore[method-assign]


class TestCliTools:
    @pytest.mark.parametrize("command", ["render", "replay"])
    def test_tools_file_goes_into_the_request(
        self, command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """`--tools FILE.json` puts the file's tools into the rendered request."""
        tools_file = tmp_path / "tools.json"
        tools_file.write_text(json.dumps({"tools": TOOLS}), encoding="utf-8")
        out = tmp_path / "body.json"
        code = main([command, "--tools", str(tools_file), "-o", str(out)])
        capsys.readouterr()
        assert code == 0
        body = json.loads(out.read_text(encoding="utf-8"))
        assert body["tools"] == TOOLS

    def test_bad_tools_file_is_a_usage_error(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A tools file with a bad tool exits 2 naming the file and the tool."""
        tools_file = tmp_path / "tools.json"
        tools_file.write_text(json.dumps([{"name": "a"}, {"name": "a"}]), encoding="utf-8")
        code = main(["render", "--tools", str(tools_file)])
        _, err = capsys.readouterr()
        assert code == 2
        assert f"--tools {tools_file}" in err
        assert "tool `a` is defined twice" in err
