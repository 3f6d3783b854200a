"""An output cut again to the same limits is not cut again; other limits or texts are."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import processors.truncate.memo as memo_module
import processors.truncate.truncator as truncator_module
from context_graph import ContextGraph
from context_graph.testing import WordCounter
from processors import ProcessorContext, Replace
from processors.truncate import ToolOutputTruncator, truncate_text

LOG = "\n".join(f"step {i}: compiled module_{i} in {i % 7} ms" for i in range(400))


@pytest.fixture(name="runs")
def runs_fixture(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The texts `truncate_text` really worked on."""
    runs: list[str] = []
    real = truncator_module.truncate_text

    def counting(text: str, **kwargs: object) -> object:
        runs.append(text)
        return real(text, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(truncator_module, "truncate_text", counting)
    return runs


def _session(output: str = LOG) -> tuple[ContextGraph, str]:
    graph = ContextGraph(counter=WordCounter())
    graph.add_user("build it")
    graph.add_assistant(tool_calls=[{"id": "c1", "name": "bash", "arguments": {"cmd": "make"}}])
    return graph, graph.add_tool_result("c1", output)


async def _cut(graph: ContextGraph, node_id: str, max_tokens: int = 200) -> str:
    proposal = await ToolOutputTruncator(max_tokens=max_tokens).propose(
        [graph[node_id]], ProcessorContext.for_graph(graph)
    )
    (edit,) = proposal.edits
    assert isinstance(edit, Replace)
    return edit.replacement.text


class TestTruncatorMemo:
    async def test_the_same_cut_is_taken_from_memory(self, runs: list[str]) -> None:
        """Proposing twice over the same graph gives the same text and cuts once."""
        graph, node_id = _session()
        first = await _cut(graph, node_id)
        second = await _cut(graph, node_id)
        assert first == second
        assert runs == [LOG]

    async def test_another_limit_is_cut_anew(self, runs: list[str]) -> None:
        """A truncator with another token target does not get the first one's cut."""
        graph, node_id = _session()
        small = await _cut(graph, node_id, max_tokens=100)
        large = await _cut(graph, node_id, max_tokens=300)
        assert len(runs) == 2
        assert len(small) < len(large)

    async def test_another_text_is_cut_anew(self, runs: list[str]) -> None:
        """An output with other text (a replaced node keeps its call id) gets its own cut."""
        graph, node_id = _session()
        other_graph, other_id = _session(LOG.replace("step", "stage"))
        assert "step" in await _cut(graph, node_id)
        assert "stage" in await _cut(other_graph, other_id)
        assert len(runs) == 2

    async def test_cuts_go_with_their_token_cache(self, runs: list[str]) -> None:
        """Another graph (another counter) does not see the first graph's cuts."""
        first, first_id = _session()
        second, second_id = _session()
        assert await _cut(first, first_id) == await _cut(second, second_id)
        assert len(runs) == 2
        assert first.token_cache in memo_module._memos

    async def test_the_memo_is_bounded(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Past `MEMO_SIZE` distinct cuts the least recently used one is forgotten."""
        monkeypatch.setattr(memo_module, "MEMO_SIZE", 2)
        graph = ContextGraph(counter=WordCounter())
        for word in ("alpha", "beta", "gamma"):
            text = LOG.replace("step", word)
            memo_module.remembered_cut(
                graph.token_cache,
                (text, 50, None, "head_tail", 2),
                lambda text=text: truncate_text(text, count=len, max_tokens=50),
            )
        kept = memo_module._memos[graph.token_cache].entries
        assert [key[0].split()[0] for key in kept] == ["beta", "gamma"]

    async def test_the_memo_is_bounded_by_characters(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Past `MEMO_CHARS` characters of cut texts the oldest cuts are forgotten."""
        monkeypatch.setattr(memo_module, "MEMO_CHARS", len(LOG) * 2)
        graph = ContextGraph(counter=WordCounter())
        # Texts as long as LOG: two fit; one longer than the bound is not kept at all.
        for word in ("stop", "stem", "stay", "long" * 400):
            text = LOG.replace("step", word)
            memo_module.remembered_cut(
                graph.token_cache,
                (text, 50, None, "head_tail", 2),
                lambda text=text: truncate_text(text, count=len, max_tokens=50),
            )
        cuts = memo_module._memos[graph.token_cache]
        assert [key[0].split()[0] for key in cuts.entries] == ["stem", "stay"]
        assert cuts.chars == sum(len(key[0]) for key in cuts.entries) <= len(LOG) * 2


@settings(max_examples=40, deadline=None)
@given(
    lines=st.lists(st.text(alphabet="abc xyz019:", min_size=0, max_size=30), max_size=120),
    max_tokens=st.integers(min_value=32, max_value=120),
)
def test_a_remembered_cut_is_the_cut_made_fresh(lines: list[str], max_tokens: int) -> None:
    """Whatever the text and the limit, the memo answers what `truncate_text` computes."""
    graph = ContextGraph(counter=WordCounter())
    text = "\n".join(lines)
    count = graph.token_cache.counter.count
    key = (text, max_tokens, None, "head_tail", 2)

    def fresh() -> object:
        return truncate_text(text, count=count, max_tokens=max_tokens)

    first = memo_module.remembered_cut(graph.token_cache, key, fresh)  # type: ignore[arg-type]
    again = memo_module.remembered_cut(graph.token_cache, key, fresh)  # type: ignore[arg-type]
    assert first == again == fresh()
