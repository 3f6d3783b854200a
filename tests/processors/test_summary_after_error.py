"""What followed the latest error stays in the brief, verbatim, while the error is live.

Issue 31 (recency protection): the output that resolved the latest error stays verbatim
while it is recent. When a summary takes it, the brief quotes the first output of the
same tool that did not fail after the error: its first line and the first that names an
error or a warning, as written. A newer error replaces those lines; after
`LIVE_RESULTS` more tool results they go.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph import ContextGraph
from context_graph.testing import WordCounter
from processors.summarize.brief import LIVE_RESULTS, Brief, bound, parse, render, tool_lines
from processors.summarize.extractive import ExtractiveSummarizer
from processors.summarize.quoting import quote_output
from tests.processors.brief_sessions import add_bash, section_items, transcript

HEADING = "## After the latest error: the next output of the same tool (verbatim lines)"
LISTING = "-rw-------  1 root root   97 Jan  2 19:20 /workspace/data.txt"


def _session(after: int = 0) -> ContextGraph:
    """A failed read, a listing that worked next (two spaces kept), then `after` runs."""
    graph = ContextGraph(counter=WordCounter())
    graph.add_user("Find the data file and print it.")
    add_bash(graph, "c1", "cat data.txt", "cat: data.txt: No such file or directory", is_error=True)
    add_bash(graph, "c2", "ls -l /workspace", f"<returncode>0</returncode>\n{LISTING}\ntotal 4")
    for n in range(after):
        add_bash(graph, f"d{n}", f"echo step {n}", f"step {n} done")
    return graph


def _section(text: str) -> list[str]:
    return section_items(text, HEADING)


class TestAfterError:
    def test_the_next_output_of_the_tool_is_quoted_as_written(self) -> None:
        text = ExtractiveSummarizer().brief(transcript(_session()))
        assert _section(text) == [quote_output("bash", LISTING)]
        assert LISTING in text  # both spaces of each gap kept

    def test_its_lines_are_marked_as_tool_output(self) -> None:
        text = ExtractiveSummarizer().brief(transcript(_session()))
        lines = text.split("\n")
        quoted = {lines[number - 1] for number in tool_lines(text)}
        assert f"- {quote_output('bash', LISTING)}" in quoted

    def test_a_line_naming_a_warning_is_quoted_beside_the_first(self) -> None:
        graph = ContextGraph(counter=WordCounter())
        graph.add_user("Install the package.")
        add_bash(graph, "c1", "python app.py", "ModuleNotFoundError: sqlparse", is_error=True)
        warning = "WARNING: Running pip as the 'root' user can result in broken permissions"
        add_bash(graph, "c2", "pip install sqlparse", f"Collecting sqlparse\n{warning}")
        text = ExtractiveSummarizer().brief(transcript(graph))
        assert _section(text) == [
            quote_output("bash", "Collecting sqlparse"),
            quote_output("bash", warning),
        ]

    def test_nothing_is_quoted_without_an_error(self) -> None:
        graph = ContextGraph(counter=WordCounter())
        graph.add_user("List the files.")
        add_bash(graph, "c1", "ls", "a.txt")
        assert HEADING not in ExtractiveSummarizer().brief(transcript(graph))

    def test_a_rolling_update_keeps_them_while_the_error_is_live(self) -> None:
        graph = _session()
        first = ExtractiveSummarizer().brief(transcript(graph))
        for n in range(LIVE_RESULTS - 2):
            add_bash(graph, f"d{n}", f"echo step {n}", f"step {n} done")
        newer = transcript(graph)[len(transcript(_session())) :]
        updated = ExtractiveSummarizer().brief(newer, previous=first)
        assert _section(updated) == [quote_output("bash", LISTING)]

    def test_they_go_after_enough_tool_results(self) -> None:
        graph = _session()
        first = ExtractiveSummarizer().brief(transcript(graph))
        for n in range(LIVE_RESULTS):
            add_bash(graph, f"d{n}", f"echo step {n}", f"step {n} done")
        newer = transcript(graph)[len(transcript(_session())) :]
        assert _section(ExtractiveSummarizer().brief(newer, previous=first)) == []

    def test_a_newer_error_replaces_them(self) -> None:
        graph = _session()
        first = ExtractiveSummarizer().brief(transcript(graph))
        add_bash(graph, "e1", "make", "make: *** No rule to make target", is_error=True)
        add_bash(graph, "e2", "make all", "built 3 targets")
        newer = transcript(graph)[len(transcript(_session())) :]
        assert _section(ExtractiveSummarizer().brief(newer, previous=first)) == [
            quote_output("bash", "built 3 targets")
        ]

    @settings(max_examples=60, deadline=None)
    @given(
        st.lists(
            st.text(
                alphabet=st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=80
            ).filter(lambda line: line.strip() == line and line),
            min_size=1,
            max_size=2,
        )
    )
    def test_the_section_reads_back_as_written(self, lines: list[str]) -> None:
        brief = Brief(goal="Ship it.", after_error=[quote_output("bash", line) for line in lines])
        assert parse(render(brief)) == Brief(goal="Ship it.", after_error=brief.after_error)

    def test_an_error_at_the_end_of_a_span_gets_its_answer_from_the_next(self) -> None:
        """The error closed the span the summary took; the output that showed the fix
        came after it. The next summary quotes that output (before: the first brief had
        no line to keep and the next span had no error of its own, so none was written)."""
        graph = ContextGraph(counter=WordCounter())
        graph.add_user("Find the data file and print it.")
        add_bash(graph, "c1", "cat data.txt", "cat: data.txt: No such file", is_error=True)
        first = ExtractiveSummarizer().brief(transcript(graph))
        assert _section(first) == []
        done = len(transcript(graph))
        add_bash(graph, "c2", "ls -l /workspace", f"<returncode>0</returncode>\n{LISTING}")
        updated = ExtractiveSummarizer().brief(transcript(graph)[done:], previous=first)
        assert _section(updated) == [quote_output("bash", LISTING)]

    def test_an_answer_after_many_other_results_is_not_the_errors(self) -> None:
        graph = ContextGraph(counter=WordCounter())
        graph.add_user("Find the data file and print it.")
        add_bash(graph, "c1", "cat data.txt", "cat: data.txt: No such file", is_error=True)
        first = ExtractiveSummarizer().brief(transcript(graph))
        done = len(transcript(graph))
        for n in range(LIVE_RESULTS):
            graph.add_assistant(
                "Looking.", tool_calls=[{"id": f"r{n}", "name": "read", "arguments": {}}]
            )
            graph.add_tool_result(f"r{n}", f"line {n}")
        add_bash(graph, "c2", "ls -l /workspace", LISTING)
        updated = ExtractiveSummarizer().brief(transcript(graph)[done:], previous=first)
        assert _section(updated) == []

    def test_a_bound_that_drops_the_lines_drops_the_section(self) -> None:
        """Lines about one output, once dropped, leave no heading and no omission marker
        behind: in a tight brief those took the room of a user's constraint."""
        brief = Brief(
            goal="Ship it.",
            constraints=["Never push to main."],
            after_error=[quote_output("bash", "x " * 40)],
        )
        text = bound(brief, 30, lambda s: len(s.split()), keep=())
        assert HEADING not in text and "Never push to main." in text
