"""The OpenAI Responses rules: one minimal body per rule, valid bodies, detection.

The golden table holds, for each rule the Responses validator reports, a body breaking
exactly that rule; test_validate.py has the table of the other formats.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchmarks.sdk_types import sdk_problems
from context_graph.formats.openai_responses.validate import RESPONSES_RULES
from context_graph.validate import (
    PROVIDER_VALIDATORS,
    ProviderValidator,
    detect_request_format,
    request_format_clues,
    validate,
)

USER = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}
SAID = {
    "type": "message",
    "role": "assistant",
    "content": [{"type": "output_text", "text": "hello", "annotations": []}],
}
REASONING = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAA"}


def body(*items: Any, **extra: Any) -> dict[str, Any]:
    return {"input": list(items), **extra}


def call(call_id: str = "call_1", **extra: Any) -> dict[str, Any]:
    return {"type": "function_call", "call_id": call_id, "name": "sh", "arguments": "{}"} | extra


def output(call_id: str = "call_1", **extra: Any) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": "ok"} | extra


def custom(call_id: str = "call_c", **extra: Any) -> dict[str, Any]:
    return {"type": "custom_tool_call", "call_id": call_id, "name": "patch", "input": "x"} | extra


def custom_output(call_id: str = "call_c", **extra: Any) -> dict[str, Any]:
    return {"type": "custom_tool_call_output", "call_id": call_id, "output": "done"} | extra


def user(*parts: Any) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": list(parts)}


@dataclass(frozen=True)
class Golden:
    """A minimal body that breaks exactly one rule, and where."""

    payload: Any
    rule: str
    index: int | None
    path: str


GOLDEN = [
    Golden("a string", "payload_not_object", None, "$"),
    Golden({"model": "gpt-5"}, "messages_missing", None, "input"),
    Golden(body(), "messages_empty", None, "input"),
    Golden({"input": ""}, "messages_empty", None, "input"),
    Golden(body(USER, 7), "message_not_object", 1, "input[1]"),
    Golden(body(USER, instructions=["x"]), "instructions_invalid", None, "instructions"),
    Golden(
        body({"type": "message", "role": "bot", "content": "x"}), "unknown_role", 0, "input[0].role"
    ),
    Golden(body(USER | {"name": "ann"}), "unknown_field", 0, "input[0].name"),
    Golden(body({"type": "message", "role": "user"}), "content_missing", 0, "input[0].content"),
    Golden(body({"role": "user", "content": 5}), "content_invalid", 0, "input[0].content"),
    Golden(body(user()), "content_empty", 0, "input[0].content"),
    Golden(body(user("hi")), "part_not_object", 0, "input[0].content[0]"),
    Golden(
        body(user({"type": "text", "text": "hi"})),
        "unknown_part_type",
        0,
        "input[0].content[0].type",
    ),
    Golden(
        body(user({"type": "output_text", "text": "hi"})),
        "part_not_allowed_for_role",
        0,
        "input[0].content[0].type",
    ),
    Golden(body(user({"type": "input_text"})), "part_invalid", 0, "input[0].content[0].text"),
    Golden(
        body(
            user({"type": "input_image", "image_url": "data:image/png;base64,", "detail": "auto"})
        ),
        "media_empty",
        0,
        "input[0].content[0].image_url",
    ),
    Golden(body(USER, {"type": "web_search"}), "item_type_unknown", 1, "input[1].type"),
    Golden(body(USER, call(call_id="")), "call_id_invalid", 1, "input[1].call_id"),
    Golden(body(USER, call("c" * 65)), "call_id_invalid", 1, "input[1].call_id"),
    Golden(
        body(USER, call(arguments={"x": 1}), output()),
        "function_call_invalid",
        1,
        "input[1].arguments",
    ),
    Golden(
        body(USER, custom(input=None), custom_output()),
        "custom_tool_call_invalid",
        1,
        "input[1].input",
    ),
    Golden(body(USER, call(), output(output=3)), "output_invalid", 2, "input[2].output"),
    Golden(body(USER, custom(), output("call_c")), "output_kind_mismatch", 2, "input[2].call_id"),
    Golden(
        body(USER, REASONING | {"summary": "x"}, SAID), "reasoning_invalid", 1, "input[1].summary"
    ),
    Golden(
        body(USER, {"type": "reasoning", "summary": []}, SAID), "reasoning_invalid", 1, "input[1]"
    ),
    Golden(
        body(USER, {"type": "compaction", "encrypted_content": ""}),
        "compaction_invalid",
        1,
        "input[1].encrypted_content",
    ),
    Golden(
        body(USER, {"type": "compaction", "encrypted_content": "x" * 10_485_761}),
        "compaction_invalid",
        1,
        "input[1].encrypted_content",
    ),
    Golden(
        body(USER, {"type": "compaction", "id": 5, "encrypted_content": "gAAA"}),
        "compaction_invalid",
        1,
        "input[1].id",
    ),
    Golden(
        body(USER, {"type": "compaction", "encrypted_content": "gAAA", "created_by": "x"}),
        "unknown_field",
        1,
        "input[1].created_by",
    ),
    Golden(body(USER, REASONING), "reasoning_not_followed", 1, "input[1]"),
    Golden(body(USER, REASONING, USER), "reasoning_not_followed", 1, "input[1]"),
    Golden(body(USER, call()), "tool_call_unanswered", 1, "input[1]"),
    Golden(body(USER, output()), "tool_result_orphan", 1, "input[1].call_id"),
    Golden(body(USER, call(), output(), output()), "duplicate_tool_result", 3, "input[3].call_id"),
    Golden(body(USER, call(), call(), output()), "duplicate_tool_call_id", 2, "input[2].call_id"),
    Golden(
        body(USER, call(arguments='{"x": 1}'), output(), temperature=math.nan),
        "non_finite_number",
        None,
        "temperature",
    ),
    Golden(
        body(USER, call(), output(status=math.inf)),
        "non_finite_number",
        2,
        "input[2].status",
    ),
]
_IDS = [f"{g.rule}-{n}" for n, g in enumerate(GOLDEN)]


def _found(payload: Any) -> list[tuple[str, int | None, str]]:
    return [(v.rule, v.index, v.path) for v in validate(payload, "responses")]


class TestGolden:
    @pytest.mark.parametrize("case", GOLDEN, ids=_IDS)
    def test_body_breaks_exactly_its_rule(self, case: Golden) -> None:
        """A minimal body breaking one rule yields exactly that code, index and path."""
        assert _found(case.payload) == [(case.rule, case.index, case.path)]

    @pytest.mark.parametrize("case", GOLDEN, ids=_IDS)
    def test_message_starts_with_the_path(self, case: Golden) -> None:
        """Every message names the place first, then what is wrong."""
        (violation,) = validate(case.payload, "responses")
        assert violation.message.startswith(f"{case.path}: ")

    def test_every_responses_rule_is_covered(self) -> None:
        """The table exercises each of the format's own codes."""
        assert set(RESPONSES_RULES) <= {g.rule for g in GOLDEN}


VALID = [
    body(USER),
    {"input": "What is 2+2?", "instructions": "Be terse."},
    body(
        {"role": "developer", "content": "Use tools."},
        USER,
        REASONING,
        SAID,
        {
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": "plan"}],
            "encrypted_content": "e",
        },
        call(),
        output(),
        custom(),
        custom_output(output=[{"type": "input_text", "text": "done"}]),
        user(
            {"type": "input_image", "image_url": "https://example.com/a.png", "detail": "auto"},
            {
                "type": "input_file",
                "file_data": "data:application/pdf;base64,QQ==",
                "filename": "a",
            },
        ),
        {"type": "item_reference", "id": "msg_1"},
        instructions="You are a coding agent.",
    ),
    body(USER, REASONING, REASONING | {"id": "rs_2"}, call(), output()),
    body(USER, REASONING, {"type": "local_shell_call", "id": "lsh_1"}),
    body({"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAAA"}, USER),
]


class TestValidBodies:
    @pytest.mark.parametrize("payload", VALID)
    def test_valid_bodies_pass(self, payload: Any) -> None:
        """Bodies the API accepts break no rule."""
        assert validate(payload, "responses") == []

    def test_rendered_shapes_pass_the_sdk_types(self) -> None:
        """The shapes the renderer writes are the SDK's request types."""
        payload = body(USER, REASONING, SAID, call(), output(), custom(), custom_output())
        assert sdk_problems(payload | {"instructions": "x"}, "responses") == []

    def test_the_sdk_types_catch_a_misspelled_field(self) -> None:
        """A key the SDK does not know is reported with its path."""
        problems = sdk_problems(body(USER, call() | {"argument": "{}"}), "responses")
        assert "input[1].argument: unknown key for ResponseFunctionToolCallParam" in problems

    def test_the_sdk_types_allow_only_the_ids_the_api_fills_in(self) -> None:
        """An assistant message may lack id and status, reasoning its id; nothing else."""
        no_annotations = SAID | {"content": [{"type": "output_text", "text": "hello"}]}
        assert sdk_problems(body(no_annotations), "responses") == [
            "input[0].content[0].annotations: missing required key"
        ]
        assert sdk_problems({"instructions": 3, "input": "x"}, "responses") != []

    def test_a_recorded_message_may_carry_its_id(self) -> None:
        """Codex CLI 0.171 sends each user and developer message with the `msg_...` id it
        recorded it under; the API takes it, the SDK's input type has no `id`. A string id
        passes; any other id, and the rest of the message, are still checked."""
        developer = USER | {"role": "developer"}
        recorded = [m | {"id": f"msg_{n}"} for n, m in enumerate((USER, developer))]
        assert sdk_problems(body(*recorded), "responses") == []
        assert sdk_problems(body(USER | {"id": 7}), "responses") == [
            "input[0].id: expected str, got int"
        ]
        typo = USER | {"id": "msg_1", "contents": []}
        assert sdk_problems(body(typo), "responses") == [
            "input[0].contents: unknown key for EasyInputMessageParam"
        ]


class TestDetection:
    @pytest.mark.parametrize("payload", VALID)
    def test_a_responses_body_is_detected(self, payload: Any) -> None:
        """An `input` list or string (with or without `instructions`) is a Responses body."""
        assert detect_request_format(payload) == "responses"

    def test_clues_name_the_fields(self) -> None:
        """The clues say what was seen: the top-level fields and the item types."""
        clues = request_format_clues(body(USER, REASONING, call(), instructions="x"))
        assert clues["responses"] == [
            "top-level `input`",
            "top-level `instructions`",
            "an input item of type `reasoning`",
            "an input item of type `function_call`",
        ]
        assert clues["openai"] == clues["anthropic"] == clues["gemini"] == []

    def test_a_body_with_messages_and_input_is_not_told(self) -> None:
        """Signs of two formats give no answer."""
        mixed = {"messages": [{"role": "tool", "tool_call_id": "c"}], "input": []}
        assert detect_request_format(mixed) is None

    def test_an_output_before_its_call_is_an_orphan(self) -> None:
        """An output answers only a call earlier in `input`; the call is then unanswered."""
        assert _found(body(USER, output(), call())) == [
            ("tool_result_orphan", 1, "input[1].call_id"),
            ("tool_call_unanswered", 2, "input[2]"),
        ]

    def test_the_validator_is_registered(self) -> None:
        """The registry holds a `ProviderValidator` named `responses`."""
        validator = PROVIDER_VALIDATORS["responses"]
        assert isinstance(validator, ProviderValidator)
        assert validator.format == "responses"


_JSON = st.recursive(
    st.none() | st.booleans() | st.floats() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=20,
)
_ITEM_KEYS = st.sampled_from(
    [
        "type",
        "role",
        "content",
        "call_id",
        "name",
        "arguments",
        "output",
        "input",
        "id",
        "summary",
        "encrypted_content",
    ]
)
_NEAR_ITEM = st.dictionaries(
    _ITEM_KEYS,
    _JSON
    | st.sampled_from(
        [
            "message",
            "user",
            "assistant",
            "function_call",
            "function_call_output",
            "reasoning",
            "custom_tool_call",
        ]
    ),
    max_size=5,
)


@given(payload=_JSON)
def test_arbitrary_json_never_raises(payload: Any) -> None:
    """Any JSON value gives violations, never an exception."""
    validate(payload, "responses")
    validate({"input": payload}, "responses")


@given(items=st.lists(_NEAR_ITEM, max_size=6), instructions=_JSON)
def test_near_miss_bodies_never_raise(items: list[Any], instructions: Any) -> None:
    """Bodies made of the format's own keys, wrongly, are reported, never raised on."""
    payload = {"input": items, "instructions": instructions}
    for violation in validate(payload, "responses"):
        assert violation.rule in RESPONSES_RULES or violation.rule in _common()
    detect_request_format(payload)


def _common() -> set[str]:
    from context_graph.validate.common import COMMON_RULES

    return set(COMMON_RULES)
