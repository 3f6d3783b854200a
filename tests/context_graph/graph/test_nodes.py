from __future__ import annotations

import pytest
from pydantic import ValidationError

from context_graph import (
    AssistantTurn,
    ContextGraph,
    FileNode,
    ImagePart,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolCallNode,
    UserNode,
    UserTurn,
)
from context_graph.graph.ids import content_digest, make_node_id
from context_graph.graph.nodes import node_adapter
from context_graph.testing import WordCounter


class TestNodeModels:
    def test_nodes_are_frozen(self) -> None:
        """A node's fields cannot be reassigned."""
        node = UserNode(id="u", content=(TextPart(text="hi"),))
        with pytest.raises(ValidationError):
            node.pinned = True  # type: ignore[misc]

    def test_metadata_is_read_only(self) -> None:
        """A node's metadata mapping cannot be changed in place."""
        node = UserNode(id="u", meta={"k": 1})
        with pytest.raises(TypeError):
            node.meta["k"] = 2  # type: ignore[index]

    def test_unknown_fields_are_refused(self) -> None:
        """A typo in a field name is an error, not silently dropped."""
        with pytest.raises(ValidationError):
            UserNode(id="u", contnet=())  # type: ignore[call-arg]

    def test_every_node_kind_round_trips_through_json(self) -> None:
        """Nodes serialize to JSON and back to equal models, whatever their kind."""
        graph = ContextGraph(counter=WordCounter())
        graph.add_system("rules")
        graph.add_user([TextPart(text="look"), ImagePart(media_type="image/png", data="AA==")])
        graph.add_assistant(
            [ThinkingPart(thinking="hm", signature="sig=="), TextPart(text="ok")],
            tool_calls=[{"id": "c", "name": "read", "arguments": {"path": "a"}}],
        )
        graph.add_file_read("a", "text", call_id="c", line_range=(1, None))
        graph.add_note("remember", meta={"source": "user"})
        graph.add({"type": "compaction", "content": "so far"})
        for node in graph:
            again = node_adapter.validate_json(node_adapter.dump_json(node))
            assert again == node
            assert type(again) is type(node)

    def test_text_joins_text_parts_only(self) -> None:
        """`text` is the text parts joined by newlines, without thinking or media."""
        node = UserNode(
            id="u",
            content=(
                TextPart(text="a"),
                ThinkingPart(thinking="t"),
                ImagePart(url="http://x"),
                TextPart(text="b"),
            ),
        )
        assert node.text == "a\nb"

    def test_unparseable_arguments_come_back_raw(self) -> None:
        """Call arguments that are not JSON are kept and returned as text."""
        node = ToolCallNode(
            id="c", tool_call_id="1", name="t", arguments="{not json", assistant_id="a"
        )
        assert node.parsed_arguments == "{not json"


class TestIds:
    def test_digest_is_stable_and_order_free(self) -> None:
        """The digest ignores key order and is the same in every process."""
        assert content_digest({"a": 1, "b": [1, 2]}) == content_digest({"b": [1, 2], "a": 1})
        # A fixed value guards against an accidental change of the id scheme, which
        # would silently break every stored session.
        assert content_digest({"a": 1}) == "1f8c00645b7df6ce"
        assert len(content_digest("x")) == 16

    def test_transcript_ids_sort_in_order(self) -> None:
        """Ids carry the zero-padded position first, so they sort like the transcript."""
        ids = [make_node_id("user", seq, {"n": seq}) for seq in (9, 10, 100)]
        assert ids == sorted(ids)
        assert ids[0].startswith("000009-user-")

    def test_derived_ids_have_no_position(self) -> None:
        """Nodes without a position are named by kind and digest alone."""
        assert make_node_id("summary", None, {"x": 1}).startswith("summary-")

    def test_content_changes_change_the_id(self) -> None:
        """Different content at the same position gives a different id."""
        one = ContextGraph(counter=WordCounter()).add_user("a")
        two = ContextGraph(counter=WordCounter()).add_user("b")
        assert one != two


class TestEvents:
    def test_string_content_becomes_a_text_part(self) -> None:
        """Plain strings are accepted wherever content parts are."""
        assert UserTurn(content="hi").content == (TextPart(text="hi"),)

    def test_dict_arguments_are_encoded_as_json(self) -> None:
        """Arguments given as a dict are stored as JSON text."""
        call = ToolCall(id="1", name="t", arguments={"a": [1, 2]})
        assert call.arguments == '{"a": [1, 2]}'

    def test_string_arguments_are_kept_byte_for_byte(self) -> None:
        """Argument text is not re-encoded, so a replayed request stays byte-identical."""
        raw = '{ "b":1,  "a" : "é" }'
        assert ToolCall(id="1", name="t", arguments=raw).arguments == raw

    def test_file_read_keeps_path_and_range(self) -> None:
        """A file read becomes a file node with its path, range and version."""
        graph = ContextGraph(counter=WordCounter())
        node = graph[graph.add_file_read("src/a.py", "x = 1", line_range=(3, 9))]
        assert isinstance(node, FileNode)
        assert (node.path, node.line_range, node.version) == ("src/a.py", (3, 9), 1)

    def test_events_are_frozen(self) -> None:
        """Events cannot be changed after they are made."""
        event = AssistantTurn(content="x")
        with pytest.raises(ValidationError):
            event.model = "other"  # type: ignore[misc]


class TestFastConstruction:
    def test_ingested_nodes_equal_validated_nodes(self) -> None:
        """Nodes built at ingest equal the same data validated by pydantic, field by field."""
        graph = ContextGraph(counter=WordCounter())
        graph.add_system("rules", meta={"a": [1, {"b": None}]})
        graph.add_user([TextPart(text="look"), ImagePart(media_type="image/png", data="AA==")])
        graph.add_assistant(
            [ThinkingPart(thinking="hm", signature="sig==")],
            tool_calls=[{"id": "c", "name": "read", "arguments": {"path": "a"}}],
            model="m",
        )
        graph.add_file_read("a", "text", call_id="c", line_range=(1, None), is_error=False)
        graph.add_subagent_result("done", agent_id="x")
        graph.add({"type": "compaction", "content": "so far"})
        for node in graph:
            validated = type(node).model_validate(node.model_dump())
            assert validated == node
            assert validated.model_dump() == node.model_dump()
            assert node.text == validated.text

    def test_ingested_nodes_are_frozen(self) -> None:
        """Nodes built at ingest refuse assignment like validated ones."""
        graph = ContextGraph(counter=WordCounter())
        node = graph[graph.add_user("hi", meta={"k": 1})]
        with pytest.raises(ValidationError):
            node.turn = 5  # type: ignore[misc]
        with pytest.raises(TypeError):
            node.meta["k"] = 2  # type: ignore[index]
