"""A tool result's exit status survives a store: events, replacements and older sessions."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from context_graph import AgentEvent, AssistantTurn, ToolCall, ToolResult, UserTurn
from context_graph.graph.nodes import ToolResultNode
from context_graph.testing import WordCounter
from orchestrator.persistence import SessionStore, open_store
from processors.base import ProcessorContext, Proposal
from processors.exit_status import exit_code_of
from processors.mask import ObservationMasker

Opener = Callable[[], SessionStore]


@pytest.fixture(name="location", params=["sqlite", "postgres"])
def location_fixture(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """One fresh location per backend (PostgreSQL skips without a server)."""
    if request.param == "sqlite":
        return str(tmp_path / "session.db")
    server: Any = request.getfixturevalue("postgres")
    return str(server.location())


@pytest.fixture(name="reopen")
def reopen_fixture(location: str) -> Iterator[Opener]:
    opened: list[SessionStore] = []

    def reopen() -> SessionStore:
        store = open_store(location, counter=WordCounter(), durable=False)
        opened.append(store)
        return store

    yield reopen
    for store in opened:
        store.close()


def _clock() -> float:
    return 1_700_000_000.0


def _session(**result: Any) -> list[AgentEvent]:
    words = " ".join(f"word{n}" for n in range(200))
    return [
        UserTurn(content="build it"),
        AssistantTurn(tool_calls=(ToolCall(id="c1", name="bash", arguments={"cmd": "make"}),)),
        ToolResult(call_id="c1", content=words, **result),
        UserTurn(content="next"),
        UserTurn(content="and next"),
    ]


def _results(nodes: Any) -> list[ToolResultNode]:
    return [node for node in nodes if isinstance(node, ToolResultNode)]


class TestExitCodeInStores:
    def test_the_exit_code_of_an_event_comes_back(self, reopen: Opener) -> None:
        """A result ingested with `exit_code` is restored with it."""
        store = reopen()
        store.restore(clock=_clock).raw.ingest(_session(exit_code=2))
        store.close()
        (node,) = _results(reopen().restore(clock=_clock).raw)
        assert node.exit_code == 2

    async def test_a_masked_replacement_keeps_it_across_a_restore(self, reopen: Opener) -> None:
        """The masker's replacement carries the status, and the journal keeps it."""
        store = reopen()
        session = store.restore(clock=_clock)
        session.raw.ingest(_session(exit_code=5))
        view = session.working.snapshot()
        masker = ObservationMasker(keep_turns=1, min_tokens=0)
        current = [view[node_id] for node_id in view.current_ids()]
        ctx = ProcessorContext(graph=view, tokens=view.token_cache)
        proposal: Proposal = await masker.propose(current, ctx)
        session.working.apply(proposal)
        store.close()
        restored = reopen().restore(clock=_clock).working.snapshot()
        (masked,) = _results(restored[node_id] for node_id in restored.current_ids())
        assert masked.replaces is not None and masked.exit_code == 5
        assert masked.text.endswith("exit 5]")

    def test_a_session_stored_with_the_older_meta_key_keeps_its_status(
        self, reopen: Opener
    ) -> None:
        """A result stored as the older importer wrote it (`meta["returncode"]`) reads 1."""
        store = reopen()
        store.restore(clock=_clock).raw.ingest(_session(meta={"returncode": 1}))
        store.close()
        (node,) = _results(reopen().restore(clock=_clock).raw)
        assert node.exit_code is None and exit_code_of(node) == 1
