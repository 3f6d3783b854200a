"""A summary is rendered as what it is: a user-role message under `SUMMARY_HEADER`.

Every format sends a summary as a user-role message right after the request it follows,
so whatever reads "the latest user message" must be told it is no new request.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from context_graph import ContextGraph
from context_graph.graph.anchors import SUMMARY_HEADER, floor_anchors, unit_kind
from context_graph.graph.content import TextPart
from context_graph.graph.events import Compaction, UserTurn
from context_graph.graph.nodes import UserNode
from context_graph.importers import load_graph
from context_graph.render import Renderer
from context_graph.testing import ScriptedSummarizer, WordCounter
from orchestrator.manager import ContextManager
from orchestrator.policy import Policy
from processors import HistorySummarizer

REQUEST = "Fix the failing test in tests/test_io.py."
SUMMARY = "Summary 0: the tests ran six times; step 5 passed."
MARKED = f"{SUMMARY_HEADER}\n\n{SUMMARY}"
FORMATS = ("openai", "anthropic", "gemini")


async def compacted(summarizer: Any = None) -> ContextManager:
    """A one-request tool loop whose finished steps were summarized."""
    manager = ContextManager(
        counter=WordCounter(),
        policy=Policy(
            summarizer=summarizer or ScriptedSummarizer([SUMMARY]), pipeline=[HistorySummarizer()]
        ),
    )
    manager.add_system("You are a careful coding agent.")
    manager.add_user(REQUEST)
    for step in range(6):
        manager.add_assistant(f"Step {step}.", [{"id": f"c{step}", "name": "bash"}])
        manager.add_tool_result(f"c{step}", "\n".join(f"line {j}: {j * step}" for j in range(60)))
    run = await manager.compact()
    assert run.applied == 1
    return manager


def _texts(payload: dict[str, Any]) -> list[str]:
    """Every text of a payload's messages, in order."""
    found: list[str] = []
    for message in payload.get("messages", payload.get("contents", [])):
        content = message.get("content", message.get("parts"))
        if isinstance(content, str):
            found.append(content)
        for part in content if isinstance(content, list) else ():
            if isinstance(part.get("text"), str):
                found.append(part["text"])
    return found


class TestHeader:
    async def test_openai_sends_the_summary_as_a_marked_user_message(self) -> None:
        """OpenAI chat: the summary is its own user message, header first."""
        result = await (await compacted()).render(format="openai")
        assert result.payload["messages"][:3] == [
            {"role": "system", "content": "You are a careful coding agent."},
            {"role": "user", "content": REQUEST},
            {"role": "user", "content": MARKED},
        ]

    async def test_anthropic_merges_it_into_the_request_turn_marked(self) -> None:
        """Anthropic: the summary is the second text block of the first user turn."""
        result = await (await compacted()).render(format="anthropic")
        assert result.payload["messages"][0] == {
            "role": "user",
            "content": [{"type": "text", "text": REQUEST}, {"type": "text", "text": MARKED}],
        }

    async def test_gemini_merges_it_into_the_request_turn_marked(self) -> None:
        """Gemini: the summary is the second part of the first user content."""
        result = await (await compacted()).render(format="gemini")
        assert result.payload["contents"][0] == {
            "role": "user",
            "parts": [{"text": REQUEST}, {"text": MARKED}],
        }

    @pytest.mark.parametrize("fmt", FORMATS)
    async def test_the_default_brief_is_marked_once(self, fmt: str) -> None:
        """The extractive brief opens with the header, which appears nowhere else."""
        manager = ContextManager(
            counter=WordCounter(), policy=Policy(pipeline=[HistorySummarizer()])
        )
        manager.add_user(REQUEST)
        for step in range(6):
            manager.add_assistant(f"Step {step}.", [{"id": f"c{step}", "name": "bash"}])
            manager.add_tool_result(f"c{step}", "\n".join(f"row {j}: {j}" for j in range(60)))
        assert (await manager.compact()).applied == 1
        result = await manager.render(format=fmt)  # type: ignore[arg-type]
        marked = [t for t in _texts(result.payload) if SUMMARY_HEADER in t]
        assert len(marked) == 1
        assert marked[0].startswith(f"{SUMMARY_HEADER}\n\n# Summary of the earlier conversation")

    @pytest.mark.parametrize("fmt", FORMATS)
    def test_an_imported_compaction_keeps_its_own_wording(self, fmt: str) -> None:
        """A summary another tool wrote (a `Compaction` event) is sent as it was recorded."""
        wording = "This conversation continues from an earlier one; its summary follows."
        graph = ContextGraph(counter=WordCounter())
        graph.ingest(
            [
                UserTurn(content="Start the migration."),
                Compaction(content=wording, origin="claude_code"),
                UserTurn(content="Go on with step 2."),
            ]
        )
        result = Renderer(format=fmt).render(graph)  # type: ignore[arg-type]
        assert wording in _texts(result.payload)
        assert SUMMARY_HEADER not in str(result.payload)


class TestLatestRequest:
    async def test_floor_anchors_never_pick_the_summary(self) -> None:
        """In the compacted view the first and latest requests are the user's request."""
        manager = await compacted()
        units = manager.working.view.units()
        anchors = floor_anchors([unit.kind for unit in units])
        assert anchors is not None
        assert {units[i].kind for i in anchors} == {"user"}
        assert [u.kind for u in units].count("summary") == 1

    @pytest.mark.parametrize("fmt", FORMATS)
    async def test_a_rendered_summary_read_back_is_no_request(self, fmt: str) -> None:
        """A body read back (a proxy is sent whole bodies) keeps the request as the latest."""
        result = await (await compacted()).render(format=fmt)  # type: ignore[arg-type]
        graph = load_graph(result.payload, format=fmt)
        units = graph.units()
        anchors = floor_anchors([unit.kind for unit in units])
        assert anchors is not None
        _, latest, _ = anchors
        assert graph[units[latest].head].text.startswith(REQUEST)

    def test_a_user_turn_opening_with_the_header_is_a_notice(self) -> None:
        """Only a turn that opens with the header heads a notice unit; quoting it does not."""
        marked = UserNode(id="u1", content=(TextPart(text=MARKED),))
        quoted = UserNode(id="u2", content=(TextPart(text=f"What is {SUMMARY_HEADER}?"),))
        assert (unit_kind(marked), unit_kind(quoted)) == ("notice", "user")

    @given(st.lists(st.sampled_from(["user", "notice", "summary", "assistant", "system"])))
    def test_no_kinds_make_a_summary_an_anchor(self, kinds: list[str]) -> None:
        """Whatever the units, the floor's anchors are user-role units, never a summary."""
        anchors = floor_anchors(kinds)
        assert anchors is None or {kinds[i] for i in anchors} <= {"user", "notice"}
