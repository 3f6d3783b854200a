"""Another tool's summary read for the brief: Claude Code's analysis scratchpad left out."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from processors.summarize.extractive import ExtractiveSummarizer
from processors.summarize.foreign import without_scratchpad

HEADED = (
    "This session is being continued from a previous conversation that ran out of "
    "context. The summary below covers the earlier portion of the conversation.\n\n"
    "Analysis:\nLet me chronologically analyze the conversation:\n1. The user asked for X.\n"
    "2. I read a.py.\n\n"
    "Summary:\n1. Primary Request and Intent:\n   Fix the parser in a.py.\n"
    "9. Optional Next Step:\n   Run the tests."
)


def test_the_headed_scratchpad_is_left_out_and_the_summary_kept() -> None:
    out = without_scratchpad(HEADED)
    assert "chronologically" not in out and "Analysis:" not in out
    assert out.startswith("This session is being continued")
    assert out.endswith(
        "Summary:\n1. Primary Request and Intent:\n   Fix the parser in a.py.\n"
        "9. Optional Next Step:\n   Run the tests."
    )


def test_the_tagged_scratchpad_is_left_out() -> None:
    text = "<analysis>\nwalk through\n</analysis>\n\n<summary>\n1. Fix a.py\n</summary>"
    assert without_scratchpad(text) == "<summary>\n1. Fix a.py\n</summary>"


def test_an_analysis_with_no_summary_after_it_is_kept() -> None:
    """Without a summary after it, the analysis is the only account there is."""
    for text in (
        "Analysis:\nthe only account",
        "Summary:\nfirst\n\nAnalysis:\nafterwards",
        "<analysis>walk</analysis> and no summary",
        "<summary>s</summary><analysis>walk</analysis>",
        "<analysis>never closed <summary>s</summary>",
        "The Analysis: inline and Summary: inline",
    ):
        assert without_scratchpad(text) == text


@given(st.text(alphabet="Analysis:Summary<>/\n ab", max_size=200))
def test_only_a_scratchpad_leaves(text: str) -> None:
    """What comes back is the text, or the text with one stretch before a summary cut out."""
    out = without_scratchpad(text)
    if out != text:
        assert len(out) < len(text)
        assert "Summary:" in out or "<summary>" in out


def test_a_hostile_text_is_read_once() -> None:
    """Many openings without an end, and long lines: plain searches, no backtracking."""
    many = "<analysis>" * 200_000 + "<summary>"
    assert without_scratchpad(many) == many
    lines = "Analysis:\n" * 200_000
    assert without_scratchpad(lines) == lines


async def test_the_brief_absorbs_the_summary_not_its_scratchpad() -> None:
    """A continued session's summary, absorbed as the brief's earlier-summary block."""
    brief = await ExtractiveSummarizer(max_tokens=2_000).summarize(
        [], previous=HEADED, instructions=None
    )
    assert "## Earlier summary" in brief
    assert "Fix the parser in a.py." in brief and "Run the tests." in brief
    assert "chronologically" not in brief
