"""Every sentence the user said is kept, in any language, or the summary is refused.

Issue 34.1: a Chinese rule, a bare imperative and "Mia prefers ..." have no English cue
word; German, Spanish, French and Japanese imperatives and prohibitions neither. The
check knows no cue words: every sentence of the user's later messages that no later one
restates with another value must be in the summary, verbatim or word for word on one
line; the extractive brief is refused when its bound dropped one, a model's summary is
retried, then repaired, and a provider's readable summary is repaired.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from context_graph import ContextGraph
from context_graph.graph.nodes import Node
from context_graph.testing import WordCounter
from processors.base import Abstract, ProcessorContext, Proposal
from processors.summarize import ExtractiveSummarizer, HistorySummarizer, check_candidate
from processors.summarize.said import lost_sentences, said_in, user_sentences
from processors.summarize.updates import supersede

#: One instruction per language, none with an English cue word.
MULTILINGUAL = (
    "禁止修改 tests/ 目录。",
    "Skip the invoices table.",
    "Mia prefers short bullet lists in status updates.",
    "Ändere niemals die Datei config/prod.yaml.",
    "No borres la tabla de clientes.",
    "Ne touchez pas au dossier migrations/.",
    "本番データベースには接続しないでください。",
)


def _session(*later: str, first: str = "Migrate the billing service.") -> ContextGraph:
    graph = ContextGraph(counter=WordCounter())
    graph.add_system("You are a coding agent.")
    graph.add_user(first)
    for number, text in enumerate(later):
        graph.add_user(text)
        graph.add_assistant(
            f"Working on step {number}.",
            tool_calls=[{"id": f"c{number}", "name": "bash", "arguments": {"command": "ls"}}],
        )
        graph.add_tool_result(f"c{number}", "\n".join(f"file_{i}.py" for i in range(40)))
    graph.add_user("Carry on.")
    return graph


def _span(graph: ContextGraph) -> list[Node]:
    """Every node after the first request, up to the last user turn."""
    last = max(graph[i].turn for i in graph.transcript())
    return [graph[i] for i in graph.transcript() if 1 < graph[i].turn < last]


async def _propose(processor: HistorySummarizer, graph: ContextGraph, **ctx: object) -> Proposal:
    return await processor.propose(_span(graph), ProcessorContext.for_graph(graph, **ctx))


def _summary_text(proposal: Proposal) -> str:
    (edit,) = proposal.edits
    assert isinstance(edit, Abstract)
    return edit.summary.text


def _left_out(note: str) -> int:
    """How many of the oldest messages a proposal's note says the brief left out."""
    found = re.search(r"the oldest (\d+) of the user's messages left out", note)
    return int(found.group(1)) if found else 0


class _Model:
    """A summarizer that answers from a script, as a model would."""

    name = "scripted"

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.instructions: list[str | None] = []

    async def summarize(
        self, nodes: Sequence[Node], *, previous: str | None, instructions: str | None
    ) -> str:
        self.instructions.append(instructions)
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


class TestWhatMustBeKept:
    def test_every_sentence_in_any_language_is_required(self) -> None:
        said = user_sentences(list(MULTILINGUAL), message_chars=2_000)
        assert said == list(MULTILINGUAL)

    def test_a_sentence_restated_later_with_another_value_is_not(self) -> None:
        said = user_sentences(
            ["The budget cap is $500 total. Never skip review.", "The budget cap is now $800."],
            message_chars=2_000,
        )
        assert said == ["Never skip review.", "The budget cap is now $800."]

    def test_past_the_head_of_a_huge_message_nothing_is_required(self) -> None:
        huge = "Keep the head. " + "Log line number forty two. " * 200
        said = user_sentences([huge], message_chars=200)
        assert said == ["Keep the head.", "Log line number forty two."]

    def test_what_a_harness_wrapped_in_its_tags_is_not_the_users(self) -> None:
        """Claude Code's slash-command and reminder elements are left out; HTML is not."""
        said = user_sentences(
            [
                "<command-message>publish-session</command-message> "
                "<command-name>/publish-session</command-name>",
                "Why won't you run it? <system-reminder>Be terse.\nReally.</system-reminder> "
                "Use <b>bold</b> text.",
            ],
            message_chars=2_000,
        )
        assert said == ["Why won't you run it?", "Use <b>bold</b> text."]

    def test_own_words_on_one_line_count_verbatim_elsewhere_do_not(self) -> None:
        assert said_in("Skip the invoices table.", "- The user said: skip the INVOICES table")
        assert said_in("禁止修改 tests/ 目录。", "- 用户说:禁止修改 tests/ 目录")
        assert not said_in("Skip the invoices table.", "- skip the\n- invoices table")
        assert not said_in("Use port 5433.", "- Use port 5432.")

    def test_the_check_names_the_lost_sentence_with_a_typed_kind(self) -> None:
        check = check_candidate(
            "The user gave some rules.", tokens=5, limit=100, said=list(MULTILINGUAL)
        )
        assert not check.ok
        assert check.kinds == ("lost_user_words",)
        assert check.lost == MULTILINGUAL
        assert "lost 7 of the user's sentences (禁止修改 tests/ 目录。" in check.reason()
        assert "Skip the invoices table." in check.retry_instructions()


class TestEveryPath:
    async def test_the_extractive_brief_keeps_them_all(self) -> None:
        proposal = await _propose(HistorySummarizer(), _session(*MULTILINGUAL))
        text = _summary_text(proposal)
        assert lost_sentences(MULTILINGUAL, text) == []

    async def test_the_summarizers_own_cap_gives_way_to_the_users_words(self) -> None:
        """A session of many requests: their words are over the extractive brief's own
        `max_tokens`, well within the budget's share for them. The brief keeps them all;
        before, its cap dropped the oldest, every summary was refused, and a long session
        was never compacted again (each request cut in its floor instead)."""
        nouns = (
            "billing invoices ledger payroll refunds coupons carts orders shipping returns "
            "taxes vendors audits alerts reports exports imports quotas tokens sessions "
            "webhooks mailers queues caches"
        ).split()
        requests = [
            f"Move the {noun} code under services. Document every {noun} endpoint you touch. "
            f"Ask before deleting any {noun} fixture."
            for noun in nouns
        ]
        summarizer = HistorySummarizer(fallback=ExtractiveSummarizer(max_tokens=128))
        graph = _session(*requests)
        proposal = await _propose(summarizer, graph, budget=20_000, target=20_000)
        said = user_sentences(requests, message_chars=2_000)
        assert len(said) == 72
        assert lost_sentences(said, _summary_text(proposal)) == []

    async def test_past_their_share_the_oldest_messages_give_way_whole(self) -> None:
        """Many requests at a small budget: the brief keeps the newest whole and drops the
        oldest, and the note says how many. Refusing it (as before) refused every summary
        of a long session of many requests, and the tool loop then grew in the floor
        until every request was refused (167 of 974 calls on the stitched long session at
        16,000 tokens)."""
        requests = [
            f"{text} Also check the case number {n} twice." for n, text in enumerate(MULTILINGUAL)
        ]
        graph = _session(*requests)
        proposal = await _propose(HistorySummarizer(), graph, budget=140, target=140)
        text = _summary_text(proposal)
        dropped = _left_out(proposal.note)
        assert 0 < dropped < len(requests)
        kept = user_sentences(requests[dropped:], message_chars=2_000)
        assert lost_sentences(kept, text) == []
        assert lost_sentences(user_sentences(requests[:dropped], message_chars=2_000), text)

    async def test_the_newest_message_stays_over_the_room(self) -> None:
        """A room too small for even the newest message: the brief keeps it whole anyway
        (over its room, still shorter than what it replaces) rather than be refused."""
        syllables = ("ka", "lo", "mi", "nu", "pe", "ri", "so", "tu", "va", "ze")
        words = ["".join(parts) for parts in itertools.product(syllables, repeat=3)]
        # Four messages of 90 words each, more than the whole room (64 words at least).
        messages = [" ".join(words[m * 90 : (m + 1) * 90]) + "." for m in range(4)]
        graph = _session(*messages)
        proposal = await _propose(HistorySummarizer(), graph, budget=60, target=60)
        assert _left_out(proposal.note) == 3
        assert lost_sentences(messages[-1:], _summary_text(proposal)) == []

    async def test_a_model_summary_that_paraphrases_is_retried_then_repaired(self) -> None:
        paraphrase = "The user set rules about tests, invoices, config, clients and prod."
        model = _Model(paraphrase)
        proposal = await _propose(HistorySummarizer(summarizer=model), _session(*MULTILINGUAL))
        assert len(model.instructions) == 2
        assert "Quote these sentences of the user exactly" in (model.instructions[0] or "")
        assert "It lost what the user said" in (model.instructions[1] or "")
        assert proposal.note.startswith("repaired (scripted; first candidate: dropped config")
        assert "lost 7 of the user's sentences" in proposal.note
        text = _summary_text(proposal)
        assert text.startswith(paraphrase)
        assert "## The user's words (verbatim)" in text
        assert lost_sentences(MULTILINGUAL, text) == []

    async def test_a_model_summary_that_quotes_them_passes(self) -> None:
        quoted = "Rules, quoted: " + " ".join(MULTILINGUAL)
        proposal = await _propose(
            HistorySummarizer(summarizer=_Model(quoted)), _session(*MULTILINGUAL)
        )
        assert proposal.note == "model ok (scripted)"
        assert _summary_text(proposal).startswith(quoted)


_WORDS = st.sampled_from(
    [
        *("skip", "the", "invoices", "table", "never", "touch", "prod", "禁止", "修改", "目录"),
        *("budget", "cap", "is", "port", "$500", "$800", "5433", "src/app.py", "Mia", "prefers"),
    ]
)
_SENTENCE = st.lists(_WORDS, min_size=1, max_size=7).map(lambda w: " ".join(w) + ".")
_MESSAGE = st.lists(_SENTENCE, min_size=1, max_size=3).map(" ".join)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    messages=st.lists(_MESSAGE, min_size=1, max_size=6),
    budget=st.sampled_from([None, 80, 200, 2_000]),
)
async def test_every_sentence_not_superseded_is_kept_or_the_brief_is_refused(
    messages: list[str], budget: int | None
) -> None:
    """For generated sessions and budgets: the proposal keeps every user sentence that no
    later message restated, or proposes nothing and says it lost one."""
    graph = _session(*messages)
    context = {} if budget is None else {"budget": budget, "target": budget}
    proposal = await _propose(HistorySummarizer(), graph, **context)
    if proposal.empty:
        assert "refused" in proposal.note
        return
    # Past their share of the room, the oldest messages give way whole; never the newest.
    current = supersede(messages)[-1:] if _left_out(proposal.note) else supersede(messages)
    required = [s for m in current for s in user_sentences([m], message_chars=2_000)]
    assert lost_sentences(required, _summary_text(proposal)) == []


def _said_in_each_time(sentence: str, text: str) -> bool:
    """The check as first written: `text` read again for each sentence."""
    if " ".join(sentence.split()) in " ".join(text.split()):
        return True
    words = [w.casefold() for w in re.findall(r"\w+", sentence)]
    for line in text.splitlines():
        folded = line.casefold()
        present = {w.casefold() for w in re.findall(r"\w+", folded)}
        if all(w in present or (not w.isascii() and w in folded) for w in words):
            return True
    return False


_ODD = st.sampled_from(["表", "ß", "SS", "\t", "a.b"])
_LINE = st.lists(st.one_of(_WORDS, _ODD), max_size=8).map(" ".join)


@settings(max_examples=200, deadline=None)
@given(
    sentences=st.lists(
        st.one_of(_SENTENCE, st.sampled_from(MULTILINGUAL), st.text(max_size=12)), max_size=8
    ),
    lines=st.lists(st.one_of(_LINE, st.sampled_from(MULTILINGUAL)), max_size=6),
)
def test_the_text_read_once_keeps_what_a_read_per_sentence_keeps(
    sentences: list[str], lines: list[str]
) -> None:
    """`lost_sentences` reads a brief once for all the sentences, and loses exactly the
    sentences a check reading it again for each sentence loses."""
    text = "\n".join(lines)
    expected = [s for s in sentences if not _said_in_each_time(s, text)]
    assert lost_sentences(sentences, text) == expected
    assert [s for s in sentences if not said_in(s, text)] == expected
