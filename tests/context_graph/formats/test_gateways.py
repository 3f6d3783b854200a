"""The gateway half of the format registry: each provider API's paths, errors and upstream."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from context_graph.formats.gateways import GATEWAY_WIRES, UNKNOWN_PATH_WIRE, UPSTREAMS, wires_of

FORMATS = Path(__file__).resolve().parents[3] / "context_graph" / "formats"

_PREFIXES = ("/v1/messages", "/v1/responses", "/v1/chat/", "/v1beta/models/", "/v1/models/", "/")


class TestGatewayWires:
    @pytest.mark.parametrize(
        ("wire", "path", "body", "kind"),
        [
            ("anthropic", "/v1/messages", b"{}", "call"),
            ("anthropic", "/v1/messages/count_tokens", b"{}", "count"),
            ("responses", "/v1/responses", b"{}", "call"),
            ("chat", "/v1/chat/completions", b"{}", "call"),
            ("gemini", "/v1beta/models/gemini-2.5-pro:streamGenerateContent", b"{}", "call"),
            ("gemini", "/v1beta/models/gemini-2.5-pro:generateContent", b"{}", "call"),
            (
                "gemini",
                "/v1beta/models/gemini-2.5-pro:countTokens",
                b'{"generateContentRequest": {}}',
                "count",
            ),
            ("gemini", "/v1beta/models/gemini-2.5-pro:countTokens", b'{"contents": []}', None),
            ("gemini", "/v1beta/models/gemini-2.5-pro:embedContent", b"{}", None),
        ],
    )
    def test_a_request_is_a_call_a_count_or_passed_through(
        self, wire: str, path: str, body: bytes, kind: str | None
    ) -> None:
        """A wire tells a model call from a token count, and passes any other method on."""
        assert GATEWAY_WIRES[wire].request_kind(path, body) == kind

    def test_a_wire_that_counts_has_a_count_endpoint(self) -> None:
        """Only a wire with a token-count endpoint says a request is a count."""
        for wire in GATEWAY_WIRES.values():
            if wire.count is None:
                assert all(wire.request_kind(route, b"{}") != "count" for route in wire.routes)

    @given(
        prefix=st.sampled_from(_PREFIXES),
        rest=st.text(st.sampled_from("abcdefgh-_:/.0123456789"), max_size=30),
    )
    def test_no_path_is_spoken_by_two_providers(self, prefix: str, rest: str) -> None:
        """The providers' paths are disjoint: a path's error shape never depends on order."""
        path = prefix + rest
        upstreams = {w.upstream.name for w in GATEWAY_WIRES.values() if w.speaks(path)}
        assert len(upstreams) <= 1, path

    def test_each_wire_speaks_its_own_routes(self) -> None:
        """A served path takes its own provider's error shape."""
        for wire in GATEWAY_WIRES.values():
            for route in wire.routes:
                concrete = route.replace("{target}", "m:generateContent")
                assert wire.speaks(concrete), (wire.name, route)

    def test_a_path_of_no_provider_is_answered_in_the_fallback_shape(self) -> None:
        """The fallback is a registered wire, and no wire claims a path of no API."""
        assert UNKNOWN_PATH_WIRE in GATEWAY_WIRES.values()
        assert not any(w.speaks("/v1/models/gpt-5") for w in GATEWAY_WIRES.values())

    def test_an_upstream_serves_its_wires_in_the_registry_order(self) -> None:
        """`--upstream openai` serves Responses then Chat, each upstream at least one wire."""
        assert [w.name for w in wires_of("openai")] == ["responses", "chat"]
        assert all(wires_of(name) for name in UPSTREAMS)
        assert wires_of("nobody") == ()


def test_no_format_module_needs_an_http_library() -> None:
    """The formats' gateway modules are pure: no aiohttp, httpx or orchestrator import."""
    offenders = []
    for path in sorted(FORMATS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            bad = [n for n in names if n.split(".")[0] in {"aiohttp", "httpx", "orchestrator"}]
            if bad:
                offenders.append(f"{path.name}: {bad}")
    assert offenders == []


REMINDER = "<system-reminder>\nagent types\n</system-reminder>"


class TestAnthropicReadableRequest:
    def test_marks_come_off_and_a_system_message_becomes_a_reminder(self) -> None:
        """The agent's moving cache marks are dropped; a mid-conversation system message is
        user text in `<system-reminder>` tags in its place; an unmarked message is kept as is."""
        plain = {"role": "assistant", "content": [{"type": "text", "text": "ok"}]}
        body = {
            "system": [{"type": "text", "text": "S", "cache_control": {"type": "ephemeral"}}],
            "messages": [
                {"role": "user", "content": "task"},
                {"role": "system", "content": "agent types"},
                plain,
                {
                    "role": "user",
                    "content": [{"type": "text", "text": "go", "cache_control": {"x": 1}}],
                },
            ],
        }
        read = GATEWAY_WIRES["anthropic"].readable(body)
        assert read == {
            "system": [{"type": "text", "text": "S"}],
            "messages": [
                {"role": "user", "content": "task"},
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "text",
                            "text": "<system-reminder>\nagent types\n</system-reminder>",
                        }
                    ],
                },
                plain,
                {"role": "user", "content": [{"type": "text", "text": "go"}]},
            ],
        }
        assert read["messages"][2] is plain
        assert body["system"][0]["cache_control"] == {"type": "ephemeral"}, "the body is unchanged"
