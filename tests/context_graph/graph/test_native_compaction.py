"""`NativeCompaction` on `Compaction` events: checked on the way in, kept verbatim, ids stable."""

from __future__ import annotations

from typing import Any

import pytest

from context_graph.errors import IngestError
from context_graph.graph.context_graph import ContextGraph
from context_graph.graph.events import AssistantTurn, Compaction, UserTurn, coerce_events
from context_graph.graph.json_limits import MAX_STRING
from context_graph.graph.native import NativeCompaction, opaque_note, readable_text
from context_graph.graph.nodes import SummaryNode, node_adapter
from context_graph.testing import WordCounter

BLOCK = {"type": "compaction", "content": "The user wants X; files a, b read.", "signature": "c2ln"}
ITEM = {"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAAAB" + "q" * 40}


def _event(provider: str, item: dict[str, Any]) -> dict[str, Any]:
    return {"type": "compaction", "content": [], "native": {"provider": provider, "item": item}}


class TestNativeCompactionModel:
    def test_an_anthropic_block_keeps_every_field(self) -> None:
        """The block is held as received, and its readable text is its `content`."""
        native = NativeCompaction(provider="anthropic", item=BLOCK)
        assert dict(native.item) == BLOCK
        assert readable_text(native) == BLOCK["content"]

    def test_a_responses_item_has_no_readable_text(self) -> None:
        """An encrypted item reads as nothing; the note names who can read it."""
        native = NativeCompaction(provider="responses", item=ITEM)
        assert readable_text(native) is None
        assert "OpenAI" in opaque_note(native)

    def test_the_item_cannot_be_changed(self) -> None:
        """The held item is read-only, so a render cannot alter what goes back."""
        native = NativeCompaction(provider="responses", item=dict(ITEM))
        with pytest.raises(TypeError):
            native.item["encrypted_content"] = "x"  # type: ignore[index]

    @pytest.mark.parametrize(
        ("provider", "item", "where"),
        [
            ("anthropic", {"type": "text", "content": "s"}, "native.item.type"),
            ("anthropic", {"type": "compaction", "content": 7}, "native.item.content"),
            ("anthropic", {"type": "compaction", "content": ""}, "native.item.content"),
            ("anthropic", {"type": "compaction", "content": "s", "extra": 1}, "native.item.extra"),
            (
                "anthropic",
                {"type": "compaction", "content": "s", "signature": 1},
                "native.item.signature",
            ),
            (
                "anthropic",
                {"type": "compaction", "content": "s", "tool_changes": "x"},
                "native.item.tool_changes",
            ),
            ("responses", {"type": "compaction"}, "native.item.encrypted_content"),
            (
                "responses",
                {"type": "compaction", "encrypted_content": ""},
                "native.item.encrypted_content",
            ),
            (
                "responses",
                {"type": "compaction", "encrypted_content": "e", "id": 3},
                "native.item.id",
            ),
        ],
    )
    def test_a_malformed_artifact_is_refused_with_its_path(
        self, provider: str, item: dict[str, Any], where: str
    ) -> None:
        """A wrong type, a missing payload or an unknown key names the key in the event."""
        with pytest.raises(IngestError) as caught:
            coerce_events([{"type": "user", "content": "hi"}, _event(provider, item)])
        assert caught.value.location is not None
        assert caught.value.location.index == 1
        assert str(caught.value).endswith(f"at `compaction.{where}`")

    def test_an_unknown_provider_is_refused(self) -> None:
        """Only the two providers whose artifacts are understood are accepted."""
        with pytest.raises(IngestError, match=r"native\.provider"):
            coerce_events([_event("gemini", ITEM)])


class TestIngest:
    def test_a_native_compaction_is_a_summary_of_what_came_before(self) -> None:
        """The node is an unpinned summary carrying the artifact, abstracting every earlier node."""
        graph = ContextGraph(counter=WordCounter())
        ids = graph.ingest(
            [
                UserTurn(content="task"),
                AssistantTurn(content="done part 1"),
                *coerce_events([_event("responses", ITEM)]),
                UserTurn(content="next"),
            ]
        )
        node = graph[ids[2]]
        assert isinstance(node, SummaryNode)
        assert not node.pinned
        assert node.native is not None and dict(node.native.item) == ITEM
        assert node.abstracts == ids[:2]
        assert set(graph.covered(node.id)) >= set(ids[:2])

    def test_the_node_round_trips_through_json(self) -> None:
        """The node's JSON holds the artifact and reads back equal."""
        graph = ContextGraph(counter=WordCounter())
        (node_id,) = graph.ingest(coerce_events([_event("anthropic", BLOCK)]))
        node = graph[node_id]
        again = node_adapter.validate_json(node.model_dump_json())
        assert again == node

    def test_a_plain_compaction_keeps_its_id(self) -> None:
        """Without `native` the event's JSON, and so its node id, is what it always was."""
        event = Compaction(content="summary", origin="claude_code")
        assert "native" not in event.model_dump_json()

    def test_an_oversized_artifact_is_refused_and_nothing_lands(self) -> None:
        """A payload past the stored-string bound is an `IngestError`; the batch adds nothing."""
        graph = ContextGraph(counter=WordCounter())
        huge = {"type": "compaction", "encrypted_content": "x" * (MAX_STRING + 1)}
        batch = [UserTurn(content="hi"), *coerce_events([_event("responses", huge)])]
        with pytest.raises(IngestError, match=r"native\.item\.encrypted_content"):
            graph.ingest(batch)
        assert len(graph) == 0
