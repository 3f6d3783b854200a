"""Fixtures: `sdk_check` checks a payload against the official SDKs' request types;
`meta_view` gives chosen nodes of a graph extra `meta`, as an importer would record it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest
from pydantic import JsonValue

from benchmarks.sdk_types import sdk_problems
from context_graph import ContextGraph, Node, Unit

SdkCheck = Callable[[Any, str], list[str]]


@pytest.fixture(name="sdk_check")
def fixture_sdk_check() -> SdkCheck:
    """`sdk_check(payload, format)` lists where a payload breaks the SDK request types."""
    return sdk_problems


class MetaView:
    """A graph whose nodes `meta` names get that meta (a custom call as imported)."""

    def __init__(self, graph: ContextGraph, meta: Mapping[str, Mapping[str, JsonValue]]) -> None:
        self._graph = graph
        self._meta = meta

    @property
    def version(self) -> int:
        return self._graph.version

    def units(self) -> tuple[Unit, ...]:
        return self._graph.units()

    def __getitem__(self, node_id: str) -> Node:
        node = self._graph[node_id]
        extra = self._meta.get(node_id)
        return node if extra is None else node.model_copy(update={"meta": dict(extra)})

    def answer_to(self, call_node_id: str) -> Node | None:
        return self._graph.answer_to(call_node_id)

    def first_call_with_id(self, tool_call_id: str) -> str | None:
        return self._graph.first_call_with_id(tool_call_id)


MetaViewFactory = Callable[[ContextGraph, Mapping[str, Mapping[str, JsonValue]]], MetaView]


@pytest.fixture(name="meta_view", scope="session")
def fixture_meta_view() -> MetaViewFactory:
    """`meta_view(graph, {node_id: meta})`: a render source with those nodes' meta set."""
    return MetaView
