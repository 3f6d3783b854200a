"""The brief keeps what the user said: every message, rules with their values, latest values.

Issue cases: a rule cut from its value ("Never exceed without explicit approval." with
`$500` moved to an identifiers list), preferences and a non-English rule dropped because
they had no English cue word, a later request called "the user's first request", and a
value that changed later kept beside its stale self.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph import ContextGraph
from context_graph.graph.nodes import Node
from context_graph.testing import WordCounter
from processors.base import Abstract, ProcessorContext
from processors.summarize import HistorySummarizer, updates
from processors.summarize.extractive import ExtractiveSummarizer
from processors.summarize.updates import supersede

RULE = "HARD CONSTRAINT: the budget cap is $500 total. Never exceed without explicit approval."
LATER = (
    "禁止修改 tests/ 目录。",
    "Skip the invoices table.",
    "Mia prefers short bullet lists in status updates.",
    "FYI: the staging database lives at db-staging-7.internal:5433.",
)


def _session(*user_turns: str, first: str = "Migrate the billing service.") -> ContextGraph:
    graph = ContextGraph(counter=WordCounter())
    graph.add_system("You are a coding agent.")
    graph.add_user(first)
    for number, text in enumerate(user_turns):
        graph.add_user(text)
        graph.add_assistant(
            f"Step {number}.",
            tool_calls=[{"id": f"c{number}", "name": "bash", "arguments": {"cmd": "ls"}}],
        )
        graph.add_tool_result(f"c{number}", "a.py\nb.py")
    return graph


def _nodes(graph: ContextGraph, start: int = 0) -> list[Node]:
    return [graph[i] for i in graph.transcript()][start:]


def _brief(nodes: list[Node], previous: str | None = None) -> str:
    return ExtractiveSummarizer(max_tokens=4_000).brief(nodes, previous=previous)


class TestEveryUserMessage:
    def test_each_later_message_is_kept_in_any_language(self) -> None:
        """A Chinese rule, a bare imperative, a preference and a fact all stay, verbatim."""
        text = _brief(_nodes(_session(*LATER)))
        for said in LATER:
            assert said in text

    def test_a_rule_keeps_its_value_in_the_same_line(self) -> None:
        """The sentence with the value and the rule that refers to it stay on one line."""
        text = _brief(_nodes(_session(RULE)))
        assert any("$500" in line and "budget cap" in line for line in text.splitlines())
        assert any(RULE in line for line in text.splitlines())

    def test_a_later_request_is_not_called_the_first(self) -> None:
        """A span that starts after the first request has no goal section naming another."""
        graph = _session("Now handle the reports module.")
        later = [n for n in _nodes(graph) if getattr(n, "turn", 0) > 1]
        text = _brief(later)
        assert "first request" not in text
        assert "Now handle the reports module." in text


class TestLaterValues:
    def test_an_update_replaces_the_stale_value_across_a_rolling_summary(self) -> None:
        """The value said later appears; the one it replaced is gone from the brief."""
        graph = _session(RULE, "Update: the budget cap is now $800 total.")
        nodes = _nodes(graph)
        cut = next(i for i, n in enumerate(nodes) if "Update:" in getattr(n, "text", ""))
        first = _brief(nodes[1:cut])
        assert "$500" in first
        second = _brief(nodes[cut:], previous=first)
        assert "$800" in second
        assert "$500" not in second
        assert "Never exceed without explicit approval." in second

    def test_another_subject_or_a_value_free_rule_stays(self) -> None:
        """Only a restated subject with a new value of the same sort replaces a sentence."""
        items = [
            "Fix tests/test_io.py first. Keep the timeout at 30 seconds.",
            "Then fix tests/test_api.py. Never deploy on Fridays.",
            "Set the retry count to 5.",
        ]
        assert supersede(items) == items


class TestHostileMessages:
    """A user message holding one very long word (a pasted blob, a sequence): a path's
    and a host's patterns were tried from every position inside the word and read to its
    end each time (32,000 characters took 37 s; these would take hours). No timer: with
    the patterns read from the start of each run, the test simply finishes."""

    @pytest.mark.parametrize("blob", ["_" * 1_000_000, "ab" * 500_000, "a-" * 500_000])
    def test_a_long_word_between_values(self, blob: str) -> None:
        items = [
            f"The budget cap is $500. Deploy src/app/main.py to db.example.com:5432. {blob}",
            f"Update: the budget cap is now $800. {blob}",
        ]
        assert updates.stale_values(items) == frozenset({"$500"})
        assert updates._values(items[0]) == frozenset(
            {"$500", "src/app/main.py", "db.example.com:5432"}
        )

    @pytest.mark.parametrize(
        ("text", "values"),
        [
            ("copy a/b.txt to c/d", {"a/b.txt", "c/d"}),
            ("serve on api.example.com:8080 then /health", {"api.example.com:8080", "/health"}),
            ("3.5kg/day of rate_limit_ms", {"3.5kg", "/day", "rate_limit_ms"}),
            ("version v2.3.1 of ./run.sh", {"v2.3.1", "/run.sh"}),  # stripped of dots
        ],
    )
    def test_values_still_read(self, text: str, values: set[str]) -> None:
        assert updates._values(text) == frozenset(values)


_SENTENCE = st.text(alphabet=st.sampled_from("abc xyz 0123 $/._-"), min_size=1, max_size=40).map(
    lambda s: s.strip() + "."
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(_SENTENCE, min_size=1, max_size=4).map(" ".join), max_size=6))
def test_supersede_only_removes_older_sentences_that_hold_a_value(items: list[str]) -> None:
    """The newest item is untouched; a removed sentence had a digit or value in it."""
    kept = supersede(items)
    assert len(kept) <= len(items)
    if items and " ".join(items[-1].split()):
        assert kept[-1] == " ".join(items[-1].split())
    removed = " ".join(items).split()
    for word in " ".join(kept).split():
        assert word in removed


_WORDS = ("budget", "cap", "retry", "count", "port", "service", "the", "is", "now", "total")
_VALUES_SAID = ("$500", "$800", "5", "7", "8080", "src/app.py", "db.internal:5432", "max_retries")
_CLAIM = st.lists(st.sampled_from(_WORDS + _VALUES_SAID), min_size=1, max_size=6).map(
    lambda words: " ".join(words) + "."
)


def _restated_pairwise(older: str, newer: str) -> bool:
    """The rule, read pair by pair: a later sentence on the same subject, other values."""
    old, new = updates._values(older), updates._values(newer)
    if not old or not new or old <= new:
        return False
    if not {updates._kind(v) for v in old} & {updates._kind(v) for v in new}:
        return False
    return bool(updates._subject(older) & updates._subject(newer))


def _supersede_pairwise(items: list[str]) -> list[str]:
    later: list[str] = []
    kept: list[str] = []
    for item in reversed(items):
        sentences = updates._sentences(item)
        stale = [s for s in sentences if any(_restated_pairwise(s, n) for n in later)]
        later.extend(s for s in sentences if s not in stale)
        if len(stale) < len(sentences):
            text = item
            for sentence in stale:
                text = text.replace(sentence, "", 1)
            kept.append(" ".join(text.split()))
    return kept[::-1]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(_CLAIM, min_size=1, max_size=4).map(" ".join), max_size=8))
def test_supersede_finds_what_a_pairwise_comparison_finds(items: list[str]) -> None:
    """Comparing only sentences that share a subject pair (and reading each sentence
    once) drops exactly what comparing every later sentence with every earlier one drops."""
    updates.clear_cache()
    assert supersede(items) == _supersede_pairwise(items)


_MESSAGE_PART = st.one_of(_CLAIM, _SENTENCE, st.sampled_from(["\n", "  ", "a_b\ncd", "x.\n/y"]))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(_MESSAGE_PART, min_size=1, max_size=4).map(" ".join), max_size=8))
def test_stale_values_read_message_by_message_as_joined(items: list[str]) -> None:
    """The values still said are read from each kept message alone (each read once for
    later compactions), and are those of the kept messages joined by spaces."""
    updates.clear_cache()
    said = frozenset(v for item in items for v in updates._VALUE.findall(item))
    joined = " ".join(supersede(items))
    expected = {v.strip(".,").lower() for v in said} - {
        v.strip(".,").lower() for v in updates._VALUE.findall(joined)
    }
    assert updates.stale_values(items) == expected
    assert updates.stale_values(items) == expected  # from the cache, the same


class _Model:
    """Answers with a script; records the instructions it was given."""

    name = "scripted"

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.instructions: list[str | None] = []

    async def summarize(
        self, nodes: Sequence[Node], *, previous: str | None, instructions: str | None
    ) -> str:
        self.instructions.append(instructions)
        return self.answers.pop(0)


class TestModelSummaryCheck:
    async def test_a_summary_that_drops_a_user_constraint_is_refused(self) -> None:
        """A model's summary must quote the later turns' constraints, in any language."""
        graph = _session("Please never touch the prod database.", "禁止修改 tests/ 目录。")
        graph.add_user("Carry on.")
        span = [n for n in _nodes(graph) if n.turn > 1 and n.turn < 4]
        paraphrase = "The user asked for care with the database and the tests folder."
        quoted = "Please never touch the prod database. 禁止修改 tests/ 目录。 Both noted."
        model = _Model(paraphrase, quoted)
        processor = HistorySummarizer(summarizer=model)
        proposal = await processor.propose(span, ProcessorContext.for_graph(graph))
        assert proposal.note.startswith("retry ok (scripted; first candidate: lost 2 of the user")
        (edit,) = proposal.edits
        assert isinstance(edit, Abstract) and edit.summary.text == quoted
        assert "Quote these sentences of the user exactly" in (model.instructions[0] or "")
