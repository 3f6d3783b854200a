"""A provider's signature on a tool call is kept through ingest and sent back to it.

Gemini 3 refuses a request whose function calls lack the `thoughtSignature` it gave
them. Checked on the real Gemini CLI histories in ../shared/traces: the prefix of
`trajectory.json` that the Gemini importer reads, and `NotFollowingUserIntent.json` with
its responses' ids removed (its calls have none, so the importer cannot pair them by id).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from context_graph import ContextGraph
from context_graph.formats.gemini import read as gemini
from context_graph.graph.content import ProviderSignature
from context_graph.graph.nodes import ToolCallNode, node_adapter
from context_graph.importers import RawInput
from context_graph.render import Renderer
from context_graph.testing import WordCounter
from context_graph.validate.request import validate

TRACES = Path(__file__).resolve().parents[3].parent / "shared" / "traces"
GEMINI_CLI = TRACES / "gemini_cli" / "google-gemini_gemini-cli"
SIGNED = {"functionCall": {"name": "read", "args": {"path": "a.py"}}, "thoughtSignature": "c2ln"}


def _trajectory_prefix() -> list[Any]:
    # Content 99 answers a call that the file does not have; the importer refuses it.
    contents: list[Any] = json.loads((GEMINI_CLI / "trajectory.json").read_text())
    return contents[:99]


def _intent_without_response_ids() -> list[Any]:
    contents: list[Any] = copy.deepcopy(
        json.loads((GEMINI_CLI / "NotFollowingUserIntent.json").read_text())
    )
    for content in contents:
        for part in content["parts"]:
            if "functionResponse" in part:
                del part["functionResponse"]["id"]
    return contents


def _signed_calls(contents: list[Any]) -> list[tuple[str, Any, str]]:
    return [
        (p["functionCall"]["name"], p["functionCall"]["args"], p["thoughtSignature"])
        for content in contents
        for p in content["parts"]
        if "functionCall" in p and "thoughtSignature" in p
    ]


def _graph(contents: list[Any]) -> ContextGraph:
    graph = ContextGraph(counter=WordCounter())
    graph.ingest(gemini.to_sessions(RawInput(contents))[0].events)
    return graph


@pytest.mark.skipif(
    not GEMINI_CLI.is_dir(), reason="the shared traces are not next to the checkout"
)
class TestGeminiCliHistories:
    """Real histories: every signed call goes back with its signature, and the body is valid."""

    @pytest.mark.parametrize("load", [_trajectory_prefix, _intent_without_response_ids])
    def test_signatures_round_trip(self, load: Any) -> None:
        """Import, render, import the render: the signed calls are the source's, in order."""
        contents = load()
        assert _signed_calls(contents)  # the file has signed calls to check
        body = Renderer(format="gemini").render(_graph(contents)).payload
        assert validate(body, "gemini") == []
        assert _signed_calls(body["contents"]) == _signed_calls(contents)
        again = Renderer(format="gemini").render(_graph(body["contents"])).payload
        assert again == body


class TestSignatureOnCalls:
    """The signature lives on the call node and reaches only its own provider."""

    def test_call_node_carries_it(self) -> None:
        """The Gemini importer puts a call's signature on its node, not in the turn's meta."""
        graph = _graph(
            [{"role": "user", "parts": [{"text": "go"}]}, {"role": "model", "parts": [SIGNED]}]
        )
        (call,) = [
            n for n in map(graph.__getitem__, graph.transcript()) if isinstance(n, ToolCallNode)
        ]
        assert call.signature == ProviderSignature(provider="gemini", value="c2ln")
        assert "thought_signatures" not in graph[call.assistant_id].meta

    def test_gemini_render_sends_it_on_the_part(self) -> None:
        """The rendered `functionCall` part has the signature beside it."""
        graph = ContextGraph(counter=WordCounter())
        graph.add_user("go")
        graph.add_assistant(None, tool_calls=[SIGNED])
        body = Renderer(format="gemini").render(graph).payload
        assert body["contents"][1] == {
            "role": "model",
            "parts": [
                {
                    "functionCall": {
                        "id": "gemini_read_0",
                        "name": "read",
                        "args": {"path": "a.py"},
                    },
                    "thoughtSignature": "c2ln",
                }
            ],
        }
        assert validate(body, "gemini") == []

    @pytest.mark.parametrize("fmt", ["openai", "anthropic"])
    def test_other_formats_ignore_it(self, fmt: Any) -> None:
        """OpenAI and Anthropic bodies are the same with or without a Gemini signature."""
        signed, plain = ContextGraph(counter=WordCounter()), ContextGraph(counter=WordCounter())
        for graph, call in (
            (signed, SIGNED),
            (plain, {k: v for k, v in SIGNED.items() if k != "thoughtSignature"}),
        ):
            graph.add_user("go")
            graph.add_assistant(None, tool_calls=[call])
        render = Renderer(format=fmt).render
        assert render(signed).payload == render(plain).payload

    def test_another_providers_signature_is_not_sent_to_gemini(self) -> None:
        """A signature is sent back only to the provider that made it."""
        graph = ContextGraph(counter=WordCounter())
        graph.add_user("go")
        foreign = {"provider": "other", "value": "x"}
        graph.add_assistant(None, tool_calls=[{"id": "c1", "name": "f", "signature": foreign}])
        body = Renderer(format="gemini").render(graph).payload
        assert "thoughtSignature" not in body["contents"][1]["parts"][0]

    def test_unsigned_calls_keep_their_ids_and_json(self) -> None:
        """Without a signature, node ids are the ones b10f209 gave, and the JSON has no key."""
        graph = ContextGraph(counter=WordCounter())
        graph.add_user("read a.py")
        ids = graph.add_assistant(
            "ok", tool_calls=[{"id": "c1", "name": "read", "arguments": {"path": "a.py"}}]
        )
        assert ids == ("000001-assistant-41e0723a6a2b9399", "000002-tool_call-06585b39dab0e82e")
        assert "signature" not in node_adapter.dump_python(graph[ids[1]])
