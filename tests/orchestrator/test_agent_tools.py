"""Tools the model calls: `context_expand` and `context_compact` through the manager."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from benchmarks.sdk_types import sdk_problems
from context_graph.errors import ConfigurationError
from context_graph.examples import EXAMPLE_SESSION
from context_graph.importers import load_sessions
from context_graph.render import FORMATS
from context_graph.testing import WordCounter
from context_graph.tokens.counting import ProviderFormat
from context_graph.validate import validate
from orchestrator.cli import main
from orchestrator.manager import ContextManager
from orchestrator.policy import Policy
from orchestrator.replay import replay
from processors import Distiller, HistorySummarizer, ObservationMasker, ToolOutputTruncator
from tests.orchestrator.policy_keywords import make_manager, open_manager

NAMED = re.compile(r"call context_expand with id ([^\s\]]+) to restore")


def _log(step: int, lines: int = 300) -> str:
    return "\n".join(f"line {j} of run {step}: value={j * step} status=ok" for j in range(lines))


def fill(manager: ContextManager, steps: int = 4, lines: int = 300) -> list[str]:
    """A coding session with large tool outputs; the ids of the outputs, in order."""
    manager.add_system("You are a careful coding agent.")
    manager.add_user("Fix the failing test in tests/test_io.py without touching the API.")
    outputs: list[str] = []
    for step in range(steps):
        manager.add_assistant(
            f"Running the tests, step {step}.",
            tool_calls=[{"id": f"call_{step}", "name": "bash", "arguments": {"cmd": "pytest"}}],
        )
        outputs.append(manager.add_tool_result(f"call_{step}", _log(step, lines)))
        manager.add_user(f"Go on with step {step + 1}.")
    return outputs


def named_ids(payload: dict[str, Any]) -> list[str]:
    """The ids the request tells the model to pass `context_expand`, in order."""
    return NAMED.findall(json.dumps(payload, ensure_ascii=False))


def tool_names(payload: dict[str, Any], fmt: ProviderFormat) -> list[str]:
    """The names of the tools in a request body of format `fmt`."""
    tools = payload.get("tools", [])
    if fmt == "openai":
        return [tool["function"]["name"] for tool in tools]
    if fmt == "gemini":
        return [d["name"] for tool in tools for d in tool["functionDeclarations"]]
    return [tool["name"] for tool in tools]


@pytest.fixture(name="make")
def fixture_make() -> Callable[..., ContextManager]:
    """Managers that count words and mask every output one user turn old."""

    def make(**options: Any) -> ContextManager:
        options.setdefault("counter", WordCounter())
        options.setdefault("budget", 4_000)
        options.setdefault("agent_tools", True)
        options.setdefault("pipeline", [ObservationMasker(keep_turns=1)])
        return make_manager(**options)

    return make


class TestToolsInTheRequest:
    """The agent tools are part of every request, after the user's own."""

    @pytest.mark.parametrize("fmt", FORMATS)
    def test_every_format_carries_context_expand(
        self, fmt: ProviderFormat, make: Callable[..., ContextManager]
    ) -> None:
        """Each format's body names context_expand, validates and reads as the SDK's type."""
        manager = make(format=fmt, tools=[{"name": "bash", "input_schema": {"type": "object"}}])
        fill(manager)
        body = manager.render_sync().payload
        assert tool_names(body, fmt) == ["bash", "context_expand"]
        assert validate(body, fmt) == []
        assert sdk_problems(body, fmt) == []

    @pytest.mark.parametrize("fmt", FORMATS)
    def test_compact_is_added_when_asked(
        self, fmt: ProviderFormat, make: Callable[..., ContextManager]
    ) -> None:
        """`("expand", "compact")` adds both tools, in that order."""
        manager = make(format=fmt, agent_tools=("expand", "compact"))
        fill(manager)
        body = manager.render_sync().payload
        assert tool_names(body, fmt) == ["context_expand", "context_compact"]
        assert sdk_problems(body, fmt) == []

    def test_the_tools_count_inside_the_budget(self, make: Callable[..., ContextManager]) -> None:
        """A request with the agent tools is larger by their size, and still fits."""
        plain = make(agent_tools=False)
        tooled = make(agent_tools=("compact",))
        fill(plain, steps=1)
        fill(tooled, steps=1)
        assert tooled.render_sync().tokens > plain.render_sync().tokens

    def test_a_call_with_its_own_tools_keeps_the_agent_tools(
        self, make: Callable[..., ContextManager]
    ) -> None:
        """`render(tools=...)` replaces the user's tools for one call, not the agent tools."""
        manager = make(tools=[{"name": "bash", "input_schema": {"type": "object"}}])
        fill(manager)
        once = manager.render_sync(tools=[{"name": "clock", "input_schema": {"type": "object"}}])
        assert tool_names(once.payload, "openai") == ["clock", "context_expand"]

    def test_off_by_default(self) -> None:
        """Without `agent_tools` the request has no agent tool and no expand hint."""
        manager = ContextManager(counter=WordCounter(), budget=4_000, policy=Policy())
        fill(manager)
        body = manager.render_sync().payload
        assert "tools" not in body
        assert named_ids(body) == []
        assert manager.agent_tools == ()


class TestConfiguration:
    """Host mistakes are typed errors at construction or at the call."""

    @pytest.mark.parametrize(
        ("value", "fragment"),
        [
            ("expand", "must be True, False or a list"),
            (("expand", "shrink"), "names 'shrink'"),
            ((), "empty list"),
            (1, "must be True, False or a list"),
        ],
    )
    def test_bad_agent_tools(self, value: object, fragment: str) -> None:
        """A value of `agent_tools` that names no tool is refused, naming the fix."""
        with pytest.raises(ConfigurationError, match=fragment):
            ContextManager(agent_tools=value, policy=Policy())  # type: ignore[arg-type]

    def test_a_user_tool_may_not_take_the_name(self) -> None:
        """A tool of `tools` called context_expand clashes with the agent tool."""
        clash = [{"name": "context_expand", "input_schema": {"type": "object"}}]
        with pytest.raises(ConfigurationError, match="rename that tool"):
            ContextManager(agent_tools=True, tools=clash, policy=Policy())

    def test_a_call_tool_may_not_take_the_name(self, make: Callable[..., ContextManager]) -> None:
        """One render's tools may not define an agent tool either."""
        manager = make()
        fill(manager, steps=1)
        clash = [{"name": "context_expand", "input_schema": {"type": "object"}}]
        with pytest.raises(ConfigurationError, match="rename that tool"):
            manager.render_sync(tools=clash)

    @pytest.mark.parametrize("value", [-1, 1.5, True, "3"])
    def test_bad_pin_turns(self, value: object) -> None:
        """`expand_pin_turns` is an int >= 0."""
        with pytest.raises(ConfigurationError, match="expand_pin_turns"):
            ContextManager(agent_tools=True, policy=Policy(expand_pin_turns=value))  # type: ignore[arg-type]

    def test_handling_a_call_without_agent_tools_is_a_host_error(self) -> None:
        """`handle_tool_call` on a manager with no agent tools raises ConfigurationError."""
        manager = ContextManager(counter=WordCounter(), policy=Policy())
        with pytest.raises(ConfigurationError, match="agent_tools=True"):
            manager.handle_tool_call_sync("context_expand", {"id": "x"})

    @pytest.mark.parametrize(("name", "arguments"), [(None, {}), ("context_expand", 5)])
    def test_types_no_sdk_gives_are_host_errors(
        self, name: object, arguments: object, make: Callable[..., ContextManager]
    ) -> None:
        """A name that is not a str, or arguments neither text nor a mapping, raise."""
        manager = make()
        with pytest.raises(ConfigurationError, match="handle_tool_call"):
            manager.handle_tool_call_sync(name, arguments)  # type: ignore[arg-type]

    async def test_sync_twin_works_inside_a_loop(self, make: Callable[..., ContextManager]) -> None:
        """`handle_tool_call_sync` inside an event loop answers as the async one does."""
        manager = make()
        answer = manager.handle_tool_call_sync("context_expand", {"id": "x"})
        assert answer == await manager.handle_tool_call("context_expand", {"id": "x"})


class TestScriptedModel:
    """A scripted model loop that calls context_expand sees the original next time."""

    @pytest.mark.parametrize("fmt", FORMATS)
    async def test_expanding_a_masked_output_shows_it_again(
        self, fmt: ProviderFormat, make: Callable[..., ContextManager]
    ) -> None:
        """The id the placeholder names brings the original text into the next request."""
        manager = make(format=fmt)
        outputs = fill(manager)
        first = await manager.render()
        original = manager.raw[outputs[0]].text
        assert original not in json.dumps(first.payload, ensure_ascii=False)
        ids = named_ids(first.payload)
        assert ids[0] == outputs[0]
        # The model calls the tool; the host runs it and sends the result back.
        manager.add_assistant(
            "Let me look at the first run again.",
            tool_calls=[{"id": "x1", "name": "context_expand", "arguments": {"id": ids[0]}}],
        )
        result = await manager.handle_tool_call("context_expand", json.dumps({"id": ids[0]}))
        assert result.startswith("context_expand: restored")
        manager.add_tool_result("x1", result)
        second = await manager.render()
        body = json.dumps(second.payload, ensure_ascii=False)
        assert json.dumps(original, ensure_ascii=False)[1:-1] in body
        assert second.tokens <= 4_000
        assert validate(second.payload, fmt) == []
        assert sdk_problems(second.payload, fmt) == []

    async def test_inside_async_with(self, make: Callable[..., ContextManager]) -> None:
        """With background compaction on, an expand waits for the run and then restores."""
        manager = make()
        outputs = fill(manager)
        async with manager:
            await manager.render()
            result = await manager.handle_tool_call("context_expand", {"id": outputs[0]})
            assert result.startswith("context_expand: restored")
            assert manager.working.is_current(outputs[0])
            assert (await manager.render()).tokens <= 4_000

    def test_the_derived_id_works_too(self, make: Callable[..., ContextManager]) -> None:
        """The masked copy's own id restores the same original."""
        manager = make()
        outputs = fill(manager)
        manager.render_sync()
        derived, _ = manager.working.view.overlay.resolve(outputs[1])
        assert derived != outputs[1]
        assert "restored" in manager.handle_tool_call_sync("context_expand", {"id": derived})
        assert manager.working.is_current(outputs[1])

    def test_the_restore_is_audited(self, make: Callable[..., ContextManager]) -> None:
        """The audit log records the restore, with the tokens it added as a negative saving."""
        manager = make()
        outputs = fill(manager)
        manager.render_sync()
        derived, _ = manager.working.view.overlay.resolve(outputs[0])
        manager.handle_tool_call_sync("context_expand", {"id": outputs[0]})
        entry = manager.working.audit()[-1]
        assert (entry.processor, entry.removed, entry.added) == (
            "context_expand",
            (derived,),
            (outputs[0],),
        )
        assert entry.tokens_saved < 0
        assert manager.stats().proposals_applied == len(manager.working.audit())

    async def test_a_summary_comes_back_whole(self, make: Callable[..., ContextManager]) -> None:
        """Expanding a summary's named id restores every unit it stood for."""
        manager = make(budget=None, pipeline=[HistorySummarizer()])
        outputs = fill(manager, steps=6, lines=40)
        await manager.compact()
        body = (await manager.render()).payload
        ids = named_ids(body)
        assert len(ids) == 1
        covered = [o for o in outputs if not manager.working.is_current(o)]
        assert covered
        result = await manager.handle_tool_call("context_expand", {"id": ids[0]})
        assert "restored" in result
        assert all(manager.working.is_current(o) for o in covered)
        assert validate((await manager.render()).payload, "openai") == []

    def test_an_expanded_piece_is_shown_in_full_already(
        self, make: Callable[..., ContextManager]
    ) -> None:
        """Asking twice says there is nothing more to restore, and changes nothing."""
        manager = make()
        outputs = fill(manager)
        manager.render_sync()
        manager.handle_tool_call_sync("context_expand", {"id": outputs[0]})
        audit = manager.working.audit()
        again = manager.handle_tool_call_sync("context_expand", {"id": outputs[0]})
        assert "shown in full already" in again
        assert manager.working.audit() == audit


class TestModelMistakes:
    """What the model gets wrong is answered in text, and nothing changes."""

    @pytest.mark.parametrize(
        ("name", "arguments", "fragment"),
        [
            ("context_shrink", {}, "'context_shrink' is not a context tool"),
            ("context_compact", {}, "'context_compact' is not a context tool"),
            ("context_expand", "{not json", "the arguments are not JSON"),
            ("context_expand", "[1, 2]", "a JSON list, not an object"),
            ("context_expand", "", "the argument 'id' is missing"),
            ("context_expand", None, "the argument 'id' is missing"),
            ("context_expand", {"id": 7}, "'id' must be a string, got 7"),
            ("context_expand", {"id": ["a"]}, "'id' must be a string"),
            ("context_expand", {"id": "  "}, "'id' is empty"),
            ("context_expand", {"id": "x" * 10_000}, "'id' is 10,000 characters"),
            ("context_expand", "x" * 100_000, "100,000 characters long"),
            ("context_expand", {"id": "a", "depth": 2}, "takes no argument 'depth'"),
            ("context_expand", b"\xff\xfe", "not UTF-8"),
            ("context_expand", "[" * 10_000, "not JSON"),
            ("context_expand", {"id": "no-such-node"}, "no node has id 'no-such-node'"),
            ("context_expand", {"id": "\ud800"}, "no node has id '\\ud800'"),
        ],
    )
    def test_refused_with_a_readable_reason(
        self, name: str, arguments: object, fragment: str, make: Callable[..., ContextManager]
    ) -> None:
        """The result names the problem; the working graph and the state stay as they were."""
        manager = make()
        fill(manager)
        manager.render_sync()
        audit, version = manager.working.audit(), manager.working.version
        result = manager.handle_tool_call_sync(name, arguments)  # type: ignore[arg-type]
        assert fragment in result
        assert len(result) < 400
        result.encode("utf-8")  # always sendable
        assert (manager.working.audit(), manager.working.version) == (audit, version)

    def test_a_pristine_id_in_view_has_nothing_to_restore(
        self, make: Callable[..., ContextManager]
    ) -> None:
        """The id of a node never compacted is answered, not restored."""
        manager = make()
        fill(manager)
        user = next(n.id for n in manager.raw if n.kind == "user")
        assert "shown in full already" in manager.handle_tool_call_sync(
            "context_expand", {"id": user}
        )


class TestRedaction:
    """What was redacted for safety never comes back through context_expand."""

    async def test_a_masked_redacted_output_comes_back_redacted(
        self, make: Callable[..., ContextManager]
    ) -> None:
        """The restore stops at the redacted copy; the secret stays out of every request."""
        secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
        manager = make(redact_secrets=True)
        manager.add_system("You are a careful coding agent.")
        manager.add_user("Deploy it.")
        manager.add_assistant("Reading.", tool_calls=[{"id": "c0", "name": "bash"}])
        output = manager.add_tool_result("c0", f"{_log(0)}\ntoken {secret}")
        manager.add_user("Go on.")
        await manager.render()  # redacts the output
        await manager.compact()  # masks the redacted copy
        first = (await manager.render()).payload
        assert secret not in json.dumps(first)
        named = named_ids(first)
        assert len(named) == 1
        assert manager.working.view.roots(named[0]) == (output,)
        result = await manager.handle_tool_call("context_expand", {"id": named[0]})
        assert "restored" in result
        second = json.dumps((await manager.render()).payload)
        assert secret not in second
        assert "line 5 of run 0" in second
        assert not manager.working.is_current(output)  # its redacted copy stands


class TestBudget:
    """A restore must fit under the budget beside what every request keeps."""

    def test_too_big_is_refused_with_its_size(self, make: Callable[..., ContextManager]) -> None:
        """An output larger than the room left is refused, naming tokens, and nothing changes."""
        manager = make(budget=2_500)
        outputs = fill(manager, steps=3, lines=600)
        manager.render_sync()
        audit = manager.working.audit()
        result = manager.handle_tool_call_sync("context_expand", {"id": outputs[0]})
        assert result.startswith("context_expand refused:")
        size = manager.raw.tokens(outputs[0])
        assert f"stands for {size:,} tokens" in result
        assert "run the tool again for just the part you need" in result
        assert manager.working.audit() == audit
        assert not manager.working.is_current(outputs[0])

    async def test_a_summary_too_big_comes_back_one_level(
        self, make: Callable[..., ContextManager]
    ) -> None:
        """What a summary was made from comes back (outputs still masked) when the whole cannot."""
        manager = make(
            budget=3_000, pipeline=[ObservationMasker(keep_turns=1), HistorySummarizer()]
        )
        outputs = fill(manager, steps=6)
        await manager.compact()
        ids = named_ids((await manager.render()).payload)
        assert len(ids) == 1  # the summary's
        summarized = [o for o in outputs if not manager.working.is_current(o)]
        result = await manager.handle_tool_call("context_expand", {"id": ids[0]})
        assert result.startswith("context_expand: restored")
        assert "came back one level" in result
        after = await manager.render()
        assert after.tokens <= 3_000
        named = named_ids(after.payload)
        assert set(summarized) & set(named)  # each masked output names its own id
        assert validate(after.payload, "openai") == []

    def test_a_refused_call_leaves_the_next_request_as_it_would_be(
        self, make: Callable[..., ContextManager]
    ) -> None:
        """Measuring the room moves no renderer state (kept drops, cache marks)."""
        bodies = []
        for call in (False, True):
            manager = make(format="anthropic", cache_breakpoints=True, budget=2_500, compact_to=1.0)
            outputs = fill(manager, steps=3, lines=600)
            manager.render_sync()
            if call:
                result = manager.handle_tool_call_sync("context_expand", {"id": outputs[0]})
                assert result.startswith("context_expand refused:")
            manager.add_user("Next.")
            bodies.append(manager.render_sync().payload)
        assert bodies[0] == bodies[1]

    def test_what_fits_stays_under_the_budget(self, make: Callable[..., ContextManager]) -> None:
        """After a restore that fits, the next request is within the budget."""
        manager = make(budget=3_000)
        outputs = fill(manager, steps=4, lines=200)
        manager.render_sync()
        assert "restored" in manager.handle_tool_call_sync("context_expand", {"id": outputs[0]})
        result = manager.render_sync()
        assert result.tokens <= 3_000
        assert manager.working.is_current(outputs[0])


class TestPins:
    """What came back is left alone for `expand_pin_turns` user turns, then released."""

    async def test_pinned_then_masked_again(self, make: Callable[..., ContextManager]) -> None:
        """Compaction skips the restored output while pinned and takes it after."""
        manager = make(expand_pin_turns=2)
        outputs = fill(manager)
        await manager.render()
        await manager.handle_tool_call("context_expand", {"id": outputs[0]})
        for turn in range(2):
            await manager.compact()
            assert manager.working.is_current(outputs[0]), turn
            assert (await manager.render()).tokens <= 4_000
            manager.add_user(f"Next step {turn}.")
        await manager.compact()
        assert not manager.working.is_current(outputs[0])
        # Masked again: the same placeholder, so the same id, names it again.
        assert outputs[0] in named_ids((await manager.render()).payload)

    async def test_no_pin_with_zero_turns(self, make: Callable[..., ContextManager]) -> None:
        """With `expand_pin_turns=0` the next compaction may take it again at once."""
        manager = make(expand_pin_turns=0)
        outputs = fill(manager)
        await manager.render()
        await manager.handle_tool_call("context_expand", {"id": outputs[0]})
        await manager.compact()
        assert not manager.working.is_current(outputs[0])


class TestCompactTool:
    """context_compact runs a manual compaction and says what it did."""

    async def test_compacts_now(self, make: Callable[..., ContextManager]) -> None:
        """The result names the edits and the size before and after."""
        manager = make(budget=None, agent_tools=("expand", "compact"))
        fill(manager)
        before = manager.working.total_tokens
        result = await manager.handle_tool_call(
            "context_compact", {"instructions": "keep the test names"}
        )
        assert result.startswith("context_compact: 1 edit(s) applied")
        assert manager.working.total_tokens < before

    def test_bad_instructions(self, make: Callable[..., ContextManager]) -> None:
        """Instructions that are not a string are refused."""
        manager = make(agent_tools=("compact",))
        result = manager.handle_tool_call_sync("context_compact", {"instructions": 3})
        assert "'instructions' must be a string" in result


class TestPersistence:
    """A restore and its pins are kept in the session file."""

    def test_reopen_keeps_the_restore_and_the_pin(
        self, tmp_path: Path, make: Callable[..., ContextManager]
    ) -> None:
        """A reopened session shows the restored output and still holds its pin."""
        path = tmp_path / "session.db"
        options: dict[str, Any] = {
            "counter": WordCounter(),
            "budget": 4_000,
            "agent_tools": True,
            "pipeline": [ObservationMasker(keep_turns=1)],
        }
        manager = open_manager(path, **options)
        outputs = fill(manager)
        manager.render_sync()
        manager.handle_tool_call_sync("context_expand", {"id": outputs[0]})
        body = manager.render_sync().payload
        audit = manager.working.audit()
        manager.close()
        again = open_manager(path, **options)
        try:
            assert again.working.audit() == audit
            assert again.working.is_current(outputs[0])
            assert again.render_sync().payload == body
            again.add_user("One more.")
            again.render_sync()
            assert again.working.is_current(outputs[0])  # still pinned
        finally:
            again.close()


class TestReplay:
    """`replay(agent_tools=True)` and `context-graph replay --agent-tools`."""

    def test_replay_sends_the_tool_and_names_ids(self) -> None:
        """Every replayed request is valid with the tool in it, and compacted pieces name ids."""
        events = load_sessions(EXAMPLE_SESSION)[0].events
        report = replay(events, budget=4_000, agent_tools=True)
        assert report.calls
        assert report.invalid_calls == 0
        assert report.last_request is not None
        assert tool_names(report.last_request, "openai") == ["context_expand"]
        assert named_ids(report.last_request)

    def test_cli_flag(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """`replay --agent-tools` writes a last request carrying context_expand."""
        out = tmp_path / "last.json"
        code = main(["replay", "--agent-tools", "--budget", "4000", "-o", str(out)])
        _, err = capsys.readouterr()
        assert code == 0, err
        body = json.loads(out.read_text(encoding="utf-8"))
        assert tool_names(body, "openai") == ["context_expand"]
        assert validate(body, "openai") == []

    def test_cli_without_the_flag_sends_no_agent_tool(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Without the flag the request is as before: no tools field."""
        out = tmp_path / "last.json"
        assert main(["replay", "--budget", "4000", "-o", str(out)]) == 0
        capsys.readouterr()
        assert "tools" not in json.loads(out.read_text(encoding="utf-8"))


class TestHints:
    """With the tool on, every compacted piece names the exact id to pass."""

    async def test_truncated_output_names_its_id(self, make: Callable[..., ContextManager]) -> None:
        """A truncated copy ends with the hint naming the output it came from."""
        manager = make(budget=None, pipeline=[ToolOutputTruncator(max_tokens=200)])
        outputs = fill(manager, steps=1)
        manager.add_user("and")
        manager.add_user("and again")
        await manager.compact()
        copy, _ = manager.working.view.overlay.resolve(outputs[0])
        assert manager.working[copy].text.endswith(
            f"[call context_expand with id {outputs[0]} to restore the whole output]"
        )

    async def test_distilled_output_names_its_id(self, make: Callable[..., ContextManager]) -> None:
        """A distillate ends with the hint naming the output it came from."""
        manager = make(budget=None, pipeline=[Distiller(level="heavy")])
        outputs = fill(manager, steps=1)
        await manager.compact()
        copy, _ = manager.working.view.overlay.resolve(outputs[0])
        assert copy != outputs[0]
        assert manager.working[copy].text.endswith(
            f"[call context_expand with id {outputs[0]} to restore the whole output]"
        )
        assert "restored" in await manager.handle_tool_call("context_expand", {"id": outputs[0]})

    async def test_a_summary_names_an_id_that_restores_it(
        self, make: Callable[..., ContextManager]
    ) -> None:
        """The summary's hint names the first node it abstracts, which resolves to it."""
        manager = make(budget=None, pipeline=[HistorySummarizer()])
        fill(manager, steps=4, lines=20)
        await manager.compact()
        summary = next(
            i for i in manager.working.current_ids() if manager.working[i].kind == "summary"
        )
        node = manager.working[summary]
        assert node.text.endswith(
            f"[call context_expand with id {node.abstracts[0]} to restore the turns this "
            "summary stands for]"
        )
        assert manager.working.view.overlay.resolve(node.abstracts[0])[0] == summary

    def test_the_mask_placeholder_without_the_tool_names_no_id(self) -> None:
        """Off, the placeholder gives the gist and points at no tool the model lacks."""
        manager = ContextManager(counter=WordCounter(), budget=4_000, policy=Policy())
        outputs = fill(manager)
        manager.render_sync()
        copy, _ = manager.working.view.overlay.resolve(outputs[0])
        text = manager.working[copy].text
        assert text.startswith("[output of bash masked: 300 lines, ")
        assert outputs[0] not in text
        assert "expand" not in text
