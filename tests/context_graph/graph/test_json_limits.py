"""`check_json_value`: JSON-like values within bounds pass; the first part past one is named."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter

from context_graph.errors import IngestError, SourceLocation
from context_graph.graph.events import AgentEvent, UserTurn
from context_graph.graph.json_limits import MAX_DEPTH, MAX_INT_DIGITS, MAX_STRING, check_json_value

_events: TypeAdapter[list[AgentEvent]] = TypeAdapter(list[AgentEvent])


def _nested(depth: int, leaf: Any = 1) -> Any:
    """`depth` containers around `leaf`, dicts (key `k`) and lists taking turns."""
    value = leaf
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    return value


class TestBounds:
    def test_bounds_sit_well_inside_what_the_decoders_accept(self) -> None:
        """The defaults leave a wide margin under pydantic's depth and Python's digit limits."""
        assert MAX_DEPTH * 2 < 200
        assert MAX_INT_DIGITS < sys.get_int_max_str_digits()
        assert MAX_STRING * 4 < 1_000_000_000  # SQLite's default longest value, in bytes

    def test_a_value_at_every_bound_round_trips_through_pydantic_and_json(self) -> None:
        """A meta value at the depth, digit and length bounds encodes and decodes unchanged."""
        meta = {
            "deep": _nested(MAX_DEPTH - 1),  # with `meta` itself, MAX_DEPTH containers
            "big": 10**MAX_INT_DIGITS - 1,
            "long": "x" * 1000,
            "unicode": "über 🙂 \u2028",
        }
        check_json_value(meta, path="meta")
        event = UserTurn(content="hi", meta=meta)
        assert _events.validate_json(_events.dump_json([event])) == [event]
        assert json.loads(json.dumps(meta)) == meta


class TestRefusals:
    @pytest.mark.parametrize(
        ("value", "where", "problem"),
        [
            ({"a": {"b": [_nested(MAX_DEPTH)]}}, "meta.a.b.0", "nested more than 64 levels"),
            ({"n": 10**MAX_INT_DIGITS}, "meta.n", "more than 4,000 digits"),
            ({"n": -(10**MAX_INT_DIGITS)}, "meta.n", "more than 4,000 digits"),
            ({"s": ["ok", "a\ud800b"]}, "meta.s.1", "lone surrogate"),
            ({"f": float("nan")}, "meta.f", "JSON cannot hold"),
            ({"f": [float("inf")]}, "meta.f.0", "JSON cannot hold"),
            ({"o": {1: 2}}, "meta.o", "not a string"),
            ({"o": {"\udfff": 2}}, "meta.o", "key that holds"),
            ({"o": object()}, "meta.o", "not JSON"),
        ],
        ids=[
            "depth",
            "digits",
            "negative-digits",
            "surrogate",
            "nan",
            "inf",
            "int-key",
            "surrogate-key",
            "object",
        ],
    )
    def test_the_first_bad_part_is_named_by_its_path(
        self, value: Any, where: str, problem: str
    ) -> None:
        """The error names the path of the offending part and what is wrong with it."""
        with pytest.raises(IngestError, match=problem) as caught:
            check_json_value(value, path="meta")
        assert caught.value.location.path.startswith(where)

    def test_the_depth_path_is_the_container_past_the_bound(self) -> None:
        """A value one level too deep is refused at the container that crosses the bound."""
        value = {"a": _nested(MAX_DEPTH)}
        with pytest.raises(IngestError) as caught:
            check_json_value(value, path="meta")
        path = caught.value.location.path
        assert path is not None
        assert path.count(".") == MAX_DEPTH

    def test_a_long_string_is_refused(self) -> None:
        """A string past the bound is refused with its length."""
        with pytest.raises(IngestError, match="11 characters"):
            check_json_value({"s": "x" * 11}, path="meta", max_string=10)

    def test_a_value_nested_far_past_the_recursion_limit_is_refused_not_a_crash(self) -> None:
        """The walk is iterative: 100,000 levels give an `IngestError`, not a RecursionError."""
        value: Any = 1
        for _ in range(100_000):
            value = [value]
        with pytest.raises(IngestError, match="nested more than"):
            check_json_value(value, path="meta")

    def test_the_location_keeps_where_the_record_came_from(self) -> None:
        """A given location keeps its file, line and message; the path is added to it."""
        location = SourceLocation(file="run.jsonl", line=14, index=3)
        with pytest.raises(IngestError) as caught:
            check_json_value({"n": 10**5000}, path="meta", location=location)
        assert caught.value.location == SourceLocation("run.jsonl", 14, 3, "meta.n")
        assert str(caught.value).startswith("run.jsonl line 14 message 3 meta.n: ")


_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**MAX_INT_DIGITS) + 1, max_value=10**MAX_INT_DIGITS - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=20,
)


class TestProperties:
    @settings(max_examples=200, deadline=None)
    @given(value=_VALUES, depth=st.integers(0, MAX_DEPTH - 2))
    def test_every_value_within_the_bounds_passes_and_round_trips(
        self, value: Any, depth: int
    ) -> None:
        """Whatever passes the check encodes and decodes unchanged by pydantic and `json`."""
        wrapped = {"v": _nested(depth, value)}
        try:
            check_json_value(wrapped, path="meta")
        except IngestError as exc:
            # Only nesting can go past a bound here: the recursive part adds levels.
            assert "nested more than" in exc.reason
            return
        event = UserTurn(content="x", meta=wrapped)
        assert _events.validate_json(_events.dump_json([event])) == [event]
        assert json.loads(json.dumps(wrapped)) == wrapped

    @settings(max_examples=100, deadline=None)
    @given(value=_VALUES, extra=st.integers(1, 5))
    def test_every_value_past_the_depth_bound_is_refused(self, value: Any, extra: int) -> None:
        """Wrapping any value in more than `MAX_DEPTH` containers is refused."""
        with pytest.raises(IngestError, match="nested more than"):
            check_json_value(_nested(MAX_DEPTH + extra, value), path="meta")

    @settings(max_examples=100, deadline=None)
    @given(digits=st.integers(MAX_INT_DIGITS + 1, MAX_INT_DIGITS + 400), negative=st.booleans())
    def test_every_integer_past_the_digit_bound_is_refused(
        self, digits: int, negative: bool
    ) -> None:
        """An integer with more digits than the bound is refused at its path."""
        number = 10 ** (digits - 1)
        with pytest.raises(IngestError) as caught:
            check_json_value([1, -number if negative else number], path="meta")
        assert caught.value.location.path == "meta.1"
