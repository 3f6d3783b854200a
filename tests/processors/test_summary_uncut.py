"""The brief reads an output as it was before distill and truncate cut it.

A failed run's output truncated when it arrived keeps its head and tail; the frames in
its middle (the paths and names the agent meets again) were gone from the brief too,
though the record has them. The brief now reads the uncut output (`markers.uncut`),
never past a redaction: what a redaction took out stays out of every summary.
"""

from __future__ import annotations

import anyio
from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph import ContextGraph
from context_graph.graph.content import TextPart
from context_graph.graph.nodes import Node
from context_graph.testing import WordCounter
from orchestrator import WorkingGraph
from processors.base import Abstract, ProcessorContext, replacement_for
from processors.distill.common import omitted
from processors.markers import REDACTED, uncut
from processors.redact import SecretRedactor
from processors.summarize.extractive import ExtractiveSummarizer
from processors.summarize.history import HistorySummarizer
from processors.truncate.truncator import ToolOutputTruncator

SECRET = "ghp_" + "Zq7xW3mK9pL2vN8rT4yB6cD1fG5hJ0aS3eU7"
MIDDLE = "  File /srv/app/ledger_reconcile_worker.py, line 88, in settle_batch"


def _output(secret: str = "") -> str:
    head = [f"step {n}: syncing shard {n} of the nightly ledger" for n in range(30)]
    tail = [f"retry {n}: backing off before the next attempt" for n in range(30)]
    middle = [MIDDLE, f"    token = {secret}" if secret else "    token = settings.TOKEN"]
    return "\n".join([*head, *middle, *tail, "RuntimeError: settle_batch gave up"])


def _session(secret: str = "") -> ContextGraph:
    graph = ContextGraph(counter=WordCounter())
    graph.add_user("Find out why the nightly sync fails.")
    graph.add_assistant(
        "Running it.",
        tool_calls=[{"id": "c1", "name": "bash", "arguments": {"command": "python sync.py"}}],
    )
    graph.add_tool_result("c1", _output(secret), is_error=True)
    graph.add_assistant("It gave up in settle_batch.")
    graph.add_user("Keep going.")
    graph.add_assistant("Reading the worker next.")
    return graph


def _ctx(working: WorkingGraph) -> ProcessorContext:
    return ProcessorContext(graph=working.snapshot(), tokens=working.token_cache)


def _result(working: WorkingGraph) -> Node:
    return next(working[i] for i in working.current_ids() if working[i].kind == "tool_result")


def _summary(working: WorkingGraph) -> str:
    units = [u for u in working.units() if u.kind != "system"]
    span = [working[i] for unit in units[:3] for i in unit.node_ids]
    processor = HistorySummarizer(fallback=ExtractiveSummarizer(counter=WordCounter()))
    proposal = anyio.run(processor.propose, span, _ctx(working))
    (edit,) = proposal.edits
    assert isinstance(edit, Abstract)
    working.apply(proposal)
    return edit.summary.text


def _truncated(working: WorkingGraph) -> None:
    truncator = ToolOutputTruncator(max_tokens=120)
    proposal = anyio.run(truncator.propose, [_result(working)], _ctx(working))
    assert proposal.edits
    working.apply(proposal)
    assert MIDDLE not in _result(working).text


class TestUncutBrief:
    def test_a_truncated_failure_s_middle_is_in_the_brief(self) -> None:
        """Fails on the code before: the brief read the truncated text."""
        working = WorkingGraph(_session())
        _truncated(working)
        assert "/srv/app/ledger_reconcile_worker.py" in _summary(working)

    def test_a_redacted_output_is_read_as_redacted(self) -> None:
        working = WorkingGraph(_session(SECRET))
        redaction = anyio.run(SecretRedactor().propose, [_result(working)], _ctx(working))
        assert redaction.edits
        working.apply(redaction)
        _truncated(working)
        cut = _result(working)
        assert REDACTED in cut.meta
        assert SECRET not in uncut(cut, working, working.__getitem__).text
        assert SECRET not in _summary(working)


def _cut(node: Node, text: str, **meta: object) -> Node:
    return replacement_for(node, [TextPart(text=text)], meta={**node.meta, **meta})


class TestUncut:
    def test_not_an_output_or_not_cut_is_itself(self) -> None:
        graph = _session()
        user = graph[graph.transcript()[0]]
        assert uncut(user, graph, graph.__getitem__) is user
        result = next(graph[i] for i in graph.transcript() if graph[i].kind == "tool_result")
        masked = _cut(result, "[output masked: 1,204 tokens]")
        lookup = {result.id: result, masked.id: masked}
        assert uncut(masked, lookup, lookup.__getitem__) is masked

    def test_a_source_gone_from_the_record_stops_the_way(self) -> None:
        graph = _session()
        result = next(graph[i] for i in graph.transcript() if graph[i].kind == "tool_result")
        cut = _cut(result, f"head\n{omitted(40)}\ntail")
        assert uncut(cut, {cut.id}, {cut.id: cut}.__getitem__) is cut

    @settings(max_examples=60, deadline=None)
    @given(st.lists(st.sampled_from(["cut", "redact", "plain"]), min_size=1, max_size=6))
    def test_the_way_back_ends_at_the_first_node_that_is_no_cut(self, edits: list[str]) -> None:
        """Back through cuts (a marker line), never past a redacted copy or a plain edit."""
        graph = _session(SECRET)
        pristine = next(graph[i] for i in graph.transcript() if graph[i].kind == "tool_result")
        chain = [pristine]
        for step in edits:
            last = chain[-1]
            if step == "cut":
                chain.append(_cut(last, f"{last.text[:40]}\n{omitted(12)}"))
            elif step == "redact":
                text = last.text.replace(SECRET, "[REDACTED:github_token]")
                chain.append(_cut(last, text, **{REDACTED: {"github_token": 1}}))
            else:
                chain.append(_cut(last, "edited: " + last.text.split("\n")[0][:50]))
        lookup = {node.id: node for node in chain}
        found = uncut(chain[-1], lookup, lookup.__getitem__)
        expected = len(chain) - 1
        # chain[k] was made by edits[k - 1]: a cut reads back, unless it is redacted.
        while expected and edits[expected - 1] == "cut" and REDACTED not in chain[expected].meta:
            expected -= 1
        assert found is chain[expected]
        if "redact" in edits:
            assert SECRET not in found.text
