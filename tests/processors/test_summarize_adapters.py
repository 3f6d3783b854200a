"""The model adapters with the real SDKs, over HTTP, against local fake servers."""

from __future__ import annotations

import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, get_args

import pytest

from context_graph import ConfigurationError, ContextGraph
from context_graph.graph.nodes import Node
from context_graph.testing import WordCounter
from context_graph.vendors import ANTHROPIC, OPENAI, Vendor
from processors.base import Abstract, ProcessorContext, Proposal
from processors.summarize import (
    AnthropicSummarizer,
    ExtractiveSummarizer,
    HistorySummarizer,
    OpenAISummarizer,
)
from processors.summarize.adapters import SYSTEM_PROMPT, render_transcript
from processors.summarize.adapters.options import SummarizerVendor
from processors.summarize.checks import find_tool_call_syntax, tool_names_of

REQUEST = "Fix ticket ABC-1234 in src/app/main.py. You must never touch the prod database."
GOOD = "The user asked to fix ABC-1234 in src/app/main.py; the tests pass now."
MODEL = "test-model"


def _call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"id": call_id, "name": name, "arguments": arguments}


def build_session() -> ContextGraph:
    graph = ContextGraph(counter=WordCounter())
    graph.add_user(REQUEST)
    graph.add_assistant(
        "I'll read it.", tool_calls=[_call("c1", "Read", file_path="src/app/main.py")]
    )
    graph.add_file_read("src/app/main.py", "def main():\n    return 1\n" * 20, call_id="c1")
    graph.add_assistant(tool_calls=[_call("c2", "bash", command="pytest -x")])
    graph.add_tool_result("c2", "<returncode>0</returncode>\n" + "test passed\n" * 20)
    graph.add_user("Now update CHANGELOG.md please.")
    graph.add_assistant("Done: CHANGELOG.md now lists ABC-1234 under the next release.")
    return graph


def units_nodes(graph: ContextGraph, start: int, stop: int) -> list[Node]:
    return [graph[i] for unit in graph.units()[start:stop] for i in unit]


@dataclass
class Wire:
    """One fake server and an adapter that talks to it through its real SDK."""

    kind: str
    server: Any
    summarizer: OpenAISummarizer | AnthropicSummarizer

    def body(self, index: int = 0) -> dict[str, Any]:
        body: dict[str, Any] = self.server.requests[index]
        return body

    def prompt(self, index: int = 0) -> str:
        messages = self.body(index)["messages"]
        content: str = messages[-1]["content"]
        return content

    def system(self, index: int = 0) -> str:
        body = self.body(index)
        system: str = body["messages"][0]["content"] if self.kind == "openai" else body["system"]
        return system


@pytest.fixture(name="wire", params=["openai", "anthropic"])
async def wire_fixture(
    request: pytest.FixtureRequest, openai_server: Any, anthropic_server: Any
) -> AsyncIterator[Wire]:
    if request.param == "openai":
        import openai

        client: Any = openai.AsyncOpenAI(
            base_url=f"{openai_server.url}/v1", api_key="test", max_retries=0
        )
        summarizer: Any = OpenAISummarizer(model=MODEL, client=client, max_tokens=321)
        server = openai_server
    else:
        import anthropic

        client = anthropic.AsyncAnthropic(
            base_url=anthropic_server.url, api_key="test", max_retries=0
        )
        summarizer = AnthropicSummarizer(model=MODEL, client=client, max_tokens=321)
        server = anthropic_server
    yield Wire(request.param, server, summarizer)
    await client.close()


def _processor(wire: Wire, **options: Any) -> HistorySummarizer:
    fallback = ExtractiveSummarizer(counter=WordCounter())
    return HistorySummarizer(summarizer=wire.summarizer, fallback=fallback, **options)


def _summary_text(proposal: Proposal) -> str:
    (edit,) = proposal.edits
    assert isinstance(edit, Abstract)
    return edit.summary.text


class TestOverHttp:
    async def test_good_summary_and_what_was_sent(self, wire: Wire) -> None:
        """A good answer is committed; the request carries model, max_tokens and the prompt."""
        wire.server.script({"text": f"  {GOOD}\n"})
        graph = build_session()
        nodes = units_nodes(graph, 0, 3)
        ctx = ProcessorContext.for_graph(graph, instructions="focus on the database migration")
        proposal = await _processor(wire).propose(nodes, ctx)
        assert _summary_text(proposal) == GOOD
        assert proposal.note == f"model ok ({wire.kind}:{MODEL})"
        path = "/v1/chat/completions" if wire.kind == "openai" else "/v1/messages"
        assert wire.server.paths == [path]
        body = wire.body()
        assert body["model"] == MODEL and body["max_tokens"] == 321
        assert wire.system() == SYSTEM_PROMPT
        prompt = wire.prompt()
        assert "focus on the database migration" in prompt
        assert render_transcript(nodes) in prompt
        assert REQUEST in prompt
        assert find_tool_call_syntax(prompt, tool_names_of(nodes)) == []

    async def test_previous_summary_is_sent_for_an_update(self, wire: Wire) -> None:
        """A rolling update sends the previous summary and only the newer nodes."""
        graph = build_session()
        extractive = HistorySummarizer(fallback=ExtractiveSummarizer(counter=WordCounter()))
        first = await extractive.propose(
            units_nodes(graph, 0, 3), ProcessorContext.for_graph(graph)
        )
        (edit,) = first.edits
        assert isinstance(edit, Abstract)
        graph.add_derived(edit.summary)
        wire.server.script({"text": GOOD + " Now update CHANGELOG.md please. It is updated."})
        newer = units_nodes(graph, 3, 5)
        proposal = await _processor(wire).propose(newer, ProcessorContext.for_graph(graph))
        prompt = wire.prompt()
        assert edit.summary.text in prompt and "SUMMARY SO FAR" in prompt
        assert render_transcript(newer) in prompt
        assert "Assistant:\nI'll read it." not in prompt  # older nodes: only via the summary
        assert proposal.note.endswith(f"updates {edit.summary.id}")

    async def test_garbled_identifier_retries_then_falls_back(self, wire: Wire) -> None:
        """ABC-1234 garbled twice: two requests, the second names it, then the fallback."""
        garbled = GOOD.replace("ABC-1234", "ABC-1243")
        wire.server.script({"text": garbled}, {"text": garbled})
        graph = build_session()
        proposal = await _processor(wire).propose(
            units_nodes(graph, 0, 3), ProcessorContext.for_graph(graph)
        )
        assert len(wire.server.requests) == 2
        retry = wire.prompt(1).split("rejected", 1)[1]
        assert "ABC-1234" in retry
        text = _summary_text(proposal)
        assert "ABC-1234" in text and "ABC-1243" not in text
        assert proposal.note.startswith(
            f"fallback to extractive ({wire.kind}:{MODEL}: refused twice"
        )

    async def test_garbled_then_good_is_a_retry(self, wire: Wire) -> None:
        """A garbled first answer and a good second one: the second is committed."""
        wire.server.script({"text": GOOD.replace("ABC-1234", "ABC-1243")}, {"text": GOOD})
        graph = build_session()
        proposal = await _processor(wire).propose(
            units_nodes(graph, 0, 3), ProcessorContext.for_graph(graph)
        )
        assert _summary_text(proposal) == GOOD
        assert proposal.note.startswith("retry ok")

    async def test_tool_call_in_the_text_is_refused(self, wire: Wire) -> None:
        """A summary that writes a tool call as text is refused and retried."""
        called = GOOD + '\n<tool_call>{"name": "bash", "arguments": {"command": "ls"}}</tool_call>'
        wire.server.script({"text": called}, {"text": GOOD})
        graph = build_session()
        proposal = await _processor(wire).propose(
            units_nodes(graph, 0, 3), ProcessorContext.for_graph(graph)
        )
        assert "tool-call syntax" in proposal.note
        assert _summary_text(proposal) == GOOD

    async def test_structured_tool_call_falls_back(self, wire: Wire) -> None:
        """A response that is a tool call instead of text falls back."""
        wire.server.script({"tool_call": True})
        graph = build_session()
        proposal = await _processor(wire).propose(
            units_nodes(graph, 0, 3), ProcessorContext.for_graph(graph)
        )
        assert "attempted a tool call" in proposal.note
        assert "ABC-1234" in _summary_text(proposal)

    async def test_server_error_falls_back_without_its_text(self, wire: Wire) -> None:
        """An HTTP 500 falls back at once (no SDK retries); its text is not the summary."""
        wire.server.script({"status": 500, "text": "internal error: boom"})
        graph = build_session()
        proposal = await _processor(wire).propose(
            units_nodes(graph, 0, 3), ProcessorContext.for_graph(graph)
        )
        assert len(wire.server.requests) == 1
        assert "boom" not in _summary_text(proposal)
        assert proposal.note.startswith(f"fallback to extractive ({wire.kind}:{MODEL}: ")
        assert "InternalServerError" in proposal.note

    async def test_slow_answer_times_out(self, wire: Wire) -> None:
        """An answer slower than the timeout falls back promptly."""
        wire.server.script({"text": GOOD, "delay": 30})
        graph = build_session()
        started = time.monotonic()
        proposal = await _processor(wire, timeout=0.5).propose(
            units_nodes(graph, 0, 3), ProcessorContext.for_graph(graph)
        )
        assert time.monotonic() - started < 10
        assert proposal.note == f"fallback to extractive ({wire.kind}:{MODEL}: timed out)"

    async def test_cut_off_answer_falls_back(self, wire: Wire) -> None:
        """An answer cut off at max_tokens is not committed."""
        wire.server.script({"text": GOOD, "truncated": True})
        graph = build_session()
        proposal = await _processor(wire).propose(
            units_nodes(graph, 0, 3), ProcessorContext.for_graph(graph)
        )
        assert "cut off at max_tokens=321" in proposal.note

    async def test_adapter_alone_raises_a_typed_error_for_a_tool_call(self, wire: Wire) -> None:
        """Used directly, the adapter refuses a tool call with SummarizerError."""
        from context_graph.errors import ProcessorError, SummarizerError

        wire.server.script({"tool_call": True})
        with pytest.raises(SummarizerError, match="attempted a tool call") as caught:
            await wire.summarizer.summarize(
                units_nodes(build_session(), 0, 3), previous=None, instructions=None
            )
        assert caught.value.summarizer == wire.summarizer.name
        assert isinstance(caught.value, ProcessorError)

    async def test_adapter_alone(self, wire: Wire) -> None:
        """The adapter returns the model's text and sends previous and instructions."""
        wire.server.script({"text": f"\n{GOOD}  "})
        nodes = units_nodes(build_session(), 0, 3)
        text = await wire.summarizer.summarize(
            nodes, previous="OLD SUMMARY", instructions="BE BRIEF"
        )
        assert text == GOOD
        prompt = wire.prompt()
        assert "OLD SUMMARY" in prompt and "BE BRIEF" in prompt
        assert (
            prompt.index("OLD SUMMARY") < prompt.index("I'll read it.") < prompt.index("BE BRIEF")
        )


class TestOwnClients:
    async def test_openai_with_base_url(self, openai_server: Any) -> None:
        """Given base_url and api_key, the adapter makes and closes its own client."""
        openai_server.script({"text": GOOD})
        summarizer = OpenAISummarizer(
            model=MODEL, base_url=f"{openai_server.url}/v1", api_key="test", max_retries=0
        )
        text = await summarizer.summarize([], previous=None, instructions=None)
        await summarizer.aclose()
        assert text == GOOD
        assert openai_server.requests[0]["temperature"] == 0

    async def test_anthropic_with_base_url(self, anthropic_server: Any) -> None:
        """The Anthropic adapter too; a temperature goes in the request body."""
        anthropic_server.script({"text": GOOD})
        summarizer = AnthropicSummarizer(
            model=MODEL,
            base_url=anthropic_server.url,
            api_key="test",
            max_retries=0,
            temperature=0.2,
        )
        text = await summarizer.summarize([], previous=None, instructions=None)
        await summarizer.aclose()
        assert text == GOOD
        assert anthropic_server.requests[0]["temperature"] == 0.2

    async def test_caller_keeps_its_client(self, openai_client: Any) -> None:
        """A client passed in is not closed by the adapter."""
        summarizer = OpenAISummarizer(model=MODEL, client=openai_client)
        await summarizer.aclose()
        assert not openai_client.is_closed()


class TestAdapterVendors:
    def test_each_sdk_summarizer_is_its_vendors(self) -> None:
        """The SDK summarizers' kinds are vendors, one summarizer each, named by its SDK."""
        kinds = get_args(SummarizerVendor)
        assert set(kinds) <= set(get_args(Vendor))
        assert (AnthropicSummarizer.provider, OpenAISummarizer.provider) == (ANTHROPIC, OPENAI)
        assert sorted(kinds) == [ANTHROPIC, OPENAI]


class TestAdapterOptions:
    @pytest.mark.parametrize("adapter", [OpenAISummarizer, AnthropicSummarizer])
    @pytest.mark.parametrize(
        "options",
        [
            {"model": ""},
            {"model": MODEL, "max_tokens": 0},
            {"model": MODEL, "temperature": 3},
            {"model": MODEL, "max_retries": -1},
            {"model": MODEL, "client": object(), "base_url": "http://x"},
        ],
    )
    def test_bad_options_are_refused(self, adapter: type[Any], options: dict[str, Any]) -> None:
        """Each bad option raises ConfigurationError naming the adapter."""
        with pytest.raises(ConfigurationError, match=adapter.__name__):
            adapter(**options)

    @pytest.mark.parametrize(
        ("adapter", "package"), [(OpenAISummarizer, "openai"), (AnthropicSummarizer, "anthropic")]
    )
    def test_missing_sdk_says_what_to_install(
        self, monkeypatch: pytest.MonkeyPatch, adapter: type[Any], package: str
    ) -> None:
        """Without the SDK installed, construction says which extra to install."""
        monkeypatch.setitem(sys.modules, package, None)
        with pytest.raises(ConfigurationError, match=rf"pip install '\.\[{package}\]'"):
            adapter(model=MODEL, api_key="test")

    def test_missing_key_is_a_configuration_error(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """No key anywhere: the OpenAI adapter says to pass one."""
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        with pytest.raises(ConfigurationError, match="api_key"):
            OpenAISummarizer(model=MODEL)


def test_a_notice_is_labelled_as_the_harness_in_a_prompt() -> None:
    """A summarizer model is told who wrote a user-role message."""
    graph = ContextGraph(counter=WordCounter())
    graph.add_user("Fix the parser.")
    graph.add_user("Background task b1 finished.", notice=True)
    text = render_transcript([graph[i] for i in graph.transcript()])
    assert "User:\n```\nFix the parser.\n```" in text
    assert "Harness notice:\n```\nBackground task b1 finished.\n```" in text
