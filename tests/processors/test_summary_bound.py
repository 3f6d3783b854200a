"""A brief's bound writes again only the section an item was dropped from.

`bound` drops items one at a time until the brief fits; a brief far over its bound is
shortened by a hundred items or more. Each drop changes one section, so only that
section is written again; the text and the items dropped are what writing the whole
brief after each drop gives (`_plain_bound`), for any brief and any counter.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph.testing import WordCounter
from context_graph.tokens.counting import TiktokenCounter
from processors.pieces import counting_by_lines
from processors.summarize import brief as brief_format
from processors.summarize.brief import DROP_ORDER, Brief, bound, clip_tokens, render
from processors.summarize.facts import ErrorFact

TIKTOKEN = TiktokenCounter()


def _plain_bound(
    brief: Brief, max_tokens: int, count: Callable[[str], int], keep: Sequence[str]
) -> str:
    """`bound` written plainly: the whole brief written and counted again after every
    drop; the blocks are shortened before the user's messages are dropped, and the
    newest error is dropped last of all."""
    kept = frozenset(keep)
    text = render(brief)
    for name in DROP_ORDER:
        if name == "requests":
            for block_name, floor in (("earlier", 0), ("state", 80)):
                over = count(text) - max_tokens
                block = getattr(brief, block_name)
                if over > 0 and block:
                    shorter = clip_tokens(block, max(count(block) - over, floor), count)
                    setattr(brief, block_name, shorter)
                    text = render(brief)
        while count(text) > max_tokens and brief_format._drop_one(brief, name, kept):
            text = render(brief)
    if count(text) > max_tokens and brief.errors:  # the newest error goes last of all
        del brief.errors[-1]
        brief.omitted["errors"] = brief.omitted.get("errors", 0) + 1
        text = render(brief)
    return text


def _big_brief(items: int) -> Brief:
    return Brief(
        goal="Fix the failing build in src/app.py",
        files_read=[f"src/read_{i}.py" for i in range(items)],
        commands=[f"ran `pytest tests/test_{i}.py`: failed" for i in range(items)],
        decisions=[f"I'll change helper_{i} to return early." for i in range(items)],
        errors=[ErrorFact(f"pytest tests/test_{i}.py", "failed", "", "", False) for i in range(8)],
        identifiers=[f"helper_{i}" for i in range(items)],
        tool_identifiers=[f"src/tool_{i}.py" for i in range(items)],
        state="Next: rerun the tests.",
    )


class TestBoundWrites:
    """How much of the brief `bound` writes again."""

    def test_sections_untouched_by_a_drop_are_not_written_again(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Dropping list items never writes the errors or identifiers again."""
        written = {"errors": 0, "identifiers": 0}
        error_line, identifier_lines = brief_format._error_line, brief_format._identifier_lines

        def counting_error_line(error: ErrorFact) -> str:
            written["errors"] += 1
            return error_line(error)

        def counting_identifier_lines(brief: Brief) -> list[str]:
            written["identifiers"] += 1
            return identifier_lines(brief)

        monkeypatch.setattr(brief_format, "_error_line", counting_error_line)
        monkeypatch.setattr(brief_format, "_identifier_lines", counting_identifier_lines)
        brief = _big_brief(60)
        full = len(render(_big_brief(60)).split())
        written.update(errors=0, identifiers=0)
        text = bound(brief, full - 400, WordCounter().count, keep=())
        dropped = sum(brief.omitted.values())
        assert dropped > 100  # shortened item by item, from the list sections only
        assert brief.omitted.keys() <= {"files_read", "commands", "decisions"}
        assert written == {"errors": 8, "identifiers": 1}  # each written once, at the start
        assert text == render(brief)


_ITEM = st.text(st.sampled_from("ab `_-:/.\u00e9"), min_size=1, max_size=12)
_ITEMS = st.lists(_ITEM, max_size=12)
_ERROR = st.builds(
    ErrorFact,
    key=_ITEM,
    said=st.sampled_from(["", "failed", "1 failed, 2 passed"]),
    line=st.sampled_from(["", "E   KeyError: 'x'"]),
    source=st.sampled_from(["", "bash"]),
    resolved=st.booleans(),
)
_BRIEF = st.builds(
    Brief,
    goal=st.sampled_from(["", "Fix it", "Fix\n\nall of it"]),
    earlier=st.sampled_from(["", "An earlier summary, rather long. " * 20]),
    asked=st.sampled_from(["", "the database"]),
    focus=_ITEMS,
    constraints=_ITEMS,
    decisions=_ITEMS,
    files_modified=_ITEMS,
    files_read=_ITEMS,
    commands=_ITEMS,
    tests=st.lists(_ITEM, max_size=1),
    errors=st.lists(_ERROR, max_size=6),
    identifiers=_ITEMS,
    tool_identifiers=_ITEMS,
    state=st.sampled_from(["", "Next: ship.", "State. " * 60]),
    omitted=st.dictionaries(st.sampled_from(["files_read", "errors", "focus"]), st.integers(1, 9)),
)


class TestBoundProperty:
    """`bound` gives what writing the whole brief after every drop gives."""

    @settings(max_examples=200, deadline=None)
    @given(
        brief=_BRIEF,
        max_tokens=st.integers(1, 400),
        keep=st.lists(_ITEM, max_size=4),
        by_lines=st.booleans(),
    )
    def test_same_text_and_items_as_writing_it_whole(
        self, brief: Brief, max_tokens: int, keep: list[str], by_lines: bool
    ) -> None:
        """Same text, same items left, same omitted counts, with any counter."""
        plain = copy.deepcopy(brief)
        counts = counting_by_lines(TIKTOKEN) if by_lines else WordCounter().count
        expected = _plain_bound(plain, max_tokens, counts, keep)
        counts = counting_by_lines(TIKTOKEN) if by_lines else WordCounter().count
        assert bound(brief, max_tokens, counts, keep) == expected
        assert brief == plain


class TestTheNewestRequestStays:
    """A brief never drops the newest of the user's messages, however tight its bound."""

    @settings(max_examples=100, deadline=None)
    @given(
        requests=st.lists(st.text(min_size=1, max_size=80), min_size=1, max_size=8),
        max_tokens=st.integers(1, 60),
    )
    def test_the_newest_message_is_in_any_bounded_brief(
        self, requests: list[str], max_tokens: int
    ) -> None:
        """Dropped, the brief summarized nothing of what was asked and was refused, so a
        long session of many requests at a small budget compacted nothing and its calls
        were refused (90 of 4,866 on the stitched 3M session at 16,000 tokens)."""
        brief = Brief(
            goal="Fix the failing build in src/app.py",
            requests=list(requests),
            commands=[f"ran `pytest tests/test_{i}.py`: failed" for i in range(20)],
            state="Next: run the tests again.",
        )
        bound(brief, max_tokens, WordCounter().count, keep=())
        assert brief.requests[-1:] == requests[-1:]
        assert brief.omitted.get("requests", 0) == len(requests) - len(brief.requests)

    def test_a_repeated_message_stands_where_it_was_said_last(self) -> None:
        """A rolling brief that absorbs a newer `commit!` moves it to the end: kept at its
        first place, it was the oldest the bound dropped, and the summary lost the user's
        newest message and was refused (a stretch of 76 calls of the stitched 3M session,
        each running the whole pipeline for nothing)."""
        old = Brief(requests=["commit!", "Run the tests in tests/api."])
        new = Brief(requests=["commit!"])
        merged = brief_format.merge(old, new)
        assert merged.requests == ["Run the tests in tests/api.", "commit!"]
        bound(merged, 1, WordCounter().count, keep=())
        assert merged.requests == ["commit!"]
