from __future__ import annotations

import json
from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from context_graph import ContextGraph
from context_graph.entities import critical_entities
from context_graph.graph.content import TextPart
from context_graph.graph.nodes import Node
from context_graph.testing import WordCounter
from processors import ProcessorContext, Replace
from processors.base import GraphView, replacement_for
from processors.distill import Distiller, distill_text
from processors.distill.references import LaterReferences
from processors.distill.reserve import RESERVE_LABEL, rank_entities

FIND = [f"./pkg/{'core' if i % 3 else 'io'}/module_{i}.py" for i in range(2_000)]
DEEP = "./pkg/io/module_1584.py"


def _distill(text: str, level: str, **options: object) -> str:
    return distill_text(text, level, count=WordCounter().count, **options).text  # type: ignore[arg-type]


def _reserve(text: str) -> list[str]:
    """The items of the reserve line (the `+N more` item included), or none."""
    last = text.split("\n")[-1]
    if not last.startswith(RESERVE_LABEL):
        return []
    return last.removeprefix(RESERVE_LABEL).removesuffix("]").split(", ")


def _letters(number: int) -> str:
    """`number` in base 26 with letters (`0` is `A`): error names hold no digits."""
    out = ""
    while True:
        number, digit = divmod(number, 26)
        out = chr(ord("A") + digit) + out
        if not number:
            return out


def _module(errors: Sequence[str]) -> str:
    """A Python module whose error names sit in function bodies (heavy keeps signatures)."""
    parts = ['"""Helpers."""', ""]
    for index, error in enumerate(errors):
        parts += [
            f"def check_{index}(value: int) -> int:",
            f'    """Check value number {index}."""',
            f"    total = value * {index + 100} + offset_{index}",
            "    if total < 0:",
            f"        raise {error}(f'bad value {{value}} at step_{index}')",
            "    return total",
            "",
        ]
    return "\n".join(parts)


class TestRankEntities:
    def test_tiers_in_order_and_first_seen_order_within_a_tier(self) -> None:
        """Error names, then named later, then paths, other names, numbers; stable inside."""
        entities = ["1234", "parse_row", "src/b.py", "KeyError", "src/a.py", "load_all", "OSError"]
        ranked = rank_entities(entities, {"load_all", "src/a.py"})
        assert ranked == [
            (0, "KeyError"),
            (0, "OSError"),
            (1, "src/a.py"),
            (1, "load_all"),
            (2, "src/b.py"),
            (3, "parse_row"),
            (4, "1234"),
        ]

    def test_an_entity_is_ranked_once(self) -> None:
        """Repeated entities get one place, the first."""
        assert rank_entities(["a.py", "b.py", "a.py"]) == [(2, "a.py"), (2, "b.py")]


class TestReserveLine:
    def test_lists_only_what_the_body_left_out_and_counts_the_rest(self) -> None:
        """Every listed entity is in the original and not in the body; `+N more` is exact."""
        text = "\n".join(FIND)
        out = _distill(text, "heavy")
        body = "\n".join(out.split("\n")[1:-1])
        items = _reserve(out)
        assert items and items[-1].startswith("+") and items[-1].endswith(" more")
        listed = items[:-1]
        assert listed
        assert all(item in text and item not in body for item in listed)
        left = [e for e in dict.fromkeys(critical_entities(text)) if e not in body]
        assert int(items[-1][1:-5].replace(",", "")) == len(left) - len(listed)

    def test_named_paths_survive_a_long_listing(self) -> None:
        """A path deep in a 2,000-path listing is kept at heavy when it is named, not otherwise."""
        text = "\n".join(FIND)
        assert DEEP not in _distill(text, "heavy")
        assert _reserve(_distill(text, "heavy", keep={DEEP}))[0] == DEEP

    def test_error_names_survive_heavy(self) -> None:
        """Every error name of a module is in its heavy distillate, though bodies are dropped."""
        errors = [f"Custom{_letters(i)}Error" for i in range(8)] + ["KeyError", "TimeoutError"]
        text = _module(errors)
        out = _distill(text, "heavy", path="checks.py")
        assert "raise " not in out
        assert all(error in out for error in errors)
        assert _reserve(out)[: len(errors)] == errors

    def test_hundreds_of_error_names_stay_bounded(self) -> None:
        """Error names overdraw the target by at most the budget again, then are counted."""
        text = _module([f"Failure{_letters(i)}Error" for i in range(400)])
        result = distill_text(text, "heavy", path="checks.py", count=WordCounter().count)
        assert _reserve(result.text)[-1].endswith(" more")
        assert result.tokens_after < 0.3 * result.tokens_before

    def test_json_stays_json(self) -> None:
        """JSON gets no reserve line: the body after the header still parses."""
        rows = [{"id": i, "path": f"src/mod_{i}.py", "error": "KeyError"} for i in range(80)]
        out = _distill(json.dumps(rows, indent=2), "heavy")
        assert not _reserve(out)
        json.loads("\n".join(out.split("\n")[1:]))

    def test_light_has_no_reserve(self) -> None:
        """Light keeps every line, so it has nothing to list."""
        assert not _reserve(_distill("\n".join(FIND), "light", keep={"./pkg/io/module_3.py"}))


_WORDS = st.sampled_from(
    ["KeyError", "ValueError", "src/app.py", "load_rows", "1234", "ok", "the", "step", "x"]
)


class TestProperties:
    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(
        lines=st.lists(st.lists(_WORDS, min_size=1, max_size=8).map(" ".join), max_size=60),
        level=st.sampled_from(["medium", "heavy"]),
    )
    def test_error_names_are_always_kept(self, lines: list[str], level: str) -> None:
        """Outside JSON, every error name of the original is in the medium or heavy text."""
        text = "\n".join(lines)
        result = distill_text(text, level, count=WordCounter().count)  # type: ignore[arg-type]
        names = [e for e in critical_entities(text) if e.endswith("Error")]
        assert result.content_type == "json" or all(name in result.text for name in names)


def _session(mention: str | None) -> tuple[ContextGraph, Node]:
    """A `find` result, then an assistant turn that names `mention` (or says nothing)."""
    graph = ContextGraph(counter=WordCounter())
    graph.add_user("where is the io code?")
    graph.add_assistant(tool_calls=[{"id": "c1", "name": "bash", "arguments": {"cmd": "find"}}])
    result = graph[graph.add_tool_result("c1", "\n".join(FIND))]
    if mention is not None:
        call = {"id": "c2", "name": "read", "arguments": {"path": mention}}
        graph.add_assistant("Reading the module.", tool_calls=[call])
    else:
        graph.add_assistant("Done.")
    return graph, result


class TestDistillerKeepsWhatLaterTurnsName:
    @pytest.mark.parametrize("level", ["medium", "heavy"])
    async def test_a_path_named_later_is_kept(self, level: str) -> None:
        """The path a later call reads survives however it is spelled; another file does not."""
        for mention, kept in (
            ("pkg/io/module_1584.py", True),
            ("/repo/pkg/io/module_1584.py", True),
            ("pkg/io/module_1587.py", False),
        ):
            graph, result = _session(mention)
            proposal = await Distiller(level=level).propose(  # type: ignore[arg-type]
                [result], ProcessorContext.for_graph(graph)
            )
            (edit,) = proposal.edits
            assert isinstance(edit, Replace)
            assert (DEEP in edit.replacement.text) is kept

    async def test_nothing_named_nothing_kept(self) -> None:
        """Without a later mention the deep path is left out at heavy."""
        graph, result = _session(None)
        proposal = await Distiller(level="heavy").propose(
            [result], ProcessorContext.for_graph(graph)
        )
        (edit,) = proposal.edits
        assert isinstance(edit, Replace)
        assert DEEP not in edit.replacement.text


class TestLaterReferences:
    def test_exact_and_path_tail_matches_after_the_node_only(self) -> None:
        """Names count when a later turn writes them, or a path they are a tail of, or back."""
        graph = ContextGraph(counter=WordCounter())
        graph.add_assistant("I will check load_rows and /repo/src/early.py first.")
        graph.add_assistant(tool_calls=[{"id": "c", "name": "bash", "arguments": {"cmd": "ls"}}])
        result = graph.add_tool_result("c", "output")
        call = {"path": "/repo/src/app.py", "cmd": "cat a.py\nsed -n 1p parse_rows.py"}
        graph.add_assistant(
            "Then parse_row in src/models/user.py, see https://x.org/issues/123.",
            tool_calls=[{"id": "d", "name": "edit", "arguments": call}],
        )
        named = LaterReferences(GraphView(graph)).after(result)
        for entity in [
            "parse_row",  # exact, in later text
            "src/app.py",  # a tail of a later path
            "app.py",
            "/srv/repo/src/models/user.py",  # a later path is its tail
            "parse_rows.py",  # in a later call's decoded arguments
        ]:
            assert entity in named, entity
        for entity in ["load_rows", "early.py", "123", "nsed", "models/other.py"]:
            assert entity not in named, entity

    def test_a_derived_node_stands_where_its_original_stood(self) -> None:
        """A replacement (not in the transcript) sees the turns after the node it replaces."""
        graph, result = _session("pkg/io/module_1584.py")
        copy = replacement_for(result, [TextPart(text="[masked]")])
        graph.add_derived(copy)
        references = LaterReferences(GraphView(graph))
        assert DEEP in references.after(copy.id)
        assert DEEP not in references.after("no-such-node")


class _CountedOrder(tuple[str, ...]):
    """A transcript that counts the ids read by walking it (not by index)."""

    walked = 0

    def __iter__(self):  # type: ignore[no-untyped-def]
        for node_id in super().__iter__():
            _CountedOrder.walked += 1
            yield node_id


class _CountingView(GraphView):
    def transcript(self) -> tuple[str, ...]:
        return _CountedOrder(super().transcript())


class TestLaterReferencesCost:
    def test_a_run_does_not_walk_the_whole_transcript(self) -> None:
        """Where a node stands is its `seq`: a run reads the turns after it, not the history."""
        graph = ContextGraph(counter=WordCounter())
        for step in range(300):
            graph.add_assistant(f"step {step}")
        graph.add_assistant(tool_calls=[{"id": "c", "name": "bash", "arguments": {"cmd": "ls"}}])
        result = graph.add_tool_result("c", "output in pkg/io/module_1.py")
        graph.add_assistant("Now pkg/io/module_1.py.")
        _CountedOrder.walked = 0
        references = LaterReferences(_CountingView(graph))
        assert "pkg/io/module_1.py" in references.after(result)
        assert "step 3" not in references.after(result)
        assert _CountedOrder.walked == 0
