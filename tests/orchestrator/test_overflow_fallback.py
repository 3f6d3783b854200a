"""The overflow fallback: a request degraded step by step instead of refused.

Seed 004: when even compaction cannot bring the request under the budget, strip media,
cut tool outputs to a minimum, then shorten the pinned content with a notice; only then
fail. Before, a system prompt alone over the budget refused every call.
"""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph.errors import BudgetExceededError
from context_graph.graph.anchors import SUMMARY_HEADER
from context_graph.graph.content import ImagePart, TextPart, ThinkingPart
from context_graph.validate import validate
from orchestrator import ContextManager, Recorder
from orchestrator.compaction.overflow import MIN_HEAD_CHARS
from orchestrator.policy import Policy

HUGE_SYSTEM = "You are a careful agent. " + " ".join(f"Rule {n}: be exact." for n in range(600))
PNG = "iVBORw0KGgo" + "A" * 40_000


def _text(payload: object) -> str:
    return json.dumps(payload, ensure_ascii=False)


class TestOverflow:
    def test_a_system_prompt_over_the_budget_is_cut_with_a_notice(self) -> None:
        """The request fits with the system prompt's head and a notice, and the bus says so."""
        manager = ContextManager(budget=600, policy=Policy())
        manager.add_system(HUGE_SYSTEM)
        manager.add_user("Fix the parser.")
        with Recorder(manager.bus) as recorder:
            result = manager.render_sync()
        assert result.tokens <= 600
        body = _text(result.payload)
        assert "You are a careful agent. Rule 0: be exact." in body
        assert "over its token budget" in body
        assert "Fix the parser." in body
        (event,) = [e for e in recorder.events if e.name == "overflow_fallback"]
        assert event.payload["steps"] == ("pinned",)
        assert event.payload["required"] > 600
        # Nothing was recorded: the record and the view keep the whole prompt.
        assert manager.raw[manager.raw.transcript()[0]].text == HUGE_SYSTEM
        assert HUGE_SYSTEM in _text(manager.render_sync(budget=20_000).payload)

    def test_a_cut_request_fills_its_budget(self) -> None:
        """The pinned heads are as long as the budget allows, not halved past it.

        Several system prompts of different sizes over a 1,500-token budget: the longest
        give up the most, and the request lands within a few percent of the budget.
        """
        manager = ContextManager(budget=1_500, policy=Policy())
        for size in (2_400, 600, 40, 1_200):
            manager.add_system(" ".join(f"Rule {n}: check {size}." for n in range(size)))
        manager.add_user("Fix the parser.")
        result = manager.render_sync()
        assert 0.9 * 1_500 <= result.tokens <= 1_500
        assert "Rule 39: check 40." in _text(result.payload)  # the short one stays whole

    def test_media_goes_first(self) -> None:
        """An image the budget cannot hold is left out with a notice before any text is cut."""
        manager = ContextManager(format="anthropic", budget=700, policy=Policy())
        manager.add_system("You describe screenshots.")
        manager.add_user(
            [TextPart(text="What does this show?"), ImagePart(media_type="image/png", data=PNG)]
        )
        with Recorder(manager.bus) as recorder:
            result = manager.render_sync()
        body = _text(result.payload)
        assert PNG not in body and "[image omitted" in body
        assert "What does this show?" in body and "You describe screenshots." in body
        (event,) = [e for e in recorder.events if e.name == "overflow_fallback"]
        assert event.payload["steps"] == ("media",)

    def test_a_budget_below_the_minimum_still_refuses(self) -> None:
        """When even the shortest heads do not fit, the original refusal stands."""
        manager = ContextManager(budget=20, policy=Policy())
        manager.add_system(HUGE_SYSTEM)
        manager.add_user("Fix the parser. " * 100)
        with pytest.raises(BudgetExceededError):
            manager.render_sync()

    def test_a_long_tool_loop_keeps_its_newest_step_and_says_how_many_went(self) -> None:
        """A turn of several steps over a budget its cut heads cannot meet: the earlier
        steps go whole (each call with its result), the newest stays, and the turn says
        so. Before, the floor kept every step of the latest turn and the call was refused
        (a sub-agent's first request with its whole tool loop, at a quarter of its size)."""
        # No pipeline: the fallback alone (a pipeline summarizes finished steps first).
        manager = ContextManager(budget=420, policy=Policy(pipeline=[]))
        manager.add_user("Find where the config is loaded and fix the path handling.")
        for step in range(6):
            manager.add_assistant(
                f"Step {step}: I will look at module {step} next. " + "Reasoning. " * 40,
                tool_calls=[{"id": f"c{step}", "name": "read", "arguments": {"p": f"m{step}"}}],
            )
            manager.add_tool_result(f"c{step}", f"contents of m{step} " * 80)
        with Recorder(manager.bus) as recorder:
            result = manager.render_sync()
        assert result.tokens <= 420
        assert validate(result.payload, "openai") == []
        body = _text(result.payload)
        assert "Step 5: I will look at module 5 next." in body and "contents of m5" in body
        said = re.search(r"\[(\d+) earlier steps? of this turn omitted", body)
        assert said is not None
        # The oldest steps went, as many as the notice says, each with its result.
        gone = int(said.group(1))
        kept = [step for step in range(6) if f"Step {step}:" in body]
        assert kept == list(range(gone, 6)) and gone >= 1
        assert all(f"contents of m{step}" not in body for step in range(gone))
        assert "Find where the config is loaded" in body
        (event,) = [e for e in recorder.events if e.name == "overflow_fallback"]
        assert event.payload["steps"][-1] == "steps"

    def test_as_few_steps_go_as_let_the_request_fit(self) -> None:
        """Short steps, nothing to cut: the oldest go until the rest fits, no more."""
        manager = ContextManager(budget=250, policy=Policy(pipeline=[]))
        manager.add_user("Check every module.")
        for step in range(12):
            manager.add_assistant(
                f"Step {step}.", tool_calls=[{"id": f"c{step}", "name": "read", "arguments": {}}]
            )
            manager.add_tool_result(f"c{step}", f"module {step} is fine")
        result = manager.render_sync()
        body = _text(result.payload)
        said = re.search(r"\[(\d+) earlier steps? of this turn omitted", body)
        assert said is not None and 1 <= int(said.group(1)) < 11
        gone = int(said.group(1))
        assert [s for s in range(12) if f"Step {s}." in body] == list(range(gone, 12))
        # One step more would not have fit.
        manager.add_assistant("Step 12.", tool_calls=[{"id": "c12", "name": "read"}])
        manager.add_tool_result("c12", "module 12 is fine")
        later = re.search(r"\[(\d+) earlier steps?", _text(manager.render_sync().payload))
        assert later is not None and int(later.group(1)) > gone

    def test_a_summary_left_out_with_the_steps_is_not_counted_as_a_step(self) -> None:
        """The default pipeline summarized the loop's finished steps; a much smaller budget
        then leaves that summary out too. The turn says how many steps went and that
        their summary went with them (before: the summary was counted as one more step).
        """
        manager = ContextManager(budget=1_500)
        manager.add_user("Find where the config is loaded and fix the path handling.")
        for step in range(30):
            manager.add_assistant(
                f"Step {step}: I will look at module {step} next.",
                tool_calls=[{"id": f"c{step}", "name": "read", "arguments": {"p": f"m{step}"}}],
            )
            manager.add_tool_result(f"c{step}", f"contents of m{step} " * 30)
            manager.render_sync()
        assert SUMMARY_HEADER in _text(manager.render_sync().payload)
        result = manager.render_sync(budget=200)
        # The steps the summary does not stand for, as the working view holds them.
        units = manager.working.view.units()
        assert [u.kind for u in units[:2]] == ["user", "summary"]
        steps = sum(u.kind == "assistant" for u in units)
        body = _text(result.payload)
        assert result.tokens <= 200 and SUMMARY_HEADER not in body
        said = re.search(
            r"\[(\d+) earlier steps? of this turn omitted \(each with its tool calls and their"
            r" results\), and the summary of the steps before them:",
            body,
        )
        assert said is not None
        shown = [step for step in range(30) if f"Step {step}:" in body]
        assert shown == list(range(min(shown), 30))
        assert int(said.group(1)) == steps - len(shown) >= 1

    @pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini", "responses"])
    def test_the_newest_step_goes_when_only_the_requests_heads_fit(self, provider: str) -> None:
        """A long first request and one step: a file read whose call and result, even at
        their shortest heads, leave no room beside the request's (a Claude Code session
        of reads at 181 tokens). The step goes too; the turn says every step went and
        which tool the newest called, and the request is sent. Before, the call was
        refused though the least issue 31 asks for (the request's head) fits."""
        manager = ContextManager(format=provider, budget=180, policy=Policy(pipeline=[]))
        manager.add_user(
            "Read e2e-tests/conftest.py in four ways with the Read tool. "
            + "Then say what each read showed. " * 15
        )
        manager.add_assistant(
            "I will read the entire file first. " + "Then the parts. " * 20,
            tool_calls=[
                {"id": "r1", "name": "Read", "arguments": {"file_path": "/repo/conftest.py"}}
            ],
        )
        manager.add_tool_result("r1", "".join(f"{n}\tfixture_{n} = make({n})\n" for n in range(90)))
        with Recorder(manager.bus) as recorder:
            result = manager.render_sync()
        assert result.tokens <= 180
        assert validate(result.payload, provider) == []
        body = _text(result.payload)
        assert "Read e2e-tests/conftest.py in four ways" in body
        assert "fixture_0" not in body and "I will read the entire file" not in body
        assert (
            "[every step of this turn so far omitted (1 step, each with its tool calls and"
            " their results; the latest called Read): the request was over its token budget]"
        ) in body
        (event,) = [e for e in recorder.events if e.name == "overflow_fallback"]
        assert event.payload["steps"][-1] == "newest"
        # Nothing was recorded: with room, the step is sent whole.
        whole = _text(manager.render_sync(budget=100_000).payload)
        assert "fixture_89 = make(89)" in whole and "omitted" not in whole

    def test_earlier_steps_and_their_summary_go_with_the_newest(self) -> None:
        """Several steps, a summary of the older ones, and a budget that holds only the
        request's head: the count is of the steps, not the summary, and says it went."""
        manager = ContextManager(budget=1_500)
        manager.add_user("Find where the config is loaded and fix the path handling.")
        for step in range(30):
            manager.add_assistant(
                f"Step {step}: I will look at module {step} next. " + "Because. " * 30,
                tool_calls=[{"id": f"c{step}", "name": "read", "arguments": {"p": f"m{step}"}}],
            )
            manager.add_tool_result(f"c{step}", f"contents of m{step} " * 60)
            manager.render_sync()
        result = manager.render_sync(budget=150)
        # The steps the summary does not stand for, as the working view holds them.
        units = manager.working.view.units()
        assert [u.kind for u in units[:2]] == ["user", "summary"]
        steps = sum(u.kind == "assistant" for u in units)
        body = _text(result.payload)
        assert result.tokens <= 150 and "Step " not in body and SUMMARY_HEADER not in body
        assert (
            f"[every step of this turn so far omitted ({steps} steps, each with its tool calls"
            " and their results; the latest called read), and the summary of the steps before"
            " them: the request was over its token budget]"
        ) in body

    def test_a_pinned_newest_step_stays_and_the_call_is_refused(self) -> None:
        """A step the user pinned is never left out: when only leaving it out would let
        the request fit, the call is refused as before."""
        manager = ContextManager(budget=120, policy=Policy(pipeline=[]))
        manager.add_user("Read the file. " * 30)
        manager.add_assistant(
            "Reading it. " * 40,
            tool_calls=[{"id": "r1", "name": "Read", "arguments": {"file_path": "/a"}}],
            pinned=True,
        )
        manager.add_tool_result("r1", "line of the file\n" * 200)
        with pytest.raises(BudgetExceededError):
            manager.render_sync()

    def test_a_harness_notice_is_cut_like_a_tool_output(self) -> None:
        """A harness that sends tool output in the user's role (SWE-agent's observations)
        gets it cut to its head; before, only the request and tool results were cut, and
        a long observation after the request refused the call."""
        manager = ContextManager(budget=500, policy=Policy())
        manager.add_system("You solve CTF challenges.")
        manager.add_user("Solve the challenge named Rock.")
        manager.add_assistant("Let me decompile it.\n```\ndecompile rock\n```")
        manager.add_user("undefined8 FUN_00401260(void) { " * 300, notice=True)
        result = manager.render_sync()
        assert result.tokens <= 500
        body = _text(result.payload)
        assert "undefined8 FUN_00401260(void)" in body and "over its token budget" in body

    def test_a_cut_assistant_message_keeps_its_thinking_first(self) -> None:
        """Cutting an assistant message's text leaves its signed thinking where it was,
        before the text, as Anthropic requires of a tool loop's assistant turns."""
        manager = ContextManager(format="anthropic", budget=450, policy=Policy())
        manager.add_user("Check the build.")
        manager.add_assistant(
            [
                ThinkingPart(thinking="The build log first.", signature="sig-1"),
                TextPart(text="I will read the build log now. " + "Because. " * 300),
            ],
            tool_calls=[{"id": "b1", "name": "bash", "arguments": {"cmd": "make"}}],
        )
        manager.add_tool_result("b1", "make: *** [all] Error 2 " * 200)
        result = manager.render_sync()
        assert result.tokens <= 450
        assert validate(result.payload, "anthropic") == []
        (assistant,) = [m for m in result.payload["messages"] if m["role"] == "assistant"]
        kinds = [block["type"] for block in assistant["content"]]
        assert kinds[0] == "thinking" and kinds.index("text") < kinds.index("tool_use")
        assert "over its token budget" in _text(assistant)

    @pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini", "responses"])
    def test_a_file_written_in_the_latest_step_is_cut_in_its_call(self, provider: str) -> None:
        """The latest step writes a file larger than the budget (a 25,000-character spec
        written with `Write`, as in a Claude Code session): the call's content is cut to
        its head with a notice, its path kept, the arguments still an object, and the
        request is sent. Before, only texts were cut: a call's arguments have none, so
        the call was refused however the rest was cut."""
        manager = ContextManager(format=provider, budget=1_500, policy=Policy())
        manager.add_user("Write the specification to SPEC.md.")
        spec = "".join(f"## Section {n}\nThe command must do {n} things.\n" for n in range(700))
        manager.add_assistant(
            "Writing it.",
            tool_calls=[
                {
                    "id": "w1",
                    "name": "Write",
                    "arguments": {"file_path": "/repo/SPEC.md", "content": spec},
                }
            ],
        )
        manager.add_tool_result("w1", "File created successfully at: /repo/SPEC.md")
        with Recorder(manager.bus) as recorder:
            result = manager.render_sync()
        assert result.tokens <= 1_500
        assert validate(result.payload, provider) == []
        body = _text(result.payload)
        assert "/repo/SPEC.md" in body and "## Section 0" in body
        assert "## Section 699" not in body and "over its token budget" in body
        assert "File created successfully" in body
        (event,) = [e for e in recorder.events if e.name == "overflow_fallback"]
        assert "inputs" in event.payload["steps"]
        # The record keeps the whole call: with room, it is sent whole.
        assert "The command must do 699 things." in _text(
            manager.render_sync(budget=100_000).payload
        )

    def test_a_custom_calls_raw_input_is_cut_as_text(self) -> None:
        """A Responses custom call (`apply_patch`) takes raw text: its head is sent as
        text, not wrapped in an object."""
        manager = ContextManager(format="responses", budget=900, policy=Policy())
        manager.add_user("Apply the patch.")
        patch = "*** Begin Patch\n" + "".join(f"+line {n}\n" for n in range(2_000))
        manager.add_assistant(
            "Patching.",
            tool_calls=[
                {
                    "id": "p1",
                    "name": "apply_patch",
                    "arguments": patch,
                    "meta": {"responses_type": "custom_tool_call"},
                }
            ],
        )
        manager.add_tool_result("p1", "Done.", meta={"responses_type": "custom_tool_call_output"})
        result = manager.render_sync()
        assert result.tokens <= 900
        assert validate(result.payload, "responses") == []
        (call,) = [i for i in result.payload["input"] if i.get("type") == "custom_tool_call"]
        assert call["input"].startswith("*** Begin Patch\n+line 0")
        assert "over its token budget" in call["input"] and "+line 1999" not in call["input"]


@settings(max_examples=100, deadline=None)
@given(
    system=st.integers(min_value=0, max_value=3_000),
    user=st.integers(min_value=1, max_value=3_000),
    outputs=st.lists(st.integers(min_value=0, max_value=6_000), max_size=4),
    written=st.lists(st.integers(min_value=0, max_value=8_000), max_size=4),
    budget=st.integers(min_value=150, max_value=2_500),
    provider=st.sampled_from(["openai", "anthropic"]),
)
def test_a_degraded_request_fits_or_the_call_is_refused(
    system: int, user: int, outputs: list[int], written: list[int], budget: int, provider: str
) -> None:
    """Any sizes and any number of tool steps in the latest turn: the request is valid
    and under its budget, or refused; never over it, and never refused where the request
    and the system prompt cut to their shortest heads fit with room to spare (the
    steps, the newest too, are left out before a refusal)."""
    manager = ContextManager(format=provider, budget=budget, policy=Policy())
    if system:
        manager.add_system("s " * system)
    manager.add_user("u " * user)
    for step, output in enumerate(outputs):
        # A step may also write a file: its content is the call's argument.
        size = written[step] if step < len(written) else 0
        arguments = {"p": "a", "content": "w " * size} if size else {"p": "a"}
        manager.add_assistant(
            "Reading. " * (1 + output // 20),
            tool_calls=[{"id": f"c{step}", "name": "read", "arguments": arguments}],
        )
        manager.add_tool_result(f"c{step}", "o " * output)
    try:
        result = manager.render_sync()
    except BudgetExceededError:
        # Two texts cut to MIN_HEAD_CHARS (about a token per two characters here), each
        # with its notice, the notice of the steps left out, and the request's own
        # overhead: well under 350 tokens.
        assert budget < 350, f"refused at {budget} with heads of {MIN_HEAD_CHARS} characters"
        return
    assert result.tokens <= budget
    assert validate(result.payload, provider) == []
