"""Rulers shrunk by the light distiller and, where they cost tokens, by the truncator."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph import ContextGraph
from context_graph.graph.nodes import AnswerNode
from context_graph.importers import load_sessions
from context_graph.testing import WordCounter
from context_graph.tokens.counting import default_counter
from processors import ProcessorContext, Replace
from processors.distill import distill_text
from processors.rulers import RULER_LENGTH, shrink_rulers
from processors.truncate import ToolOutputTruncator, truncate_text
from tests.processors.test_truncate import decode

TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "traces"
COUNT = default_counter().count
#: The rule Vitest and Jest draw around failed tests (three cl100k tokens a character).
RULE = "\u23af"
LIGHT = "\u2500"
DOUBLE = "\u2550"
#: Every ruler character, ASCII first, then box drawing.
RULER_CHARS = "=-_~*#\u2500\u2501\u2550\u254c\u2504\u2508\u23af\u2015"


def vitest_failure(index: int, failures: int) -> str:
    """One failed test as Vitest prints it: rule, header, assertion, code frame."""
    return (
        f"\n FAIL  src/core/prompts.test.ts > substitution > case {index}\n"
        f"AssertionError: expected 'a{index} (disabled)' to contain 'a{index}'\n\n"
        f" \u276f src/core/prompts.test.ts:{80 + index}:20\n"
        f"     {79 + index}|     const prompt = render(config);\n"
        f"     {80 + index}|     expect(prompt).toContain(`case-{index}-marker`);\n"
        "       |                    ^\n\n"
        f"{RULE * 200}[{index}/{failures}]{RULE}\n"
    )


def vitest_output(failures: int) -> str:
    head = (
        "> vitest run src/core/prompts.test.ts\n\n"
        f" \u276f src/core/prompts.test.ts ({failures} tests | {failures} failed) 6ms\n\n"
        f"{RULE * 100} Failed Tests {failures} {RULE * 100}\n"
    )
    body = "".join(vitest_failure(i, failures) for i in range(1, failures + 1))
    return f"{head}{body}\n Test Files  1 failed (1)\nExit Code: 1\n"


class TestShrinkRulers:
    @pytest.mark.parametrize("char", list(RULER_CHARS))
    def test_every_ruler_character_shrinks_to_ten(self, char: str) -> None:
        """A run of more than ten shrinks to ten; shorter runs stay."""
        text = f"{char * 40} section {char * 9}\n{char * 10}\n{char * 11}"
        assert shrink_rulers(text) == (
            f"{char * 10} section {char * 9}\n{char * 10}\n{char * 10}",
            2,
        )

    def test_text_without_rulers_is_returned_as_is(self) -> None:
        text = "a = b - c\n.............. dots count tests\n=-=-=-=-=-=-=-=-"
        assert shrink_rulers(text) == (text, 0)
        assert shrink_rulers("", COUNT) == ("", 0)

    def test_with_a_counter_only_costly_rulers_shrink(self) -> None:
        """`=` x 200 costs a few tokens and stays; U+23AF x 200 costs about 600 and shrinks."""
        text = f"{'=' * 200}\n{RULE * 200}\n{'-' * 200}"
        shrunk, count = shrink_rulers(text, COUNT)
        assert count == 1
        assert shrunk == f"{'=' * 200}\n{RULE * RULER_LENGTH}\n{'-' * 200}"
        assert COUNT(shrunk) < COUNT(text) - 500

    @settings(max_examples=200, deadline=None)
    @given(
        st.lists(
            st.one_of(
                st.text(max_size=12),
                st.tuples(st.sampled_from(RULER_CHARS), st.integers(1, 60)).map(
                    lambda t: t[0] * t[1]
                ),
            ),
            max_size=12,
        ).map("".join)
    )
    def test_shrinking_is_idempotent_and_leaves_no_long_ruler(self, text: str) -> None:
        """Shrunk once is shrunk for good; no run of a ruler character outlives ten."""
        shrunk, count = shrink_rulers(text)
        assert shrink_rulers(shrunk) == (shrunk, 0)
        assert not re.search(f"([{re.escape(RULER_CHARS)}])\\1{{10,}}", shrunk)
        assert (count == 0) == (shrunk == text)
        assert shrunk.count("\n") == text.count("\n")

    @settings(max_examples=200, deadline=None)
    @given(
        st.recursive(
            st.text(alphabet=st.sampled_from(f'ab"\\\n{RULER_CHARS}'), max_size=40) | st.integers(),
            lambda inner: (
                st.lists(inner, max_size=4)
                | st.dictionaries(st.text(alphabet=f"ab{RULE}", max_size=12), inner, max_size=4)
            ),
            max_leaves=8,
        ),
        st.sampled_from([None, 2]),
    )
    def test_json_stays_valid(self, value: object, indent: int | None) -> None:
        """A ruler's characters are never JSON syntax: shrunk JSON still parses."""
        text = json.dumps(value, indent=indent, ensure_ascii=False)
        shrunk, _ = shrink_rulers(text)
        json.loads(shrunk)


class TestTruncatorShrinksCostlyRulers:
    def test_shrinking_alone_can_be_enough(self) -> None:
        """Vitest's rules take most of the tokens: shrunk, every failure fits whole."""
        text = vitest_output(failures=2)
        limit = COUNT(text) // 3
        out = truncate_text(text, count=COUNT, max_tokens=limit)
        assert out is not None and out.shrunk == 4
        assert COUNT(out.text) <= limit
        assert "omitted" not in out.text
        assert out.text == shrink_rulers(text, COUNT)[0]
        for index in (1, 2):
            assert f"expect(prompt).toContain(`case-{index}-marker`);" in out.text

    def test_a_cut_after_shrinking_counts_the_shrunk_text(self) -> None:
        """When shrinking is not enough, the lines cut are of the shrunk text, and marked."""
        text = vitest_output(failures=12)
        shrunk = shrink_rulers(text, COUNT)[0]
        limit = COUNT(shrunk) // 2
        out = truncate_text(text, count=COUNT, max_tokens=limit, policy="errors_first")
        assert out is not None and out.shrunk == 14
        assert COUNT(out.text) <= limit
        # Every byte outside a marker is the shrunk text's, and each marker's lines and
        # tokens are those of the span of the shrunk text it stands for.
        assert decode(shrunk, out.text)
        assert RULE * (RULER_LENGTH + 1) not in out.text

    def test_a_text_that_fits_keeps_its_rulers(self) -> None:
        text = vitest_output(failures=1)
        assert truncate_text(text, count=COUNT, max_tokens=COUNT(text)) is None

    async def test_the_proposal_records_the_shrunk_rulers(self) -> None:
        graph = ContextGraph()
        graph.add_user("run the tests")
        graph.add_assistant(tool_calls=[{"id": "c1", "name": "run_shell_command", "arguments": {}}])
        graph.add_tool_result("c1", vitest_output(failures=2))
        ctx = ProcessorContext.for_graph(graph)
        limit = COUNT(vitest_output(failures=2)) // 3
        proposal = await ToolOutputTruncator(max_tokens=limit).propose(
            [graph[i] for i in graph.transcript() if isinstance(graph[i], AnswerNode)], ctx
        )
        (edit,) = proposal.edits
        assert isinstance(edit, Replace)
        assert edit.replacement.meta["truncated"]["shrunk_rulers"] == 4
        assert "case-2-marker" in edit.replacement.text

    async def test_a_recorded_vitest_failure_keeps_its_code_frames(self) -> None:
        """Gemini CLI ran Vitest: at a 1,500-token cap, both failures' frames stay.

        Before rulers were shrunk, the three rules (about 1,450 of the output's 2,650
        tokens) left room for the first failure only.
        """
        path = TRACES / "gemini_cli" / "google-gemini_gemini-cli" / "NotFollowingUserIntent.json"
        if not path.exists():
            pytest.skip("gemini_cli traces not present")
        (session,) = load_sessions(path)
        graph = ContextGraph()
        graph.ingest(session.events)
        outputs = [
            graph[i]
            for i in graph.transcript()
            if isinstance(graph[i], AnswerNode) and "2 failed | 2 passed (4)" in graph[i].text
        ]
        assert outputs
        ctx = ProcessorContext.for_graph(graph)
        proposal = await ToolOutputTruncator(
            max_tokens=1_500, policies={"run_shell_command": "errors_first"}
        ).propose(outputs[:1], ctx)
        (edit,) = proposal.edits
        assert isinstance(edit, Replace)
        text = edit.replacement.text
        for frame in (
            "expect(prompt).toContain(`Use ${toolNames.WRITE_FILE_TOOL_NAME} to save.`);",
            "expect(prompt).toContain(`${toolNames.WRITE_FILE_TOOL_NAME} and ${toolNames.READ_",
        ):
            assert frame in text


class TestLightDistillShrinksBoxRulers:
    def test_box_drawing_rulers_shrink_outside_code(self) -> None:
        text = f"{LIGHT * 60}\n result \n{DOUBLE * 60}\n{RULE * 60} done"
        body = distill_text(text, "light", count=WordCounter().count).text.split("\n", 1)[1]
        assert body == f"{LIGHT * 10}\n result\n{DOUBLE * 10}\n{RULE * 10} done"

    def test_source_code_keeps_its_rulers(self) -> None:
        text = f"# {LIGHT * 40}\ndef f():\n    return 1\n# {'=' * 40}\n"
        body = distill_text(text, "light", path="a.py", count=WordCounter().count).text
        assert f"# {LIGHT * 40}" in body and f"# {'=' * 40}" in body
