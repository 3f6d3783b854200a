from __future__ import annotations

import json
import re
import unicodedata
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph import ConfigurationError, ContextGraph
from context_graph.entities import critical_entities, missing_entities
from context_graph.graph.content import ContentPart, ImagePart, TextPart
from context_graph.graph.nodes import AnswerNode, Node
from context_graph.importers import load_graph, load_sessions
from context_graph.testing import graph_snapshot
from context_graph.tokens.counting import default_counter
from processors import ProcessorContext, Proposal, Replace, available_processors, create_processor
from processors.rulers import shrink_rulers
from processors.truncate import POLICIES, ToolOutputTruncator, truncate_text

TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "traces"
COUNT = default_counter().count
MARKER = re.compile(r"\[\.\.\. (?P<what>[^/\]]+) / (?P<tokens>[\d,]+) tokens omitted \.\.\.\]")


# -- an independent reading of the marker format ---------------------------------------------


def describe(original: str, start: int, end: int) -> str:
    """What a marker must say about `original[start:end]` (the documented format)."""
    gap = original[start:end]
    lines = gap.count("\n") + (0 if gap.endswith("\n") else 1)
    whole = (start == 0 or original[start - 1] == "\n") and (
        end == len(original) or gap.endswith("\n")
    )
    if whole:
        return f"{lines:,} line" + ("" if lines == 1 else "s")
    if "\n" not in gap:
        return f"{len(gap):,} character" + ("" if len(gap) == 1 else "s")
    return f"{lines:,} lines, {len(gap):,} characters"


def gap_end(original: str, start: int, what: str) -> int:
    """Where the gap a marker describes ends, from its own words."""
    numbers = [int(n.replace(",", "")) for n in re.findall(r"\d[\d,]*", what)]
    if what.endswith(("line", "lines")):
        end = start
        for _ in range(numbers[0]):
            newline = original.find("\n", end)
            end = len(original) if newline < 0 else newline + 1
        return end
    return start + numbers[-1]


def decode(original: str, output: str) -> list[tuple[int, int]]:
    """The spans of `original` that the markers stand for; every other byte is verbatim."""
    found = list(MARKER.finditer(output))
    bounds = [0, *[p for m in found for p in (m.start(), m.end())], len(output)]
    pieces = [output[bounds[i] : bounds[i + 1]] for i in range(0, len(bounds), 2)]
    gaps: list[tuple[int, int]] = []
    position = 0
    for index, marker in enumerate(found):
        kept = pieces[index][1:] if index and pieces[index] else pieces[index]
        if not original.startswith(kept, position) or (
            kept.endswith("\n") and _described(original, position + len(kept), marker) is None
        ):
            kept = kept[:-1]  # a line break inserted before the marker
        assert original.startswith(kept, position)
        start = position + len(kept)
        end = _described(original, start, marker)
        assert end is not None, f"marker {marker.group(0)!r} does not match the text at {start}"
        gaps.append((start, end))
        position = end
    last = pieces[-1][1:] if found and pieces[-1] else pieces[-1]
    assert original[position:] == last
    return gaps


def _described(original: str, start: int, marker: re.Match[str]) -> int | None:
    end = gap_end(original, start, marker.group("what"))
    if end > len(original) or describe(original, start, end) != marker.group("what"):
        return None
    if COUNT(original[start:end]) != int(marker.group("tokens").replace(",", "")):
        return None
    return end


def render(original: str, gaps: list[tuple[int, int]]) -> str:
    """`original` with each gap replaced by its marker line (to test one unit more)."""
    out, position = [], 0
    for start, end in gaps:
        out.append(original[position:start])
        if out[-1] and not out[-1].endswith("\n"):
            out.append("\n")
        out.append(f"[... {describe(original, start, end)} / {COUNT(original[start:end]):,} ")
        out.append("tokens omitted ...]" + ("\n" if end < len(original) else ""))
        position = end
    out.append(original[position:])
    return "".join(out)


def numbered(count: int, width: int = 6) -> str:
    return "".join(f"line {i}: value={i * 7} " + "x" * (i % width) + "\n" for i in range(count))


# -- fixtures ------------------------------------------------------------------------------


@pytest.fixture(name="graph")
def graph_fixture() -> ContextGraph:
    graph = ContextGraph()
    graph.add_user("run the tests")
    graph.add_assistant(
        tool_calls=[
            {"id": "c1", "name": "bash", "arguments": {"cmd": "pytest"}},
            {"id": "c2", "name": "Read", "arguments": {"path": "a.py"}},
        ]
    )
    graph.add_tool_result("c1", numbered(2_000), is_error=True)
    graph.add_file_read("src/a.py", numbered(50), call_id="c2", name="Read")
    return graph


def replaces(proposal: Proposal) -> list[Replace]:
    edits = [edit for edit in proposal.edits if isinstance(edit, Replace)]
    assert len(edits) == len(proposal.edits)
    return edits


def results(graph: ContextGraph) -> list[Node]:
    return [graph[i] for i in graph.transcript() if isinstance(graph[i], AnswerNode)]


# -- tests ---------------------------------------------------------------------------------


class TestOptions:
    @pytest.mark.parametrize(
        "options",
        [
            {"max_tokens": 0},
            {"max_tokens": "many"},
            {"max_bytes": 10},
            {"default_policy": "middle"},
            {"policies": {"bash": "sideways"}},
            {"context_lines": -1},
        ],
    )
    def test_bad_options_are_configuration_errors(self, options: dict[str, object]) -> None:
        """A wrong option fails at construction with a message naming it."""
        with pytest.raises(ConfigurationError, match=next(iter(options))):
            ToolOutputTruncator(**options)  # type: ignore[arg-type]

    def test_registered_by_name(self) -> None:
        """The truncator is available from the registry as `truncate`."""
        assert "truncate" in available_processors()
        assert isinstance(create_processor("truncate", max_tokens=100), ToolOutputTruncator)

    def test_policy_lookup_prefers_exact_names_then_globs_in_order(self) -> None:
        """An exact tool name wins over globs; globs apply in order; the default is last."""
        truncator = ToolOutputTruncator(
            default_policy="tail",
            policies={"mcp__*": "head", "mcp__log*": "errors_first", "mcp__logs": "head_tail"},
        )
        assert truncator.policy_for("mcp__logs") == "head_tail"
        assert truncator.policy_for("mcp__logger") == "head"
        assert truncator.policy_for("bash") == "tail"
        assert truncator.policy_for(None) == "tail"
        assert set(POLICIES) == {"head", "tail", "head_tail", "errors_first"}


class TestProposals:
    async def test_empty_targets_give_an_empty_proposal(self, graph: ContextGraph) -> None:
        """No targets, no edits; the proposal still names the graph version it read."""
        proposal = await ToolOutputTruncator().propose([], ProcessorContext.for_graph(graph))
        assert proposal.empty and proposal.processor == "truncate"
        assert proposal.base_version == graph.version

    async def test_only_long_unpinned_answers_are_cut(self, graph: ContextGraph) -> None:
        """User turns, short results and pinned results are left alone."""
        ctx = ProcessorContext.for_graph(graph)
        long_result, short_file = results(graph)
        pinned = long_result.model_copy(update={"pinned": True})
        user = graph[graph.transcript()[0]]
        targets = [user, short_file, pinned, long_result]
        proposal = await ToolOutputTruncator(max_tokens=500).propose(targets, ctx)
        assert [edit.target for edit in replaces(proposal)] == [long_result.id]

    async def test_replacement_keeps_pairing_fields(self, graph: ContextGraph) -> None:
        """Call id, tool name, error flag and lineage survive; meta records the cut."""
        ctx = ProcessorContext.for_graph(graph)
        original = results(graph)[0]
        proposal = await ToolOutputTruncator(max_tokens=300).propose([original], ctx)
        (edit,) = proposal.edits
        assert isinstance(edit, Replace)
        new = edit.replacement
        assert isinstance(new, AnswerNode)
        assert (new.tool_call_id, new.name, new.is_error) == ("c1", "bash", True)
        assert new.replaces == original.id
        assert new.meta["truncated"] == {"policy": "head_tail", "format": "text", "max_tokens": 300}

    async def test_token_numbers_are_exact(self, graph: ContextGraph) -> None:
        """tokens_before / tokens_after are the content tokens of the removed / added nodes."""
        ctx = ProcessorContext.for_graph(graph)
        targets = results(graph)
        proposal = await ToolOutputTruncator(max_tokens=100).propose(targets, ctx)
        replaced = {edit.target for edit in replaces(proposal)}
        assert proposal.tokens_before == sum(graph.tokens(i) for i in replaced)
        added = [edit.replacement for edit in replaces(proposal)]
        assert proposal.tokens_after == sum(ctx.count(node) for node in added)
        assert proposal.tokens_saved > 0

    async def test_graph_and_targets_are_untouched(self, graph: ContextGraph) -> None:
        """Proposing changes neither the graph nor the target nodes."""
        before, targets = graph_snapshot(graph), results(graph)
        dumps = [node.model_dump() for node in targets]
        await ToolOutputTruncator(max_tokens=100).propose(
            targets, ProcessorContext.for_graph(graph)
        )
        assert graph_snapshot(graph) == before
        assert [node.model_dump() for node in targets] == dumps

    async def test_images_and_file_paths_are_kept(self) -> None:
        """Non-text parts stay in place; text parts merge into one cut part; paths stay."""
        graph = ContextGraph()
        graph.add_user("look")
        graph.add_assistant(tool_calls=[{"id": "s", "name": "screenshot", "arguments": {}}])
        image = ImagePart(media_type="image/png", data="aGVsbG8=")
        content: list[ContentPart] = [
            image,
            TextPart(text=numbered(400)),
            TextPart(text=numbered(400)),
        ]
        graph.add_tool_result("s", content)
        ctx = ProcessorContext.for_graph(graph)
        (edit,) = (await ToolOutputTruncator(max_tokens=200).propose(results(graph), ctx)).edits
        assert isinstance(edit, Replace)
        parts = edit.replacement.content
        assert parts[0] == image and len(parts) == 2 and isinstance(parts[1], TextPart)
        assert COUNT(edit.replacement.text) <= 200
        decode(numbered(400) + "\n" + numbered(400), edit.replacement.text)


class TestLineCuts:
    def test_head_tail_is_exact_and_tight(self) -> None:
        """Head + marker + tail fits; one more head line or tail line would not."""
        original = numbered(3_000)
        out = truncate_text(original, count=COUNT, max_tokens=400)
        assert out is not None and out.format == "text"
        assert COUNT(out.text) <= 400
        ((start, end),) = decode(original, out.text)
        assert 0 < start and end < len(original)
        next_head = original.index("\n", start) + 1
        next_tail = original.rindex("\n", 0, end - 1) + 1
        assert COUNT(render(original, [(next_head, end)])) > 400
        assert COUNT(render(original, [(start, next_tail)])) > 400

    @pytest.mark.parametrize("policy", ["head", "tail"])
    def test_one_sided_policies_are_tight(self, policy: str) -> None:
        """`head` keeps a prefix, `tail` a suffix, each as long as fits."""
        original = numbered(3_000)
        out = truncate_text(original, count=COUNT, max_tokens=300, policy=policy)  # type: ignore[arg-type]
        assert out is not None and COUNT(out.text) <= 300
        ((start, end),) = decode(original, out.text)
        if policy == "head":
            assert end == len(original)
            grown = (original.index("\n", start) + 1, end)
        else:
            assert start == 0
            grown = (start, original.rindex("\n", 0, end - 1) + 1)
        assert COUNT(render(original, [grown])) > 300

    def test_marker_numbers_use_thousands_separators(self) -> None:
        """The marker gives the real omitted lines and tokens, formatted with commas."""
        original = numbered(6_000)
        out = truncate_text(original, count=COUNT, max_tokens=200)
        assert out is not None
        ((start, end),) = decode(original, out.text)
        lines = original[start:end].count("\n")
        assert (
            f"[... {lines:,} lines / {COUNT(original[start:end]):,} tokens omitted ...]" in out.text
        )
        assert "," in f"{lines:,}"

    def test_errors_first_keeps_error_lines_with_context(self) -> None:
        """Error lines deep in the middle survive with their neighbours; each gap is marked."""
        lines = numbered(4_000).splitlines(keepends=True)
        lines[1_500] = "ERROR: database connection refused (code 7781)\n"
        lines[2_700] = "Traceback (most recent call last): KeyError: 'user_id'\n"
        original = "".join(lines)
        out = truncate_text(original, count=COUNT, max_tokens=300, policy="errors_first")
        assert out is not None and COUNT(out.text) <= 300
        for index in (1_500, 2_700):
            block = "".join(lines[index - 2 : index + 3])
            assert block in out.text
        assert len(decode(original, out.text)) >= 3
        assert out.text.startswith(lines[0]) and out.text.endswith(lines[-1])

    def test_byte_budget_is_met_without_splitting_characters(self) -> None:
        """With `max_bytes`, the UTF-8 size fits, and one more line would not."""
        original = "".join(f"{i} données 数据 данные 🚀\n" for i in range(2_000))
        out = truncate_text(original, count=COUNT, max_tokens=10_000, max_bytes=700, policy="head")
        assert out is not None
        assert len(out.text.encode("utf-8")) <= 700
        ((start, end),) = decode(original, out.text)
        grown = render(original, [(original.index("\n", start) + 1, end)])
        assert len(grown.encode("utf-8")) > 700

    def test_text_within_budget_is_left_alone(self) -> None:
        """A text that already fits gives nothing to do."""
        text = numbered(20)
        assert truncate_text(text, count=COUNT, max_tokens=COUNT(text)) is None
        assert truncate_text("", count=COUNT, max_tokens=32) is None


class TestAdversarial:
    def test_one_giant_line_is_cut_at_character_boundaries(self) -> None:
        """A text with no line breaks is still cut, keeping graphemes whole, and marked."""
        unit = "naïve e\u0301 👨\u200d👩\u200d👧 👍🏽 ❤\ufe0f 漢字 مرحبا "
        original = unit * 5_000
        out = truncate_text(original, count=COUNT, max_tokens=150)
        assert out is not None and COUNT(out.text) <= 150
        ((start, end),) = decode(original, out.text)
        assert "characters" in MARKER.search(out.text).group("what")  # type: ignore[union-attr]
        for cut in (start, end):
            assert not unicodedata.combining(original[cut])
            assert original[cut] not in "\u200d\ufe0f" and original[cut - 1] != "\u200d"
            assert not 0x1F3FB <= ord(original[cut]) <= 0x1F3FF
        assert COUNT(out.text) >= 150 - 40  # chunks are small next to the budget

    def test_binary_looking_text(self) -> None:
        """Control characters and replacement characters are cut like any text."""
        original = "".join(chr(i) for i in range(1, 256) if i != 10) * 200 + "\ufffd\x00" * 500
        out = truncate_text(original, count=COUNT, max_tokens=100)
        assert out is not None and COUNT(out.text) <= 100
        decode(original, out.text)

    def test_mixed_scripts_and_emoji(self) -> None:
        """Lines in many scripts keep whole lines and exact marker numbers."""
        words = [
            "Привет мир",
            "こんにちは世界",
            "שלום עולם",
            "🎉🔥💯",
            "\u03b3\u03b5\u03b9\u03ac \u03c3\u03bf\u03c5",
            "नमस्ते",
        ]
        original = "".join(f"{words[i % len(words)]} #{i}\n" for i in range(3_000))
        out = truncate_text(original, count=COUNT, max_tokens=120)
        assert out is not None and COUNT(out.text) <= 120
        ((start, end),) = decode(original, out.text)
        assert original[start - 1] == "\n" and original[end - 1] == "\n"

    def test_deeply_nested_json_stays_valid(self) -> None:
        """Nesting a few hundred levels deep is cut into valid JSON within budget."""
        original = "[" * 300 + '"deep"' + "]" * 300
        out = truncate_text(original, count=COUNT, max_tokens=40)
        assert out is not None and out.format == "json"
        json.loads(out.text)
        assert COUNT(out.text) <= 40

    def test_json_too_deep_to_parse_is_cut_as_text(self) -> None:
        """Nesting beyond what a parser accepts is truncated as plain text, still marked."""
        original = "[" * 50_000 + "]" * 50_000
        out = truncate_text(original, count=COUNT, max_tokens=64)
        assert out is not None and out.format == "text" and COUNT(out.text) <= 64
        decode(original, out.text)

    @settings(max_examples=60, deadline=None)
    @given(
        lines=st.lists(
            st.text(st.characters(exclude_categories=["Cs"]), max_size=120), max_size=200
        ),
        max_tokens=st.integers(32, 300),
        policy=st.sampled_from(POLICIES),
    )
    def test_any_text_fits_and_maps_back(
        self, lines: list[str], max_tokens: int, policy: str
    ) -> None:
        """For any text and budget, the cut fits and every marker matches the omitted span."""
        original = "\n".join(lines)
        out = truncate_text(original, count=COUNT, max_tokens=max_tokens, policy=policy)  # type: ignore[arg-type]
        if out is None:
            assert COUNT(original) <= max_tokens
            return
        assert COUNT(out.text) <= max_tokens
        if out.format == "json":
            json.loads(out.text)
        elif not MARKER.search(original):
            decode(original, out.text)


class TestJson:
    def test_long_array_keeps_first_items_and_a_count(self) -> None:
        """Records stay whole; the last element says how many more there were."""
        records = [{"id": i, "name": f"user_{i}", "tags": ["a", "b"]} for i in range(3_000)]
        out = truncate_text(json.dumps(records), count=COUNT, max_tokens=400)
        assert out is not None and out.format == "json"
        value = json.loads(out.text)
        assert COUNT(out.text) <= 400
        *kept, note = value
        assert kept == records[: len(kept)]
        assert note == f"[... {len(records) - len(kept):,} more items]"
        assert COUNT(out.text) >= 400 * 0.8

    def test_long_strings_and_many_keys_are_shortened(self) -> None:
        """Long string values keep their start; big objects keep their first keys."""
        body = "lorem ipsum dolor " * 5_000
        payload = {"content": body, "fields": {f"k{i}": i for i in range(2_000)}}
        original = json.dumps(payload, indent=2)
        out = truncate_text(original, count=COUNT, max_tokens=500)
        assert out is not None and COUNT(out.text) <= 500
        value = json.loads(out.text)
        assert "\n  " in out.text  # the original's indentation is kept
        head, rest = value["content"].split("[... ")
        assert body.startswith(head)
        assert rest == f"{len(body) - len(head):,} more characters]"
        keys = list(value["fields"])
        assert keys[-1] == f"[... {2_000 - (len(keys) - 1):,} more keys]"

    def test_not_json_constants_are_plain_text(self) -> None:
        """NaN is not JSON: such text is cut as text."""
        original = json.dumps([float("nan")] * 2_000)
        out = truncate_text(original, count=COUNT, max_tokens=64)
        assert out is not None and out.format == "text"


class TestMarkup:
    def test_xml_is_cut_between_elements_and_stays_well_formed(self) -> None:
        """No tag is split, and head + marker + tail still parses as XML."""
        items = "".join(
            f"<item id='{i}'><name>n{i}</name><v>{i * 3}</v></item>" for i in range(2_000)
        )
        original = f"<?xml version='1.0'?><root><items>{items}</items></root>"
        out = truncate_text(original, count=COUNT, max_tokens=300)
        assert out is not None and out.format == "markup" and COUNT(out.text) <= 300
        decode(original, out.text)
        ET.fromstring(out.text.split("?>", 1)[1])

    def test_multi_line_tags_are_never_split(self) -> None:
        """A tag spanning lines is kept whole or omitted whole."""
        block = '<div\n  class="row"\n  data-x="1">cell</div>\n'
        original = "<html><body>\n" + block * 2_000 + "</body></html>"
        out = truncate_text(original, count=COUNT, max_tokens=200)
        assert out is not None and COUNT(out.text) <= 200
        text = MARKER.sub("", out.text)
        assert text.count("<div") == text.count("</div>")
        outside_tags = re.sub(r"<[^<>]*>", "", text)
        assert "<" not in outside_tags and ">" not in outside_tags
        decode(original, out.text)

    def test_wrapped_command_output_keeps_its_frame(self) -> None:
        """mini-swe-agent style output keeps the return code and the closing tag."""
        original = "<returncode>1</returncode>\n<output>\n" + numbered(3_000) + "</output>"
        out = truncate_text(original, count=COUNT, max_tokens=200)
        assert out is not None and out.format == "markup"
        assert out.text.startswith("<returncode>1</returncode>\n<output>\n")
        assert out.text.endswith("</output>")
        decode(original, out.text)


def _is_json(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict | list)
    except ValueError:
        return False


def _trace_files() -> list[Path]:
    names = [
        "claude_code/marot_spotter/4d5611e5-241a-462a-8d15-5122611a9569.jsonl",
        "claude_code/marot_spotter/258c7280-ae70-4798-800f-63464d01a85d.jsonl",
        "mini_swe_agent_deepseek/deepseek_chat_test_1-100/django__django-15814/django__django-15814.traj.json",
        "mini_swe_agent_deepseek/deepseek_chat_test_1-100/django__django-11910/django__django-11910.traj.json",
    ]
    return [TRACES / name for name in names if (TRACES / name).exists()]


@pytest.mark.slow
@pytest.mark.skipif(not _trace_files(), reason="shared traces not present")
class TestSharedTraces:
    @pytest.mark.parametrize("path", _trace_files(), ids=lambda p: p.name[:24])
    @pytest.mark.parametrize("max_tokens", [300, 1_000])
    async def test_every_tool_result_is_cut_within_target(
        self, path: Path, max_tokens: int
    ) -> None:
        """Every cut fits, keeps pairing fields, maps back, and keeps the edge lines' entities."""
        graph = load_graph(path)
        ctx = ProcessorContext.for_graph(graph)
        truncator = ToolOutputTruncator(max_tokens=max_tokens, policies={"bash": "errors_first"})
        proposal = await truncator.propose(results(graph), ctx)
        assert proposal.edits
        kept = total = 0
        for edit in proposal.edits:
            assert isinstance(edit, Replace)
            old, new = graph[edit.target], edit.replacement
            assert isinstance(old, AnswerNode) and isinstance(new, AnswerNode)
            assert COUNT(new.text) <= max_tokens
            assert (new.tool_call_id, new.name, new.is_error) == (
                old.tool_call_id,
                old.name,
                old.is_error,
            )
            if not MARKER.search(old.text):
                # A cut is of the text with its costly rulers shrunk (`processors.rulers`).
                decode(shrink_rulers(old.text, COUNT)[0], new.text)
            lines = old.text.split("\n")
            edges = [line for line in (lines[0], lines[-1]) if len(line) < max_tokens]
            assert missing_entities(critical_entities("\n".join(edges)), new.text) == []
            entities = critical_entities(old.text)
            total += len(entities)
            kept += len(entities) - len(missing_entities(entities, new.text))
        # Measured: entity retention is 0.85-1.25x the share of tokens kept on these traces.
        assert kept / total >= 0.75 * proposal.tokens_after / proposal.tokens_before
        targets = [edit.target for edit in replaces(proposal)]
        assert proposal.tokens_before == sum(graph.tokens(target) for target in targets)

    async def test_json_tool_results_stay_valid_json(self) -> None:
        """Airline tool results (JSON) are cut into valid JSON within the target."""
        path = TRACES / "tau2_bench_whissle_airline"
        files = sorted(path.glob("*.json")) if path.exists() else []
        if not files:
            pytest.skip("tau2 traces not present")
        cut = 0
        for session in load_sessions(files[0]):
            graph = ContextGraph()
            graph.ingest(session.events)
            ctx = ProcessorContext.for_graph(graph)
            proposal = await ToolOutputTruncator(max_tokens=64).propose(results(graph), ctx)
            for edit in proposal.edits:
                assert isinstance(edit, Replace)
                assert COUNT(edit.replacement.text) <= 64
                if _is_json(graph[edit.target].text):
                    json.loads(edit.replacement.text)
                    cut += 1
        assert cut > 0
