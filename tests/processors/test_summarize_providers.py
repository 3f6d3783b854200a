"""Compaction providers: registered by name, tried first, the safeguard brief on failure."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import anthropic
import openai
import pytest
from anthropic.types.beta import BetaContextManagementConfigParam
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai.types.responses import response_compact_params
from pydantic import TypeAdapter

from benchmarks.compact_server import CompactServer, Mode
from context_graph import ConfigurationError, ContextGraph
from context_graph.graph.native import NativeCompaction
from context_graph.graph.nodes import Node, SummaryNode
from context_graph.render import Renderer
from context_graph.testing import WordCounter
from orchestrator import ContextManager, WorkingGraph
from orchestrator.bus import Recorder
from orchestrator.policy import Policy
from processors.base import Abstract, ProcessorContext, Proposal
from processors.summarize import ExtractiveSummarizer, HistorySummarizer
from processors.summarize.providers import (
    AnthropicCompactProvider,
    Compacted,
    OpenAICompactProvider,
    available_compaction_providers,
    create_compaction_provider,
    register_compaction_provider,
    unregister_compaction_provider,
)

REQUEST = "Fix ticket ABC-1234 in src/app/main.py. You must never touch the prod database."


def build_session(turns: int = 6) -> ContextGraph:
    graph = ContextGraph(counter=WordCounter())
    graph.add_system("You are a coding agent.")
    graph.add_user(REQUEST)
    for n in range(turns):
        graph.add_assistant(
            f"Step {n}: reading.",
            tool_calls=[{"id": f"c{n}", "name": "bash", "arguments": {"command": f"ls {n}"}}],
        )
        graph.add_tool_result(f"c{n}", f"file_{n}.py\n" * 30)
        graph.add_user(f"Now also bump version to 2.4.{n} in setup.cfg.")
        graph.add_assistant(f"Bumped to 2.4.{n} as asked; the tests pass again.")
    return graph


def span_of(graph: ContextGraph | WorkingGraph) -> list[Node]:
    """Every unit after the first request, but the last: the span a run would compact."""
    units = [u for u in graph.units() if u.kind != "system"]
    return [graph[i] for unit in units[1:-1] for i in unit.node_ids]


def _processor(provider: Any, **options: Any) -> HistorySummarizer:
    fallback = ExtractiveSummarizer(counter=WordCounter())
    return HistorySummarizer(provider=provider, fallback=fallback, **options)


async def _propose(processor: HistorySummarizer, working: WorkingGraph) -> Proposal:
    ctx = ProcessorContext(graph=working.snapshot(), tokens=working.token_cache)
    return await processor.propose(span_of(working), ctx)


def _summary(proposal: Proposal) -> SummaryNode:
    (edit,) = proposal.edits
    assert isinstance(edit, Abstract)
    assert isinstance(edit.summary, SummaryNode)
    return edit.summary


class Echo:
    """A user-defined provider: a readable summary naming every identifier it must keep."""

    name = "echo_test"

    def __init__(self, prefix: str = "Echo") -> None:
        self.prefix = prefix
        self.calls: list[tuple[int, str | None, tuple[str, ...]]] = []

    async def compact(
        self, messages: Sequence[Node], instructions: str | None, identifiers: Sequence[str]
    ) -> Compacted:
        self.calls.append((len(messages), instructions, tuple(identifiers)))
        return Compacted(text=f"{self.prefix}: {', '.join(identifiers)}.", provider=self.name)


@pytest.fixture(name="echo")
def echo_fixture() -> Iterator[None]:
    register_compaction_provider("echo_test", Echo)
    yield
    unregister_compaction_provider("echo_test")


class TestRegistry:
    def test_built_ins_are_registered(self) -> None:
        assert {"openai-compact", "anthropic-compact"} <= set(available_compaction_providers())

    def test_unknown_name_lists_the_names(self) -> None:
        with pytest.raises(ConfigurationError, match=r"no compaction provider named 'nope'.*ope"):
            HistorySummarizer(provider="nope")

    def test_bad_options_are_refused(self, echo: None) -> None:
        with pytest.raises(ConfigurationError, match="refuses its options"):
            create_compaction_provider("echo_test", colour="red")
        with pytest.raises(ConfigurationError, match="provider_options"):
            HistorySummarizer(provider=Echo(), provider_options={"prefix": "x"})

    def test_name_taken(self, echo: None) -> None:
        with pytest.raises(ConfigurationError, match="taken"):
            register_compaction_provider("echo_test", OpenAICompactProvider)

    async def test_chosen_in_a_toml_profile(self, echo: None) -> None:
        """A summarize stage names the provider; its options reach the provider."""
        profile = Policy.from_toml(
            """
            name = "remote"
            [[stages]]
            processor = "summarize"
            options = { provider = "echo_test", provider_options = { prefix = "Remote" } }
            """
        )
        (stage,), _ = profile.build_pipelines()
        assert stage is not None
        assert isinstance(stage, HistorySummarizer)
        assert isinstance(stage.provider, Echo)
        working = WorkingGraph(build_session())
        proposal = await _propose(stage, working)
        # Its summary names identifiers only: the user's later message is appended, quoted.
        assert proposal.note.startswith("provider ok (echo_test; its summary lost 1 of the")
        summary = _summary(proposal)
        assert summary.text.startswith("Remote: ")
        assert "\n- Now also bump version to 2.4.5 in setup.cfg." in summary.text
        assert summary.meta["path"] == "provider"
        (call,) = stage.provider.calls
        assert call[2] and all(identifier in summary.text for identifier in call[2])


@pytest.fixture(name="server")
def server_fixture() -> Iterator[CompactServer]:
    with CompactServer(delay=3.0) as server:
        yield server


def _openai(server: CompactServer) -> OpenAICompactProvider:
    client = openai.AsyncOpenAI(base_url=f"{server.url}/v1", api_key="test", max_retries=0)
    return OpenAICompactProvider(model="gpt-5.2", client=client)


def _anthropic(server: CompactServer) -> AnthropicCompactProvider:
    client = anthropic.AsyncAnthropic(base_url=server.url, api_key="test", max_retries=0)
    return AnthropicCompactProvider(model="claude-sonnet-4-5", client=client)


class TestOpenAICompact:
    async def test_opaque_item_renders_verbatim_to_responses_only(
        self, server: CompactServer
    ) -> None:
        working = WorkingGraph(build_session())
        proposal = await _propose(_processor(_openai(server)), working)
        assert proposal.note == "provider ok (openai-compact)"
        ((path, body),) = server.bodies
        assert path == "/v1/responses/compact"
        assert body["model"] == "gpt-5.2"
        TypeAdapter(response_compact_params.ResponseCompactParams).validate_python(body)
        assert "setup.cfg" in body["instructions"]
        summary = _summary(proposal)
        assert summary.native == NativeCompaction(
            provider="responses",
            item={"id": "cmp_1", "type": "compaction", "encrypted_content": "gAAAA-opaque-1"},
        )
        working.apply(proposal)
        items = Renderer(format="responses").render(working).payload["input"]
        assert dict(summary.native.item) in items
        # Any other provider is sent our own brief of the span in its place.
        brief = "ran `ls 0`"  # a line of our brief of the span
        assert brief in summary.text
        assert brief not in str(items)  # the item alone stands for the span there
        for fmt in ("anthropic", "openai", "gemini"):
            text = str(Renderer(format=fmt).render(working).payload)
            assert "gAAAA-opaque-1" not in text
            assert brief in text
            assert REQUEST in text

    async def test_the_summary_node_is_checked_by_the_sdk_reader(
        self, server: CompactServer
    ) -> None:
        """The item the engine stores is the one the SDK parsed: `ResponseCompactionItem`."""
        provider = _openai(server)
        result = await provider.compact(span_of(build_session()), None, ["ABC-1234"])
        assert result.native is not None
        openai.types.responses.ResponseCompactionItem.model_validate(dict(result.native.item))


class TestAnthropicCompact:
    async def test_readable_block_renders_verbatim_to_anthropic(
        self, server: CompactServer
    ) -> None:
        working = WorkingGraph(build_session())
        proposal = await _propose(_processor(_anthropic(server)), working)
        assert proposal.note.startswith("provider ok (anthropic-compact; its summary lost 1")
        ((path, body),) = server.bodies
        assert path == "/v1/messages"
        TypeAdapter(BetaContextManagementConfigParam).validate_python(body["context_management"])
        (edit,) = body["context_management"]["edits"]
        assert edit["type"] == "compact_20260112"
        assert edit["pause_after_compaction"] is True
        assert body["messages"][0]["role"] == "user"
        # The readable summary becomes ours: a `compaction` block would make Anthropic's
        # API ignore the first request before it, which this summary does not stand for.
        summary = _summary(proposal)
        assert summary.native is None
        assert summary.text.startswith("Summary of the conversation so far: setup.cfg")
        working.apply(proposal)
        for fmt in ("anthropic", "openai", "responses"):
            text = str(Renderer(format=fmt).render(working).payload)
            assert "Summary of the conversation so far: setup.cfg" in text
            assert REQUEST in text
            assert "'type': 'compaction'" not in text


FAILURES: tuple[Mode, ...] = ("500", "slow", "empty", "malformed")


async def _safeguard(provider: Any, server: CompactServer, mode: Mode) -> Proposal:
    server.mode = mode
    working = WorkingGraph(build_session())
    span = span_of(working)
    proposal = await _propose(_processor(provider, timeout=0.5), working)
    summary = _summary(proposal)
    assert summary.native is None
    assert summary.meta["path"] == "safeguard"
    assert "safeguard mode" in proposal.note
    # The recent units of the span stay as they are: the summary stands for fewer nodes.
    assert len(summary.abstracts) < len(span)
    assert set(summary.abstracts) < {n.id for n in span}
    return proposal


class TestFallback:
    @pytest.mark.parametrize("mode", FAILURES)
    async def test_openai_failure_falls_back(self, server: CompactServer, mode: Mode) -> None:
        proposal = await _safeguard(_openai(server), server, mode)
        assert "(openai-compact: " in proposal.note

    @pytest.mark.parametrize("mode", FAILURES)
    async def test_anthropic_failure_falls_back(self, server: CompactServer, mode: Mode) -> None:
        proposal = await _safeguard(_anthropic(server), server, mode)
        assert "(anthropic-compact: " in proposal.note

    async def test_timeout_and_empty_are_named(self, server: CompactServer) -> None:
        assert "timed out" in (await _safeguard(_openai(server), server, "slow")).note
        assert "empty result" in (await _safeguard(_anthropic(server), server, "empty")).note

    async def test_a_summary_that_drops_an_identifier_is_refused(self) -> None:
        class Lossy(Echo):
            async def compact(
                self, messages: Sequence[Node], instructions: str | None, ids: Sequence[str]
            ) -> Compacted:
                return Compacted(text="The user wanted some fixes.", provider="lossy")

        working = WorkingGraph(build_session())
        # A pinned fact that none of the user's sentences holds: quoting them (the repair
        # of a summary that lost them) cannot bring it back.
        proposal = await _propose(_processor(Lossy(), keep=["TICKET-77"]), working)
        assert "refused its summary" in proposal.note
        assert "TICKET-77" in proposal.note
        assert _summary(proposal).meta["path"] == "safeguard"

    async def test_a_summary_that_lost_the_users_words_is_repaired(self) -> None:
        """The identifiers it dropped were the user's: quoting the sentence restores them."""

        class Lossy(Echo):
            async def compact(
                self, messages: Sequence[Node], instructions: str | None, ids: Sequence[str]
            ) -> Compacted:
                return Compacted(text="The user wanted some fixes.", provider="lossy")

        proposal = await _propose(_processor(Lossy()), WorkingGraph(build_session()))
        assert "its summary dropped setup.cfg, 2.4.5; lost 1 of the user's" in proposal.note
        summary = _summary(proposal)
        assert summary.meta["path"] == "provider"
        assert summary.text.startswith("The user wanted some fixes.\n\n## The user's words")
        assert summary.text.endswith("- Now also bump version to 2.4.5 in setup.cfg.")


class Scripted:
    """A provider that fails, or succeeds, the way it is told."""

    name = "scripted"

    def __init__(self, outcome: object) -> None:
        self.outcome = outcome

    async def compact(
        self, messages: Sequence[Node], instructions: str | None, identifiers: Sequence[str]
    ) -> Any:
        if isinstance(self.outcome, BaseException):
            raise self.outcome
        if self.outcome == "ok":
            return Compacted(text=f"All done: {', '.join(identifiers)}.", provider=self.name)
        return self.outcome


OUTCOMES = st.one_of(
    st.just("ok"),
    st.sampled_from(
        [
            RuntimeError("boom"),
            ValueError("bad body"),
            TimeoutError(),
            Compacted(),
            Compacted(text="   "),
            None,
            "a plain string",
            Compacted(text="too vague"),
        ]
    ),
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(outcome=OUTCOMES, turns=st.integers(min_value=2, max_value=6))
async def test_the_proposal_is_the_providers_or_the_safeguards(outcome: object, turns: int) -> None:
    """For any outcome the summary is wholly the provider's or wholly the safeguard brief.

    (Or none at all, when the safeguard brief of the fewer units saves nothing: the note
    says so, and nothing of the failed provider's is proposed.)
    """
    working = WorkingGraph(build_session(turns))
    span = span_of(working)
    proposal = await _propose(_processor(Scripted(outcome)), working)
    if proposal.empty:
        assert outcome != "ok"
        assert "safeguard mode" in proposal.note
        assert "refused extractive summary" in proposal.note
        return
    summary = _summary(proposal)
    if outcome == "ok":
        assert summary.meta["path"] == "provider"
        assert summary.text.startswith("All done: ")
        assert summary.abstracts == tuple(n.id for n in span)
    elif summary.meta["path"] == "provider":
        # A readable summary that lost only the user's words (and identifiers they hold)
        # is the provider's with those sentences appended, quoted.
        assert isinstance(outcome, Compacted) and outcome.text
        assert summary.text.startswith(f"{outcome.text.rstrip()}\n\n## The user's words")
        assert "appended" in proposal.note
        assert summary.abstracts == tuple(n.id for n in span)
    else:
        assert summary.meta["path"] == "safeguard"
        assert "All done" not in summary.text
        assert summary.abstracts == tuple(n.id for n in span[: len(summary.abstracts)])
        assert len(summary.abstracts) < len(span)


class TestInAManager:
    @pytest.mark.parametrize("mode", ["ok", "500"])
    async def test_a_run_reports_the_path_on_the_bus(
        self, server: CompactServer, mode: Mode
    ) -> None:
        """Through a manager's compaction: the note on the bus says which path ran, and
        the render fits either way."""
        server.mode = mode
        processor = HistorySummarizer(provider=_openai(server), timeout=5)
        manager = ContextManager(
            format="responses",
            budget=1_500,
            counter=WordCounter(),
            policy=Policy(pipeline=[processor]),
        )
        manager.add_system("You are a careful coding agent.")
        manager.add_user(REQUEST)
        for step in range(8):
            manager.add_assistant(
                f"Running step {step}.",
                tool_calls=[{"id": f"c{step}", "name": "bash", "arguments": {"cmd": "make"}}],
            )
            manager.add_tool_result(f"c{step}", f"step {step} output line\n" * 60)
            manager.add_user(f"Go on with step {step + 1}.")
        with Recorder(manager.bus) as recorder:
            result = await manager.render()
        notes = [event["proposal"].note for event in recorder.of("proposal_made")]
        assert notes
        if mode == "ok":
            assert notes[0] == "provider ok (openai-compact)"
            assert "gAAAA-opaque-1" in str(result.payload)
        else:
            assert "safeguard mode (openai-compact: InternalServerError" in notes[0]
            assert "gAAAA" not in str(result.payload)
        assert recorder.of("proposal_applied")
        assert result.tokens <= 1_500
