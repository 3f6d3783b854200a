"""Test doubles for users' tests (and ours): deterministic, offline, fast.

`WordCounter` counts whitespace-separated words, so expected token numbers can be
worked out by hand in a test. `graph_snapshot` captures what can be observed of a graph,
so a test can check that a refused ingest left the graph exactly as it was.
"""

from __future__ import annotations

from collections.abc import Sequence

from context_graph.graph import ContextGraph
from context_graph.nodes import Node

__all__ = ["ScriptedSummarizer", "WordCounter", "graph_snapshot"]


class WordCounter:
    """A `TokenCounter` that counts whitespace-separated words (and nothing else).

    Deterministic and dependency-free: use it in tests where the exact count matters more
    than realism.
    """

    @property
    def name(self) -> str:
        """`words`."""
        return "words"

    def count(self, text: str) -> int:
        """Return the number of whitespace-separated words in `text`."""
        return len(text.split())


def graph_snapshot(graph: ContextGraph) -> tuple[object, ...]:
    """Everything observable about `graph`, as one value that compares with `==`.

    This is the way to check that a failed ingest changed nothing: ingest is atomic, so
    a snapshot taken before a refused batch equals one taken after it. The snapshot
    holds the node count, the transcript order, the edges (sorted), the interaction
    units, the unanswered calls, the total tokens, the user-turn count and the files read.

    Example:
        before = graph_snapshot(graph)
        with pytest.raises(IngestError):
            graph.ingest(events)
        assert graph_snapshot(graph) == before
    """
    return (
        len(graph),
        graph.transcript(),
        tuple(sorted(graph.edges())),
        graph.units(),
        graph.unanswered_calls(),
        graph.total_tokens,
        graph.turns,
        graph.files(),
    )


class ScriptedSummarizer:
    """A summarizer (see `processors.Summarizer`) that answers from a script.

    Each call takes the next item: a string is returned as the summary, an exception
    is raised. Every call is recorded in `calls` (nodes, previous, instructions), so a
    test can check what a processor asked for.

    Args:
        script: The answers, in order. Running out raises `IndexError`.
    """

    def __init__(self, script: Sequence[str | BaseException]) -> None:
        self._script = list(script)
        self.calls: list[tuple[tuple[Node, ...], str | None, str | None]] = []

    async def summarize(
        self, nodes: Sequence[Node], *, previous: str | None, instructions: str | None
    ) -> str:
        """Return (or raise) the next scripted answer."""
        self.calls.append((tuple(nodes), previous, instructions))
        if not self._script:
            msg = f"ScriptedSummarizer ran out of answers after {len(self.calls) - 1} calls"
            raise IndexError(msg)
        answer = self._script.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return answer
