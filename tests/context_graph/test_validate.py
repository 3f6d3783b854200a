from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph.errors import ConfigurationError
from context_graph.formats.openai_responses.validate import RESPONSES_RULES
from context_graph.validate import (
    PROVIDER_VALIDATORS,
    RULES,
    Collector,
    ProviderValidator,
    Violation,
    detect_request_format,
    request_format_clues,
    validate,
)

# --- payload builders -------------------------------------------------------------------


def oa_call(call_id: str, name: str = "lookup") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}


def oa_calls(*ids: str) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": [oa_call(i) for i in ids]}


def oa_tool(call_id: str, content: str = "ok") -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def oa(*messages: Any) -> dict[str, Any]:
    return {"messages": list(messages)}


OA_USER = {"role": "user", "content": "hi"}


def an_use(use_id: str, name: str = "lookup") -> dict[str, Any]:
    return {"type": "tool_use", "id": use_id, "name": name, "input": {}}


def an_result(use_id: str, content: Any = "ok") -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": use_id, "content": content}


def an_text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


AN_THINK = {"type": "thinking", "thinking": "Let me see.", "signature": "c2lnbmF0dXJl"}
AN_USER = {"role": "user", "content": "hi"}
AN_ASSISTANT = {"role": "assistant", "content": "hello"}


def an_asst(*blocks: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": list(blocks)}


def an_user(*blocks: Any) -> dict[str, Any]:
    return {"role": "user", "content": list(blocks)}


def an(*messages: Any, **extra: Any) -> dict[str, Any]:
    return {"messages": list(messages), **extra}


def gm_call(name: str, call_id: str | None = None) -> dict[str, Any]:
    call: dict[str, Any] = {"name": name, "args": {"q": 1}}
    return {"functionCall": call | ({"id": call_id} if call_id else {})}


def gm_resp(name: str, call_id: str | None = None) -> dict[str, Any]:
    resp: dict[str, Any] = {"name": name, "response": {"result": 1}}
    return {"functionResponse": resp | ({"id": call_id} if call_id else {})}


def gm_model(*parts: Any) -> dict[str, Any]:
    return {"role": "model", "parts": list(parts)}


def gm_user(*parts: Any) -> dict[str, Any]:
    return {"role": "user", "parts": list(parts)}


def gm(*contents: Any, **extra: Any) -> dict[str, Any]:
    return {"contents": list(contents), **extra}


GM_USER = gm_user({"text": "hi"})
GM_MODEL = gm_model({"text": "hello"})
CACHE = {"type": "ephemeral"}


@dataclass(frozen=True)
class Golden:
    """A minimal payload that breaks exactly one rule, and where."""

    fmt: str
    payload: Any
    rule: str
    index: int | None
    path: str


def _many_messages() -> dict[str, Any]:
    return an(*([AN_USER, AN_ASSISTANT] * 50_000), AN_USER)


GOLDEN = [
    # --- OpenAI ---
    Golden("openai", "not a body", "payload_not_object", None, "$"),
    Golden("openai", {"model": "gpt"}, "messages_missing", None, "messages"),
    Golden("openai", oa(), "messages_empty", None, "messages"),
    Golden("openai", oa(OA_USER, 7), "message_not_object", 1, "messages[1]"),
    Golden("openai", oa({"role": "bot", "content": "x"}), "unknown_role", 0, "messages[0].role"),
    Golden("openai", oa(OA_USER | {"id": "m1"}), "unknown_field", 0, "messages[0].id"),
    Golden("openai", oa(OA_USER | {"name": 5}), "field_invalid", 0, "messages[0].name"),
    Golden(
        "openai", oa(OA_USER, {"role": "assistant"}), "content_missing", 1, "messages[1].content"
    ),
    Golden(
        "openai", oa({"role": "user", "content": 5}), "content_invalid", 0, "messages[0].content"
    ),
    Golden(
        "openai", oa({"role": "user", "content": []}), "content_empty", 0, "messages[0].content"
    ),
    Golden(
        "openai",
        oa({"role": "user", "content": ["hi"]}),
        "part_not_object",
        0,
        "messages[0].content[0]",
    ),
    Golden(
        "openai",
        oa({"role": "user", "content": [{"type": "video", "video": "v"}]}),
        "unknown_part_type",
        0,
        "messages[0].content[0].type",
    ),
    Golden(
        "openai",
        oa({"role": "system", "content": [{"type": "image_url", "image_url": {"url": "u"}}]}),
        "part_not_allowed_for_role",
        0,
        "messages[0].content[0].type",
    ),
    Golden(
        "openai",
        oa({"role": "user", "content": [{"type": "text", "text": None}]}),
        "part_invalid",
        0,
        "messages[0].content[0].text",
    ),
    Golden(
        "openai",
        oa(OA_USER, {"role": "assistant", "content": "x", "tool_calls": []}),
        "tool_calls_invalid",
        1,
        "messages[1].tool_calls",
    ),
    Golden(
        "openai",
        oa(
            OA_USER,
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "f", "arguments": {}}}
                ],
            },
            oa_tool("c1"),
        ),
        "tool_call_invalid",
        1,
        "messages[1].tool_calls[0]",
    ),
    Golden(
        "openai",
        oa(OA_USER, oa_calls("c1"), oa_tool("c1"), {"role": "tool", "content": "x"}),
        "tool_call_id_invalid",
        3,
        "messages[3].tool_call_id",
    ),
    Golden(
        "openai",
        oa(OA_USER, oa_calls("c1", "c1"), oa_tool("c1")),
        "duplicate_tool_call_id",
        1,
        "messages[1].tool_calls[1].id",
    ),
    Golden(
        "openai",
        oa(OA_USER, oa_calls("c1", "c2"), oa_tool("c1")),
        "tool_call_unanswered",
        1,
        "messages[1].tool_calls[1]",
    ),
    Golden(
        "openai",
        oa(OA_USER, oa_calls("c1"), oa_tool("c1"), oa_tool("c9")),
        "tool_result_orphan",
        3,
        "messages[3].tool_call_id",
    ),
    Golden(
        "openai",
        oa(OA_USER, oa_calls("c1"), oa_tool("c1"), oa_tool("c1")),
        "duplicate_tool_result",
        3,
        "messages[3].tool_call_id",
    ),
    Golden(
        "openai",
        oa(OA_USER, oa_calls("c1"), OA_USER, oa_tool("c1")),
        "tool_result_misplaced",
        3,
        "messages[3].tool_call_id",
    ),
    # --- Anthropic ---
    Golden("anthropic", ["x"], "payload_not_object", None, "$"),
    Golden("anthropic", {"system": "s"}, "messages_missing", None, "messages"),
    Golden("anthropic", an(), "messages_empty", None, "messages"),
    Golden("anthropic", an(AN_USER, "hello"), "message_not_object", 1, "messages[1]"),
    Golden(
        "anthropic",
        an(AN_USER, {"role": "tool", "content": "x"}),
        "unknown_role",
        1,
        "messages[1].role",
    ),
    Golden(
        "anthropic",
        an({"role": "system", "content": "be brief"}, AN_USER),
        "system_role_in_messages",
        0,
        "messages[0].role",
    ),
    Golden(
        "anthropic",
        an({"role": "system", "content": "be brief"}, AN_USER, model="claude-opus-4-8"),
        "system_message_misplaced",
        0,
        "messages[0].role",
    ),
    Golden(
        "anthropic",
        an(AN_USER, {"role": "system", "content": ""}, model="claude-opus-4-8"),
        "system_message_content_invalid",
        1,
        "messages[1].content",
    ),
    Golden("anthropic", an(AN_USER | {"id": "m1"}), "unknown_field", 0, "messages[0].id"),
    Golden("anthropic", an(AN_ASSISTANT, AN_USER), "first_message_not_user", 0, "messages[0].role"),
    Golden("anthropic", an(AN_USER, AN_USER), "roles_not_alternating", 1, "messages[1].role"),
    Golden("anthropic", an(AN_USER, system=5), "system_invalid", None, "system"),
    Golden(
        "anthropic",
        an(AN_USER, system=[{"type": "image", "source": {}}]),
        "system_invalid",
        None,
        "system[0]",
    ),
    Golden("anthropic", an({"role": "user"}), "content_missing", 0, "messages[0].content"),
    Golden(
        "anthropic", an({"role": "user", "content": 5}), "content_invalid", 0, "messages[0].content"
    ),
    Golden(
        "anthropic", an({"role": "user", "content": ""}), "content_empty", 0, "messages[0].content"
    ),
    Golden(
        "anthropic",
        an(AN_USER, an_asst(), AN_USER),
        "content_empty",
        1,
        "messages[1].content",
    ),
    Golden(
        "anthropic",
        an({"role": "user", "content": ["hi"]}),
        "part_not_object",
        0,
        "messages[0].content[0]",
    ),
    Golden(
        "anthropic",
        an(an_user({"type": "input_text", "text": "hi"})),
        "unknown_part_type",
        0,
        "messages[0].content[0].type",
    ),
    Golden(
        "anthropic",
        an(AN_USER, an_asst(an_result("toolu_1"))),
        "part_not_allowed_for_role",
        1,
        "messages[1].content[0].type",
    ),
    Golden(
        "anthropic",
        an(an_user({"type": "image", "source": "http://x/cat.png"})),
        "part_invalid",
        0,
        "messages[0].content[0].source",
    ),
    Golden(
        "anthropic", an(an_user(an_text("  \n"))), "text_empty", 0, "messages[0].content[0].text"
    ),
    Golden(
        "anthropic",
        an(AN_USER, an_asst(an_use("call.1"))),
        "tool_use_id_invalid",
        1,
        "messages[1].content[0].id",
    ),
    Golden(
        "anthropic",
        an(AN_USER, an_asst(an_use("toolu_1") | {"input": "{}"}), an_user(an_result("toolu_1"))),
        "tool_input_not_object",
        1,
        "messages[1].content[0].input",
    ),
    Golden(
        "anthropic",
        an(AN_USER, an_asst(an_use("toolu_1")), an_user(an_text("here"), an_result("toolu_1"))),
        "tool_result_not_first",
        2,
        "messages[2].content[1].type",
    ),
    Golden(
        "anthropic",
        an(AN_USER, an_asst({"type": "thinking", "thinking": "x"}, an_text("ok"))),
        "thinking_signature_missing",
        1,
        "messages[1].content[0].signature",
    ),
    Golden(
        "anthropic",
        an(AN_USER, an_asst({"type": "redacted_thinking"}, an_text("ok"))),
        "redacted_thinking_data_missing",
        1,
        "messages[1].content[0].data",
    ),
    Golden(
        "anthropic",
        an(AN_USER, an_asst(an_text("a"), AN_THINK, an_text("b")), AN_USER),
        "thinking_not_first",
        1,
        "messages[1].content[1].type",
    ),
    Golden(
        "anthropic",
        an(AN_USER, an_asst({"type": "compaction", "content": ""}, an_text("a")), AN_USER),
        "compaction_block_invalid",
        1,
        "messages[1].content[0].content",
    ),
    Golden(
        "anthropic",
        an(
            AN_USER,
            an_asst({"type": "compaction", "content": "s", "signature": 3}, an_text("a")),
            AN_USER,
        ),
        "compaction_block_invalid",
        1,
        "messages[1].content[0].signature",
    ),
    Golden(
        "anthropic",
        an(AN_USER, an_asst(an_text("a"), {"type": "compaction", "content": "s"}), AN_USER),
        "compaction_not_first",
        1,
        "messages[1].content[1].type",
    ),
    Golden(
        "anthropic",
        an(an_user({"type": "compaction", "content": "s"}), AN_ASSISTANT, AN_USER),
        "part_not_allowed_for_role",
        0,
        "messages[0].content[0].type",
    ),
    Golden(
        "anthropic",
        an(AN_USER, an_asst(AN_THINK)),
        "thinking_block_last",
        1,
        "messages[1].content[0]",
    ),
    Golden(
        "anthropic",
        an(
            AN_USER,
            an_asst(an_text("Checking."), an_use("toolu_1")),
            an_user(an_result("toolu_1")),
            thinking={"type": "enabled", "budget_tokens": 2048},
        ),
        "thinking_block_missing",
        1,
        "messages[1].content[0]",
    ),
    Golden(
        "anthropic",
        an(AN_USER, an_asst(AN_THINK, an_text("hi")), thinking={"type": "disabled"}),
        "thinking_while_disabled",
        1,
        "messages[1].content[0]",
    ),
    Golden(
        "anthropic",
        an(
            an_user(an_text("hi") | {"cache_control": CACHE}),
            system=[
                an_text("a") | {"cache_control": CACHE},
                an_text("b") | {"cache_control": CACHE},
            ],
            tools=[{"name": "t", "cache_control": CACHE}, {"name": "u", "cache_control": CACHE}],
        ),
        "too_many_cache_breakpoints",
        0,
        "messages[0].content[0].cache_control",
    ),
    Golden("anthropic", _many_messages(), "too_many_messages", None, "messages"),
    Golden(
        "anthropic",
        an(AN_USER, {"role": "assistant", "content": "The answer is "}),
        "trailing_whitespace",
        1,
        "messages[1].content",
    ),
    Golden(
        "anthropic",
        an(
            AN_USER,
            an_asst(an_use("toolu_1")),
            an_user(an_result("toolu_1")),
            an_asst(an_use("toolu_1")),
            an_user(an_result("toolu_1")),
        ),
        "duplicate_tool_call_id",
        3,
        "messages[3].content[0].id",
    ),
    Golden(
        "anthropic",
        an(AN_USER, an_asst(an_use("toolu_1"), an_use("toolu_2")), an_user(an_result("toolu_1"))),
        "tool_call_unanswered",
        1,
        "messages[1].content[1]",
    ),
    Golden(
        "anthropic",
        an(AN_USER, AN_ASSISTANT, an_user(an_result("toolu_7"))),
        "tool_result_orphan",
        2,
        "messages[2].content[0].tool_use_id",
    ),
    Golden(
        "anthropic",
        an(
            AN_USER,
            an_asst(an_use("toolu_1")),
            an_user(an_result("toolu_1"), an_result("toolu_1")),
        ),
        "duplicate_tool_result",
        2,
        "messages[2].content[1].tool_use_id",
    ),
    # --- Gemini ---
    Golden("gemini", None, "payload_not_object", None, "$"),
    Golden("gemini", {"contents": {"role": "user"}}, "messages_missing", None, "contents"),
    Golden("gemini", gm(), "messages_empty", None, "contents"),
    Golden("gemini", gm(GM_USER, "model says"), "message_not_object", 1, "contents[1]"),
    Golden(
        "gemini",
        gm({"role": "assistant", "parts": [{"text": "x"}]}),
        "unknown_role",
        0,
        "contents[0].role",
    ),
    Golden(
        "gemini",
        gm({"role": "system", "parts": [{"text": "x"}]}, GM_USER),
        "system_role_in_messages",
        0,
        "contents[0].role",
    ),
    Golden("gemini", gm(GM_USER | {"id": 3}), "unknown_field", 0, "contents[0].id"),
    Golden("gemini", gm(GM_MODEL, GM_USER), "first_message_not_user", 0, "contents[0].role"),
    Golden("gemini", gm(GM_USER, GM_USER), "roles_not_alternating", 1, "contents[1].role"),
    Golden(
        "gemini",
        gm(GM_USER, systemInstruction={"parts": [{"inlineData": {"mimeType": "a", "data": "b"}}]}),
        "system_invalid",
        None,
        "systemInstruction.parts[0]",
    ),
    Golden(
        "gemini", gm({"role": "user", "parts": "hi"}), "content_invalid", 0, "contents[0].parts"
    ),
    Golden("gemini", gm(gm_user()), "content_empty", 0, "contents[0].parts"),
    Golden("gemini", gm(gm_user("hi")), "part_not_object", 0, "contents[0].parts[0]"),
    Golden(
        "gemini",
        gm(gm_user({"text": "hi", "mimeType": "text/plain"})),
        "unknown_field",
        0,
        "contents[0].parts[0].mimeType",
    ),
    Golden(
        "gemini",
        gm(gm_user({"text": "hi", "inlineData": {"mimeType": "image/png", "data": "AA"}})),
        "part_data_count",
        0,
        "contents[0].parts[0]",
    ),
    Golden(
        "gemini",
        gm(gm_user(gm_call("lookup"))),
        "part_not_allowed_for_role",
        0,
        "contents[0].parts[0].functionCall",
    ),
    Golden(
        "gemini",
        gm(gm_user({"inlineData": {"data": "AA"}})),
        "part_invalid",
        0,
        "contents[0].parts[0].inlineData",
    ),
    Golden(
        "gemini",
        gm(
            GM_USER,
            gm_model({"functionCall": {"name": "lookup", "args": "[]"}}),
            gm_user(gm_resp("lookup")),
        ),
        "tool_input_not_object",
        1,
        "contents[1].parts[0].functionCall.args",
    ),
    Golden(
        "gemini",
        gm(
            GM_USER,
            gm_model(gm_call("lookup")),
            gm_user({"functionResponse": {"name": "lookup", "response": "ok"}}),
        ),
        "tool_output_not_object",
        2,
        "contents[2].parts[0].functionResponse.response",
    ),
    Golden(
        "gemini",
        gm(
            GM_USER,
            gm_model(gm_call("a", "x1"), gm_call("b", "x1")),
            gm_user(gm_resp("a", "x1"), gm_resp("b", "x1")),
        ),
        "duplicate_tool_call_id",
        1,
        "contents[1].parts[1].functionCall.id",
    ),
    Golden(
        "gemini",
        gm(GM_USER, gm_model(gm_call("a"), gm_call("b")), gm_user(gm_resp("a"))),
        "tool_call_unanswered",
        1,
        "contents[1].parts[1].functionCall",
    ),
    Golden(
        "gemini",
        gm(GM_USER, gm_model(gm_call("a")), gm_user(gm_resp("a"), gm_resp("z"))),
        "tool_result_orphan",
        2,
        "contents[2].parts[1].functionResponse",
    ),
    Golden(
        "gemini",
        gm(GM_USER, gm_model(gm_call("a")), gm_user(gm_resp("a"), gm_resp("a"))),
        "duplicate_tool_result",
        2,
        "contents[2].parts[1].functionResponse",
    ),
    Golden(
        "gemini",
        gm(GM_USER, gm_model(gm_call("a"), gm_call("b")), gm_user(gm_resp("b"), gm_resp("a"))),
        "tool_results_out_of_order",
        2,
        "contents[2].parts[0].functionResponse",
    ),
    # --- every format: what JSON cannot carry, media with nothing in it ---
    Golden(
        "openai", oa(OA_USER) | {"temperature": math.nan}, "non_finite_number", None, "temperature"
    ),
    Golden(
        "anthropic",
        an(
            AN_USER,
            an_asst(
                {"type": "tool_use", "id": "toolu_1", "name": "calc", "input": {"x": math.inf}}
            ),
            an_user({"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}),
        ),
        "non_finite_number",
        1,
        "messages[1].content[0].input.x",
    ),
    Golden(
        "openai",
        oa(
            {
                "role": "user",
                "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,"}}],
            }
        ),
        "media_empty",
        0,
        "messages[0].content[0].image_url.url",
    ),
    Golden(
        "anthropic",
        an(an_user({"type": "image", "source": {"type": "url", "url": ""}})),
        "media_empty",
        0,
        "messages[0].content[0].source",
    ),
    Golden(
        "gemini",
        gm(gm_user({"inlineData": {"mimeType": "image/png", "data": ""}})),
        "media_empty",
        0,
        "contents[0].parts[0].inlineData",
    ),
    # --- the tools field (every format) ---
    Golden("openai", oa(OA_USER) | {"tools": {"name": "f"}}, "tools_invalid", None, "tools"),
    Golden(
        "anthropic",
        an(AN_USER, tools=[{"name": "has space", "input_schema": {"type": "object"}}]),
        "tool_name_invalid",
        None,
        "tools[0].name",
    ),
    Golden(
        "responses",
        {
            "input": "hi",
            "tools": [{"type": "function", "name": "f", "parameters": [], "strict": None}],
        },
        "tool_schema_invalid",
        None,
        "tools[0].parameters",
    ),
    Golden(
        "gemini",
        gm(GM_USER, tools=[{"functionDeclarations": [{"name": "f"}, {"name": "f"}]}]),
        "duplicate_tool_name",
        None,
        "tools[0].functionDeclarations[1].name",
    ),
]


def _found(payload: Any, fmt: Any) -> list[tuple[str, int | None, str]]:
    return [(v.rule, v.index, v.path) for v in validate(payload, fmt)]


class TestGolden:
    @pytest.mark.parametrize(
        "case", GOLDEN, ids=[f"{g.fmt}-{g.rule}-{n}" for n, g in enumerate(GOLDEN)]
    )
    def test_payload_breaks_exactly_its_rule(self, case: Golden) -> None:
        """A minimal payload breaking one rule yields exactly that code, index and path."""
        assert _found(case.payload, case.fmt) == [(case.rule, case.index, case.path)]

    @pytest.mark.parametrize(
        "case", GOLDEN, ids=[f"{g.fmt}-{g.rule}-{n}" for n, g in enumerate(GOLDEN)]
    )
    def test_message_starts_with_the_path(self, case: Golden) -> None:
        """Every message names the place first, then what is wrong."""
        (violation,) = validate(case.payload, case.fmt)  # type: ignore[arg-type]
        assert violation.message.startswith(f"{case.path}: ")
        assert str(violation) == violation.message

    def test_every_rule_is_covered(self) -> None:
        """The golden table exercises every code in RULES but the Responses API's own.

        Those have their golden table in test_validate_responses.py.
        """
        assert {g.rule for g in GOLDEN} == set(RULES) - set(RESPONSES_RULES)


class TestRules:
    def test_codes_are_snake_case_and_described_in_one_line(self) -> None:
        """Each code is snake_case and has a one-line description ending in a period."""
        for code, text in RULES.items():
            assert re.fullmatch(r"[a-z]+(_[a-z]+)*", code)
            assert "\n" not in text and text.endswith(".")

    def test_rules_are_sorted(self) -> None:
        """RULES is sorted by code, so the docs table reads in a stable order."""
        assert list(RULES) == sorted(RULES)


OA_VALID = [
    oa({"role": "user", "content": "What is 2+2?"}),
    oa(
        {"role": "developer", "content": "Be terse."},
        {"role": "system", "content": [{"type": "text", "text": "Use tools."}]},
        {
            "role": "user",
            "name": "ann",
            "content": [
                {"type": "text", "text": "What is in this image?"},
                {
                    "type": "image_url",
                    "image_url": {"url": "data:image/png;base64,AA", "detail": "low"},
                },
                {"type": "input_audio", "input_audio": {"data": "AA", "format": "wav"}},
                {"type": "file", "file": {"file_id": "file-1"}},
            ],
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [oa_call("call_1", "weather"), oa_call("call_2", "time")],
        },
        oa_tool("call_2", "12:00"),
        {"role": "tool", "tool_call_id": "call_1", "content": [{"type": "text", "text": "sun"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Sunny at noon."}]},
        {"role": "user", "content": "And custom tools?"},
        {
            "role": "assistant",
            "content": "Running it.",
            "tool_calls": [
                {"id": "call_3", "type": "custom", "custom": {"name": "sh", "input": "ls"}}
            ],
        },
        oa_tool("call_3", "a.txt"),
        {"role": "assistant", "content": None, "refusal": "I cannot help with that."},
    ),
]

AN_VALID = [
    an(AN_USER),
    an(
        an_user(
            an_text("What is in this image?"),
            {
                "type": "image",
                "source": {"type": "base64", "media_type": "image/png", "data": "AA"},
            },
            {"type": "document", "source": {"type": "url", "url": "https://x/a.pdf"}},
        ),
        an_asst(
            AN_THINK,
            {"type": "redacted_thinking", "data": "ZW5jcnlwdGVk"},
            an_text("Let me look both up."),
            an_use("toolu_01", "weather"),
            an_use("toolu_02", "time"),
        ),
        an_user(
            an_result("toolu_02", [an_text("12:00")]),
            an_result("toolu_01", "sunny") | {"is_error": False, "cache_control": CACHE},
            an_text("Thanks."),
        ),
        an_asst(an_text("It is sunny at noon.")),
        an_user(an_text("Go on.") | {"cache_control": CACHE}),
        an_asst(an_text("Sure,")),
        system=[an_text("Be brief.") | {"cache_control": CACHE}],
        tools=[{"name": "weather", "input_schema": {}, "cache_control": CACHE}],
        thinking={"type": "enabled", "budget_tokens": 2048},
    ),
    an(AN_USER, {"role": "assistant", "content": ""}),
    an(
        AN_USER,
        an_asst(
            {"type": "compaction", "content": "Earlier: the user asked for X.", "signature": "s"},
            AN_THINK,
            an_use("toolu_1"),
        ),
        an_user(an_result("toolu_1")),
        thinking={"type": "enabled", "budget_tokens": 1024},
    ),
    an(
        AN_USER,
        an_asst(AN_THINK, an_use("toolu_1")),
        an_user(an_result("toolu_1")),
        thinking={"type": "enabled", "budget_tokens": 1024},
        system="You are terse.",
    ),
]

GM_VALID = [
    gm({"parts": [{"text": "A lone content may omit its role."}]}),
    gm(
        gm_user(
            {"text": "Weather and time?"},
            {"inlineData": {"mimeType": "image/png", "data": "AA"}},
            {"fileData": {"mimeType": "application/pdf", "fileUri": "gs://b/a.pdf"}},
        ),
        gm_model(
            {"text": "Thinking it over.", "thought": True},
            gm_call("weather") | {"thoughtSignature": "c2ln"},
            gm_call("time"),
        ),
        gm_user(gm_resp("weather"), gm_resp("time")),
        gm_model(gm_call("weather", "id_1"), gm_call("time", "id_2")),
        gm_user(gm_resp("time", "id_2"), gm_resp("weather", "id_1")),
        gm_model({"text": "Sunny at noon."}),
        systemInstruction={"parts": [{"text": "Be brief."}]},
    ),
    {
        "system_instruction": {"parts": [{"text": "snake_case works too"}]},
        "contents": [
            gm_user({"text": "run it"}),
            gm_model({"function_call": {"name": "run", "args": {}}, "thought_signature": "c2ln"}),
            gm_user({"function_response": {"name": "run", "response": {"ok": True}}}),
        ],
    },
]


class TestValidPayloads:
    @pytest.mark.parametrize("payload", OA_VALID)
    def test_openai(self, payload: Any) -> None:
        """Valid Chat Completions bodies (parallel calls, images, audio) have no violations."""
        assert validate(payload, "openai") == []

    @pytest.mark.parametrize("payload", AN_VALID)
    def test_anthropic(self, payload: Any) -> None:
        """Valid Messages bodies (thinking, parallel tool use, images, caching) pass."""
        assert validate(payload, "anthropic") == []

    @pytest.mark.parametrize("payload", GM_VALID)
    def test_gemini(self, payload: Any) -> None:
        """Valid generateContent bodies (parallel calls with and without ids) pass."""
        assert validate(payload, "gemini") == []


class TestValidate:
    def test_lists_every_violation_in_order(self) -> None:
        """All broken rules are reported, top level first, then by message index."""
        payload = an(
            an_user(an_result("toolu_9")),
            an_asst(an_use("bad id")),
            {"role": "assistant", "content": 3},
            system=7,
        )
        assert _found(payload, "anthropic") == [
            ("system_invalid", None, "system"),
            ("tool_result_orphan", 0, "messages[0].content[0].tool_use_id"),
            ("tool_use_id_invalid", 1, "messages[1].content[0].id"),
            ("content_invalid", 2, "messages[2].content"),
            ("roles_not_alternating", 2, "messages[2].role"),
        ]

    def test_message_matches_the_house_example(self) -> None:
        """An orphan tool_result is named with its id, its place and the fix."""
        (violation,) = validate(
            an(AN_USER, AN_ASSISTANT, an_user(an_result("toolu_7"))), "anthropic"
        )
        assert violation.message == (
            "messages[2].content[0].tool_use_id: tool_result `toolu_7` does not answer a "
            "tool_use of the preceding assistant message; drop it or restore the tool_use"
        )

    def test_violation_is_frozen(self) -> None:
        """A Violation cannot be changed after it is made."""
        violation = Violation(rule="messages_empty", index=None, path="messages", message="m")
        with pytest.raises(ValueError, match="frozen"):
            violation.rule = "other"  # type: ignore[misc]

    def test_unknown_format_is_a_configuration_error(self) -> None:
        """Asking for a provider that does not exist is a developer mistake."""
        with pytest.raises(ConfigurationError, match="unknown format 'cohere'"):
            validate({}, "cohere")  # type: ignore[arg-type]

    def test_openai_final_assistant_message_may_be_empty_only_with_calls(self) -> None:
        """Null assistant content is fine with tool calls, not without."""
        assert _found(oa(OA_USER, {"role": "assistant", "content": None}), "openai") == [
            ("content_missing", 1, "messages[1].content")
        ]

    def test_anthropic_final_assistant_may_be_empty(self) -> None:
        """Only the final assistant message may have empty content (a prefill)."""
        assert validate(an(AN_USER, an_asst()), "anthropic") == []

    def test_gemini_ids_match_regardless_of_order(self) -> None:
        """With ids on every call and response, order does not matter but ids must match."""
        payload = gm(
            GM_USER,
            gm_model(gm_call("a", "1"), gm_call("a", "2")),
            gm_user(gm_resp("a", "2"), gm_resp("a", "3")),
        )
        assert _found(payload, "gemini") == [
            ("tool_call_unanswered", 1, "contents[1].parts[0].functionCall"),
            ("tool_result_orphan", 2, "contents[2].parts[1].functionResponse"),
        ]


class TestPeerBugs:
    """Each invalid-history shape from the peer survey (research/peers.md section 3)."""

    def test_leading_tool_result_after_trim(self) -> None:
        """A kept tail that starts with a tool result is an orphan (langchain#33245)."""
        assert _found(oa(oa_tool("call_1"), OA_USER), "openai") == [
            ("tool_result_orphan", 0, "messages[0].tool_call_id")
        ]
        rules = [v.rule for v in validate(an(an_user(an_result("toolu_1"))), "anthropic")]
        assert rules == ["tool_result_orphan"]

    def test_middle_deletion_leaves_orphans(self) -> None:
        """Dropping the call but keeping its result is caught (autogen#7955)."""
        payload = oa(OA_USER, {"role": "assistant", "content": "ok"}, oa_tool("call_1"))
        assert [v.rule for v in validate(payload, "openai")] == ["tool_result_orphan"]

    def test_cut_through_a_parallel_batch(self) -> None:
        """Keeping only part of a batch of parallel results leaves calls unanswered."""
        payload = oa(OA_USER, oa_calls("a", "b", "c"), oa_tool("a"))
        assert [v.path for v in validate(payload, "openai")] == [
            "messages[1].tool_calls[1]",
            "messages[1].tool_calls[2]",
        ]

    def test_call_without_result_after_a_crash(self) -> None:
        """A final tool call with no result is reported (pydantic-ai#4728, inspect_ai#3108)."""
        payload = an(AN_USER, an_asst(an_text("Running."), an_use("toolu_1")))
        assert [v.rule for v in validate(payload, "anthropic")] == ["tool_call_unanswered"]

    def test_two_observations_for_one_call(self) -> None:
        """A synthetic error plus the real result for one call is a duplicate (OpenHands)."""
        payload = oa(OA_USER, oa_calls("a"), oa_tool("a", "error: lost"), oa_tool("a", "42"))
        assert [v.rule for v in validate(payload, "openai")] == ["duplicate_tool_result"]

    def test_thinking_dropped_inside_a_tool_loop(self) -> None:
        """Summarizing away a loop's thinking block breaks the thinking rule."""
        payload = an(
            AN_USER,
            an_asst(an_use("toolu_1")),
            an_user(an_result("toolu_1")),
            thinking={"type": "enabled", "budget_tokens": 1024},
        )
        assert [v.rule for v in validate(payload, "anthropic")] == ["thinking_block_missing"]

    def test_reversed_history_sent_to_a_counter(self) -> None:
        """A reversed message list is caught before it reaches a token-counting API."""
        good = [AN_USER, an_asst(an_use("toolu_1")), an_user(an_result("toolu_1"))]
        rules = {v.rule for v in validate(an(*reversed(good)), "anthropic")}
        assert {"tool_result_orphan", "tool_call_unanswered"} <= rules


# --- hostile input --------------------------------------------------------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=25,
)
WORDS = [
    "role", "content", "type", "text", "tool_calls", "id", "function", "name", "arguments",
    "tool_call_id", "tool_use_id", "input", "signature", "thinking", "data", "source",
    "cache_control", "parts", "functionCall", "functionResponse", "function_call", "response",
    "args", "thought", "thoughtSignature", "inlineData", "mimeType", "user", "assistant",
    "model", "tool", "system", "tool_use", "tool_result", "redacted_thinking", "image",
    "image_url", "custom", "toolu_1", "c1", "enabled", " ", "",
]  # fmt: skip
SHAPED = st.recursive(
    st.sampled_from(WORDS) | JSON,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.sampled_from(WORDS), children, max_size=5)
    ),
    max_leaves=40,
)
FORMATS = st.sampled_from(["openai", "anthropic", "gemini"])


def _check_result(result: Any) -> None:
    assert isinstance(result, list)
    for violation in result:
        assert isinstance(violation, Violation)
        assert violation.rule in RULES
        assert violation.message.startswith(violation.path)


class TestHostileInput:
    @given(payload=JSON, fmt=FORMATS)
    def test_arbitrary_json_never_raises(self, payload: Any, fmt: Any) -> None:
        """Any JSON value yields a list of documented violations, never an exception."""
        _check_result(validate(payload, fmt))

    @settings(max_examples=300)
    @given(
        messages=st.lists(SHAPED, max_size=6),
        extra=st.dictionaries(
            st.sampled_from(["system", "systemInstruction", "thinking", "tools"]), SHAPED
        ),
        fmt=FORMATS,
    )
    def test_near_miss_payloads_never_raise(self, messages: Any, extra: Any, fmt: Any) -> None:
        """Payloads built from the providers' own keys and values never raise."""
        key = "contents" if fmt == "gemini" else "messages"
        _check_result(validate({key: messages, **extra}, fmt))

    @pytest.mark.parametrize("fmt", ["openai", "anthropic", "gemini"])
    def test_pathological_values(self, fmt: Any) -> None:
        """Deep nesting, huge numbers, odd keys and non-JSON objects become violations."""
        deep: list[Any] = []
        for _ in range(50_000):
            deep = [deep]
        cyclic: list[Any] = []
        cyclic.append(cyclic)
        weird = [
            {"role": 10**5000, "content": deep, "parts": deep, 1: 2, None: 3},
            {"role": "user", "content": cyclic, "parts": cyclic},
            {"role": b"user", "content": {1, 2}, "parts": object()},
            {"role": "assistant", "content": [deep, cyclic], "tool_calls": deep},
            {"role": "model", "parts": [{"functionCall": deep, "text": 10**5000}]},
        ]
        key = "contents" if fmt == "gemini" else "messages"
        result = validate({key: weird, "system": deep, "systemInstruction": cyclic}, fmt)
        _check_result(result)
        assert result


class TestDetectRequestFormat:
    @pytest.mark.parametrize("fmt", ["openai", "anthropic", "gemini"])
    def test_renderer_output_is_detected(self, fmt: Any) -> None:
        """A body the renderer writes for a session with tool calls is told as its format."""
        from context_graph.examples import EXAMPLE_SESSION
        from context_graph.graph.context_graph import ContextGraph
        from context_graph.importers import load_sessions
        from context_graph.render import Renderer

        graph = ContextGraph()
        graph.ingest(load_sessions(EXAMPLE_SESSION)[0].events)
        payload = Renderer(format=fmt).render(graph).payload
        assert detect_request_format(payload) == fmt

    @pytest.mark.parametrize(
        ("body", "expected"),
        [
            ({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}, "gemini"),
            ({"systemInstruction": {"parts": [{"text": "x"}]}, "contents": []}, "gemini"),
            ({"system": "be brief", "messages": [{"role": "user", "content": "hi"}]}, "anthropic"),
            ({"system": [{"type": "text", "text": "x"}], "messages": []}, "anthropic"),
            ({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 64}, "anthropic"),
            (
                {"messages": [{"role": "user", "content": [{"type": "tool_result"}]}]},
                "anthropic",
            ),
            (oa({"role": "system", "content": "x"}, {"role": "user", "content": "hi"}), "openai"),
            (oa(oa_calls("call_1"), oa_tool("call_1")), "openai"),
            (oa({"role": "user", "content": [{"type": "image_url"}]}), "openai"),
            ({"messages": [], "tools": [{"type": "function", "function": {}}]}, "openai"),
            ({"messages": [], "tools": [{"name": "t", "input_schema": {}}]}, "anthropic"),
        ],
    )
    def test_signs_of_one_provider(self, body: Any, expected: str) -> None:
        """The fields only one provider uses tell the format."""
        assert detect_request_format(body) == expected

    @pytest.mark.parametrize(
        "body",
        [
            {"messages": [{"role": "user", "content": "hi"}]},
            {"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]},
            {"system": "x", "messages": [{"role": "tool", "content": "4"}]},
            {"contents": [], "messages": []},
            {"system": "x", "contents": []},
            {},
            [],
            None,
            "messages",
        ],
    )
    def test_ambiguous_or_not_a_body(self, body: Any) -> None:
        """Text-only chat, signs of two formats, or no object at all: None."""
        assert detect_request_format(body) is None

    def test_clues_name_the_fields(self) -> None:
        """The clues say what was seen, for a message to the user."""
        body = {"system": "x", "messages": [{"role": "tool", "tool_call_id": "c"}]}
        assert request_format_clues(body) == {
            "openai": ["a message with role `tool`", "a message with `tool_call_id`"],
            "anthropic": ["top-level `system`"],
            "gemini": [],
            "responses": [],
        }

    @given(payload=JSON)
    def test_arbitrary_json_never_raises(self, payload: Any) -> None:
        """Any JSON value gives a format or None; a format comes with its own signs."""
        found = detect_request_format(payload)
        clues = request_format_clues(payload)
        assert found in (None, "openai", "anthropic", "gemini", "responses")
        if found is not None and clues[found]:
            assert [fmt for fmt, signs in clues.items() if signs] == [found]

    @settings(max_examples=200)
    @given(
        messages=st.lists(SHAPED, max_size=6),
        extra=st.dictionaries(
            st.sampled_from(["system", "systemInstruction", "contents", "tools", "max_tokens"]),
            SHAPED,
        ),
    )
    def test_near_miss_bodies_never_raise(self, messages: Any, extra: Any) -> None:
        """Bodies built from the providers' keys never raise either."""
        detect_request_format({"messages": messages, **extra})


class TestValidatorRegistry:
    @pytest.mark.parametrize("fmt", ["openai", "anthropic", "gemini", "responses"])
    def test_each_format_satisfies_the_protocol(self, fmt: Any) -> None:
        """Each registered validator is a `ProviderValidator` named by its key."""
        validator = PROVIDER_VALIDATORS[fmt]
        assert isinstance(validator, ProviderValidator)
        assert validator.format == fmt

    def test_the_tie_breaks_are_the_formats_own(self) -> None:
        """Only Gemini's clues are undone by `messages`; only Anthropic's `max_tokens` leans."""
        mixed = {"contents": [], "messages": [], "max_tokens": 8}
        assert [f for f, v in PROVIDER_VALIDATORS.items() if v.mixes(mixed)] == ["gemini"]
        assert [f for f, v in PROVIDER_VALIDATORS.items() if v.leans(mixed)] == ["anthropic"]
        assert not any(v.leans({"max_tokens": 8}) for v in PROVIDER_VALIDATORS.values())

    def test_rules_are_the_common_ones_and_each_formats(self) -> None:
        """`RULES` holds every format's own codes, sorted, beside the shared ones."""
        own = [set(v.rules) for v in PROVIDER_VALIDATORS.values()]
        assert all(codes <= set(RULES) for codes in own)
        assert list(RULES) == sorted(RULES)
        assert (
            RULES["tool_call_id_invalid"]
            == PROVIDER_VALIDATORS["openai"].rules["tool_call_id_invalid"]
        )

    def test_tables_are_read_only(self) -> None:
        """The registry, `RULES` and each format's rules cannot be changed at run time."""
        tables: list[Any] = [
            PROVIDER_VALIDATORS,
            RULES,
            *(v.rules for v in PROVIDER_VALIDATORS.values()),
        ]
        for table in tables:
            with pytest.raises(TypeError):
                table["made_up"] = table[next(iter(table))]
        assert "made_up" not in RULES

    @pytest.mark.parametrize("fmt", ["openai", "anthropic", "gemini"])
    def test_validate_reports_what_the_formats_validator_finds(self, fmt: Any) -> None:
        """`validate` is the format's own check (after the NaN scan), sorted by message."""
        payload = {"messages": [{"role": "tool"}, "x"], "contents": [{"role": "nobody"}]}
        out = Collector()
        PROVIDER_VALIDATORS[fmt].check(payload, out)
        assert out.found
        assert sorted(out.found, key=lambda v: -1 if v.index is None else v.index) == validate(
            payload, fmt
        )

    def test_unknown_format_lists_the_registered_ones(self) -> None:
        """The error for an unknown format names every registered format."""
        known = r"use one of anthropic, gemini, openai, responses$"
        with pytest.raises(ConfigurationError, match=known):
            validate({}, "bedrock")  # type: ignore[arg-type]

    def test_clues_are_each_validators_signs_once(self) -> None:
        """`request_format_clues` lists what each format's validator finds, each sign once."""
        body = {
            "system": "s",
            "messages": [
                {"role": "tool", "tool_call_id": "a"},
                {"role": "tool", "tool_call_id": "b"},
                {"role": "user", "content": [{"type": "tool_result", "cache_control": {}}]},
            ],
            "tools": [{"functionDeclarations": []}],
        }
        clues = request_format_clues(body)
        assert list(clues) == list(PROVIDER_VALIDATORS)
        for fmt, validator in PROVIDER_VALIDATORS.items():
            assert clues[fmt] == list(dict.fromkeys(validator.clues(body)))
        assert clues["openai"] == ["a message with role `tool`", "a message with `tool_call_id`"]
        assert len(PROVIDER_VALIDATORS["openai"].clues(body)) == 4
