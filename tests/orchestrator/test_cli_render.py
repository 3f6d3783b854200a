from __future__ import annotations

import json
from pathlib import Path

import pytest

from context_graph.errors import BudgetExceededError
from context_graph.examples import EXAMPLE_SESSION
from context_graph.graph.context_graph import ContextGraph
from context_graph.importers import load_sessions
from context_graph.render import Renderer
from context_graph.validate.request import validate
from orchestrator.cli import main
from orchestrator.manager import ContextManager
from orchestrator.policy import Policy, get_policy

BUDGET = 6_000


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(name="long_session")
def long_session_fixture(tmp_path: Path) -> Path:
    """One request followed by twelve large tool outputs: a single unit far over budget."""
    messages: list[dict[str, object]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Fix the failing test in tests/test_io.py."},
    ]
    for i in range(12):
        call = {"command": f"cat src/mod_{i}.py"}
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"call_{i}",
                        "type": "function",
                        "function": {"name": "bash", "arguments": json.dumps(call)},
                    }
                ],
            }
        )
        lines = (f"def f_{i}_{j}(x):\n    return x * {j}  # module {i}" for j in range(150))
        messages.append({"role": "tool", "tool_call_id": f"call_{i}", "content": "\n".join(lines)})
    messages.append({"role": "assistant", "content": "Done: the test passes now."})
    path = tmp_path / "long.json"
    path.write_text(json.dumps({"messages": messages}), encoding="utf-8")
    return path


class TestRenderCompacts:
    def test_compacts_what_the_floor_alone_cannot_fit(
        self, capsys: pytest.CaptureFixture[str], long_session: Path
    ) -> None:
        """A single-request session far over budget is compacted to fit, not refused."""
        code, out, err = _run(capsys, "render", str(long_session), "--budget", str(BUDGET))
        assert code == 0, err
        payload = json.loads(out)
        assert validate(payload, "openai") == []
        events = load_sessions(long_session)[0].events
        manager = ContextManager(budget=BUDGET, policy=get_policy("coding"))
        manager.ingest(events)
        assert payload == manager.render_sync().payload

    def test_summary_says_what_compaction_did(
        self, capsys: pytest.CaptureFixture[str], long_session: Path
    ) -> None:
        """The one stderr line gives the sizes before and after and the edits made."""
        _, _, err = _run(capsys, "render", str(long_session), "--budget", str(BUDGET))
        assert len(err.strip().splitlines()) == 1
        graph = ContextGraph()
        graph.ingest(load_sessions(long_session)[0].events)
        before = Renderer().render(graph).tokens
        assert err.startswith(f"openai: {before:,} tokens before, ")
        assert "compacted (coding policy): " in err and "tokens saved" in err

    def test_no_compact_keeps_the_floor_only_render(
        self, capsys: pytest.CaptureFixture[str], long_session: Path
    ) -> None:
        """--no-compact renders the pristine graph, so the same budget is refused (exit 3)."""
        code, out, err = _run(
            capsys, "render", str(long_session), "--budget", str(BUDGET), "--no-compact"
        )
        assert code == 3
        assert out == ""
        assert "cannot be met" in err

    def test_no_compact_matches_the_renderer(self, capsys: pytest.CaptureFixture[str]) -> None:
        """Without --budget pressure, --no-compact is exactly the Renderer's body."""
        code, out, err = _run(capsys, "render", "--no-compact", "--budget", "8000")
        assert code == 0, err
        graph = ContextGraph()
        graph.ingest(load_sessions(EXAMPLE_SESSION)[0].events)
        assert json.loads(out) == Renderer().render(graph, budget=8000).payload
        assert "not compacted (--no-compact)" in err

    def test_refuses_only_where_the_manager_does(
        self, capsys: pytest.CaptureFixture[str], long_session: Path
    ) -> None:
        """A budget below the compacted floor exits 3 with the manager's own message."""
        events = load_sessions(long_session)[0].events
        manager = ContextManager(budget=50, policy=get_policy("coding"))
        manager.ingest(events)
        with pytest.raises(BudgetExceededError) as refused:
            manager.render_sync()
        code, out, err = _run(capsys, "render", str(long_session), "--budget", "50")
        assert code == 3
        assert out == ""
        assert str(refused.value) in err

    @pytest.mark.parametrize("policy", ["service", "chat"])
    def test_policy_chooses_the_pipeline(
        self, capsys: pytest.CaptureFixture[str], long_session: Path, policy: str
    ) -> None:
        """--policy NAME renders what a manager with that named policy renders."""
        code, out, err = _run(
            capsys, "render", str(long_session), "--budget", str(BUDGET), "--policy", policy
        )
        assert code == 0, err
        manager = ContextManager(budget=BUDGET, policy=get_policy(policy))
        manager.ingest(load_sessions(long_session)[0].events)
        assert json.loads(out) == manager.render_sync().payload
        assert f"({policy} policy)" in err

    def test_the_old_profile_spelling_still_works(
        self, capsys: pytest.CaptureFixture[str], long_session: Path
    ) -> None:
        """--profile NAME renders what --policy NAME renders, and says it is deprecated."""
        argv = ["render", str(long_session), "--budget", str(BUDGET)]
        code, new, _ = _run(capsys, *argv, "--policy", "service")
        assert code == 0
        code, old, err = _run(capsys, *argv, "--profile", "service")
        assert code == 0, err
        assert old == new
        assert "--profile is deprecated" in err and "--policy" in err
        assert "(service policy)" in err

    def test_help_names_policy_only(self, capsys: pytest.CaptureFixture[str]) -> None:
        """The help lists --policy; the old spelling is not advertised."""
        with pytest.raises(SystemExit) as done:
            main(["render", "--help"])
        out = capsys.readouterr().out
        assert done.value.code == 0
        assert "--policy POLICY" in out
        assert "--profile" not in out

    def test_policy_file(
        self, capsys: pytest.CaptureFixture[str], long_session: Path, tmp_path: Path
    ) -> None:
        """--policy FILE reads a TOML policy, as replay does."""
        path = tmp_path / "mine.toml"
        path.write_text(
            'name = "mine"\n[[stages]]\nprocessor = "truncate"\n'
            '[[stages]]\nprocessor = "summarize"\n',
            encoding="utf-8",
        )
        code, out, err = _run(
            capsys, "render", str(long_session), "--budget", str(BUDGET), "--policy", str(path)
        )
        assert code == 0, err
        manager = ContextManager(budget=BUDGET, policy=Policy.load(path))
        manager.ingest(load_sessions(long_session)[0].events)
        assert json.loads(out) == manager.render_sync().payload
        assert "(mine policy)" in err

    @pytest.mark.parametrize("flag", ["--policy", "--profile"])
    def test_unknown_policy_exits_2(self, capsys: pytest.CaptureFixture[str], flag: str) -> None:
        """A policy that is neither named nor a file is bad input, named on one line."""
        code, _, err = _run(capsys, "render", flag, "nonesuch")
        err = "".join(line for line in err.splitlines(True) if "deprecated" not in line)
        assert code == 2
        assert "nonesuch" in err and len(err.strip().splitlines()) == 1


class TestCacheBreakpoints:
    def test_render_marks_breakpoints_through_the_manager(
        self, capsys: pytest.CaptureFixture[str], long_session: Path
    ) -> None:
        """render --cache-breakpoints writes the manager's marked Anthropic body."""
        code, out, err = _run(
            capsys,
            "render",
            str(long_session),
            "--format",
            "anthropic",
            "--budget",
            str(BUDGET),
            "--cache-breakpoints",
        )
        assert code == 0, err
        manager = ContextManager(
            format="anthropic",
            budget=BUDGET,
            policy=get_policy("coding").replace(cache_breakpoints=True),
        )
        manager.ingest(load_sessions(long_session)[0].events)
        payload = json.loads(out)
        assert payload == manager.render_sync().payload
        assert '"cache_control"' in out
        assert validate(payload, "anthropic") == []

    def test_replay_marks_breakpoints(
        self, capsys: pytest.CaptureFixture[str], tmp_path: Path
    ) -> None:
        """replay --cache-breakpoints sends marked requests (its last one is written)."""
        last = tmp_path / "last.json"
        code, _, err = _run(
            capsys, "replay", "--format", "anthropic", "--cache-breakpoints", "-o", str(last)
        )
        assert code == 0, err
        assert '"cache_control"' in last.read_text(encoding="utf-8")

    @pytest.mark.parametrize("command", ["render", "replay"])
    def test_other_formats_are_refused(
        self, capsys: pytest.CaptureFixture[str], command: str
    ) -> None:
        """Breakpoints with a format that takes no marks are a usage error (exit 2)."""
        code, out, err = _run(capsys, command, "--format", "gemini", "--cache-breakpoints")
        assert code == 2
        assert out == ""
        assert "takes prompt-cache marks (anthropic)" in err and "'gemini'" in err


class TestReplayExitCode:
    def test_refused_call_exits_3_and_writes_the_report(
        self, capsys: pytest.CaptureFixture[str], long_session: Path, tmp_path: Path
    ) -> None:
        """A call the budget cannot serve makes replay exit 3; the report is still written."""
        report = tmp_path / "report.json"
        code, out, err = _run(
            capsys, "replay", str(long_session), "--budget", "50", "--report", str(report)
        )
        assert code == 3
        figures = json.loads(report.read_text(encoding="utf-8"))
        assert figures["over_budget_calls"] >= 1
        assert f"{figures['over_budget_calls']} over budget" in out
        assert "could not meet the budget of 50 tokens" in err

    def test_every_call_served_exits_0(self, capsys: pytest.CaptureFixture[str]) -> None:
        """A replay whose every call fits exits 0."""
        code, out, _ = _run(capsys, "replay", "--budget", "8000")
        assert code == 0
        assert "0 over budget" in out

    def test_json_prints_the_totals(self, capsys: pytest.CaptureFixture[str]) -> None:
        """replay --json prints the report's totals as one JSON object."""
        code, out, _ = _run(capsys, "replay", "--budget", "8000", "--json")
        assert code == 0
        totals = json.loads(out)
        assert totals["over_budget_calls"] == 0 and "calls" not in totals

    @pytest.mark.parametrize("command", ["render", "replay", "check"])
    @pytest.mark.parametrize("budget", ["0", "000", "-1"])
    def test_budget_must_be_positive(
        self, capsys: pytest.CaptureFixture[str], command: str, budget: str
    ) -> None:
        """A budget of 0 is refused while parsing, as ContextManager(budget=0) refuses it."""
        argv = [command, "--budget", budget]
        if command == "check":
            argv.insert(1, "body.json")
        with pytest.raises(SystemExit) as info:
            main(argv)
        assert info.value.code == 2
        err = capsys.readouterr().err
        assert "positive" in err and len(err.strip().splitlines()) == 1


class TestRenderJson:
    def test_summary_is_json_on_stderr(
        self, capsys: pytest.CaptureFixture[str], long_session: Path
    ) -> None:
        """render --json keeps the body on stdout and gives the summary as JSON on stderr."""
        code, out, err = _run(
            capsys, "render", str(long_session), "--budget", str(BUDGET), "--json"
        )
        assert code == 0
        body = json.loads(out)
        summary = json.loads(err)
        assert summary["tokens"] <= BUDGET < summary["tokens_before"]
        assert summary["policy"] == "coding" and sum(summary["edits"].values()) >= 1
        assert summary["units"] >= 1 and validate(body, "openai") == []
