"""The replay's index of the view (`continuation._Artifacts`) against a reading of every node."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from context_graph.errors import InvariantViolation
from context_graph.graph.content import TextPart
from context_graph.graph.nodes import Node, SummaryNode, UserNode
from context_graph.testing import WordCounter
from context_graph.tokens.counting import ProviderFormat
from orchestrator.compaction.continuation import _Artifacts, _copy, _latest_user, _replay_of
from orchestrator.manager import ContextManager
from orchestrator.working import WorkingGraph
from processors import Abstract, Drop, Proposal, Replace, Restore
from processors.base import replacement_for
from tests.orchestrator.policy_keywords import make_manager

FORMATS: tuple[ProviderFormat, ...] = ("anthropic", "openai", "gemini", "responses")


def _scanned_replay(graph: WorkingGraph, fmt: ProviderFormat) -> UserNode | None:
    """`_replay_of` as it was before the index: every node of the view read on each call."""
    latest = _latest_user(graph)
    if latest is None:
        return None
    ids = graph.current_ids()
    if graph.is_current(latest.id):
        if fmt != "anthropic":
            return None
        natives = (i for i in ids if _native_to(graph, i) == fmt)
        hidden = any(
            latest.id in graph.pristine.covered(root) for i in natives for root in graph.roots(i)
        )
        return _copy(latest) if hidden else None
    derived = [i for i in ids if graph.pristine.get(i) is None]
    if any(graph.roots(i) == (latest.id,) for i in derived):
        return None
    if not any(latest.id in graph.roots(i) for i in derived):
        return None
    return _copy(latest)


def _native_to(graph: WorkingGraph, node_id: str) -> str | None:
    native = getattr(graph[node_id], "native", None)
    return None if native is None else str(native.provider)


def _anthropic_compaction(step: int, *, final: bool) -> dict[str, Any]:
    """Anthropic's reply carrying its own compaction block; a tool call unless `final`."""
    call = {"type": "tool_use", "id": f"toolu_{step}", "name": "bash", "input": {"n": step}}
    return {
        "id": f"msg_{step}",
        "type": "message",
        "role": "assistant",
        "model": "claude-opus-4-6",
        "content": [
            {"type": "compaction", "content": f"Summary {step}: the fix is half done."},
            {"type": "text", "text": "Done." if final else "Running the tests."},
            *(() if final else (call,)),
        ],
        "stop_reason": "end_turn" if final else "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


def _responses_compaction(step: int) -> dict[str, Any]:
    """A Responses reply whose compaction item comes before its message."""
    return {
        "object": "response",
        "output": [
            {"type": "compaction", "id": f"cmp_{step}", "encrypted_content": f"gAAA{step}"},
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": f"Compacted at {step}."}],
            },
        ],
    }


def _apply(manager: ContextManager, edit: Any, targets: tuple[str, ...], made: Node | None) -> None:
    """Apply one edit, counted as a processor counts it; a refused one changes nothing."""
    view = manager.working.snapshot()
    count = view.token_cache.count_node
    restoring = isinstance(edit, Restore)
    before = sum(count(view[i]) for i in targets)
    after = 0 if made is None else count(made)
    if restoring:  # what comes back: the pristine nodes behind the target
        after = sum(count(node) for node in view.expand(edit.target))
    proposal = Proposal(
        processor="test",
        edits=(edit,),
        tokens_before=before,
        tokens_after=after,
        base_version=view.version,
        purpose="restore" if restoring else "safety" if isinstance(edit, Replace) else "compact",
    )
    try:
        manager.working.apply(proposal)
    except InvariantViolation:
        return


def _summarize(manager: ContextManager, step: int, back: int, length: int) -> None:
    """Abstract `length` units ending `back` units before the view's last (0: the last)."""
    units = manager.working.units()
    units = units[max(0, len(units) - back - length) : len(units) - back]
    ids = tuple(i for unit in units for i in unit.node_ids)
    if not ids:
        return
    node = SummaryNode(
        id=f"summary-{step}",
        content=(TextPart(text=f"summary {step}"),),
        abstracts=ids,
        meta={"checked": True},
    )
    _apply(manager, Abstract(targets=ids, summary=node), ids, node)


def _redact(manager: ContextManager, pick: int) -> None:
    """Replace a summary of the view (a native block, say) by a shorter copy of it."""
    working = manager.working
    summaries = [i for i in working.current_ids() if working[i].kind == "summary"]
    if not summaries:
        return
    target = summaries[pick % len(summaries)]
    copy = replacement_for(working[target], (TextPart(text="[redacted]"),))
    _apply(manager, Replace(target=target, replacement=copy), (target,), copy)


def _shorten(manager: ContextManager, kind: str, pick: int) -> None:
    """Replace a node of `kind` in the view (a tool output, a user turn) by a shorter copy."""
    working = manager.working
    found = [i for i in working.current_ids() if working[i].kind == kind]
    if not found:
        return
    target = found[-1 - pick % len(found)]
    copy = replacement_for(working[target], (TextPart(text="[cut]"),))
    _apply(manager, Replace(target=target, replacement=copy), (target,), copy)


def _drop(manager: ContextManager, pick: int) -> None:
    units = manager.working.units()
    if units:
        ids = units[pick % len(units)].node_ids
        _apply(manager, Drop(targets=ids), ids, None)


def _restore(manager: ContextManager, pick: int) -> None:
    working = manager.working
    derived = [i for i in working.current_ids() if working.pristine.get(i) is None]
    if derived:
        target = derived[pick % len(derived)]
        _apply(manager, Restore(target=target), (target,), None)


def _step(manager: ContextManager, step: int, op: str, a: int, b: int) -> None:
    """One thing an agent's session does: a turn, a provider's compaction, or an edit."""
    if op == "user":
        manager.add_user(f"Request {step}: fix file {step}.py.")
    elif op == "tool":
        call = f"call_{step}"
        manager.add_assistant(
            f"Step {step}.", tool_calls=[{"id": call, "name": "bash", "arguments": {"n": step}}]
        )
        manager.add_tool_result(call, f"output of step {step}")
    elif op == "answer":
        manager.add_assistant(f"Answered at {step}.")
    elif op in ("anthropic", "anthropic_final"):
        manager.add_response(_anthropic_compaction(step, final=op == "anthropic_final"))
        if op == "anthropic":
            manager.add_tool_result(f"toolu_{step}", f"result {step}")
    elif op == "responses":
        manager.add_response(_responses_compaction(step))
    elif op == "summarize":
        _summarize(manager, step, a % 3, b)
    elif op == "redact":
        _redact(manager, a)
    elif op == "mask":
        _shorten(manager, "tool_result", a)
    elif op == "shorten_user":
        _shorten(manager, "user", a % 2)
    elif op == "drop":
        _drop(manager, a)
    else:
        _restore(manager, a)


_OPS = st.sampled_from(
    [  # turns more often than the replies that end them, so a latest turn is often open
        "user",
        "user",
        "tool",
        "tool",
        "tool",
        "answer",
        "anthropic",
        "anthropic_final",
        "responses",
        "summarize",
        "summarize",
        "mask",
        "shorten_user",
        "redact",
        "drop",
        "restore",
    ]
)


class TestArtifactsIndex:
    @settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(
        steps=st.lists(
            st.tuples(_OPS, st.integers(0, 12), st.integers(1, 4)), min_size=1, max_size=25
        )
    )
    def test_the_kept_index_answers_as_reading_every_node(
        self, steps: list[tuple[str, int, int]]
    ) -> None:
        """After any turns, compactions and edits, the kept index replays what a scan does."""
        manager = make_manager(format="anthropic", counter=WordCounter(), budget=None)
        manager.add_system("You are a coding agent.")
        manager.add_user("Fix a.py, then run the tests; do not touch b.py.")
        kept = _Artifacts()  # one index across every step and format, as a manager keeps it
        for step, (op, a, b) in enumerate(steps):
            _step(manager, step, op, a, b)
            for fmt in FORMATS:
                expected = _scanned_replay(manager.working, fmt)
                assert _replay_of(manager.working, fmt, kept) == expected
                assert _replay_of(manager.working, fmt) == expected

    def test_a_native_block_added_after_a_render_is_found(self) -> None:
        """The index reads the record's new nodes: a compaction after the first render counts."""
        manager = make_manager(format="anthropic", counter=WordCounter(), budget=None)
        manager.add_user("Fix a.py, then run the tests; do not touch b.py.")
        kept = _Artifacts()
        assert _replay_of(manager.working, "anthropic", kept) is None
        manager.add_response(_anthropic_compaction(1, final=False))
        manager.add_tool_result("toolu_1", "3 passed")
        replayed = _replay_of(manager.working, "anthropic", kept)
        assert replayed is not None
        assert replayed.content == (
            TextPart(text="Fix a.py, then run the tests; do not touch b.py."),
        )
