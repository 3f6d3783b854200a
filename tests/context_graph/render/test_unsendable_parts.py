"""What no provider accepts is never rendered: NaN in arguments, empty media, empty signatures.

Each was rendered as is before: `NaN` as a bare JSON token in Anthropic and Gemini bodies
(the SDKs refuse the body), an image with neither data nor URL as an empty URL, a
thinking block with `signature: ""` as signed thinking. Our own `validate` now reports all
three in a body built elsewhere (tests/context_graph/test_validate.py), and the renderer
never builds them.
"""

from __future__ import annotations

import json

import pytest

from context_graph import ContextGraph
from context_graph.graph.content import DocumentPart, ImagePart, TextPart, ThinkingPart
from context_graph.render import FORMATS, Renderer
from context_graph.validate import validate


def _strict_json(body: object) -> str:
    return json.dumps(body, allow_nan=False)


def _graphs() -> dict[str, ContextGraph]:
    nan_args = ContextGraph()
    nan_args.add_user("Compute it.")
    nan_args.add_assistant(
        tool_calls=[{"id": "c1", "name": "calc", "arguments": '{"x": NaN, "y": -Infinity}'}]
    )
    nan_args.add_tool_result("c1", "ok")
    empty_media = ContextGraph()
    empty_media.add_user(
        [
            TextPart(text="Look at these."),
            ImagePart(media_type="image/png"),
            DocumentPart(media_type="application/pdf", data=""),
        ]
    )
    empty_signature = ContextGraph()
    empty_signature.add_user("Go.")
    for provider in ("anthropic", "gemini"):
        empty_signature.add_assistant(
            [ThinkingPart(thinking="Hm.", signature="", provider=provider), TextPart(text="Done.")]
        )
        empty_signature.add_user("Again.")
    return {"nan_args": nan_args, "empty_media": empty_media, "empty_signature": empty_signature}


GRAPHS = _graphs()


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("case", sorted(GRAPHS))
def test_the_body_is_strict_json_and_valid(case: str, fmt: str) -> None:
    """Every format renders each case as strict JSON that passes validation."""
    body = Renderer(format=fmt).render(GRAPHS[case]).payload  # type: ignore[arg-type]
    _strict_json(body)
    assert validate(body, fmt) == []  # type: ignore[arg-type]


@pytest.mark.parametrize("fmt", ["anthropic", "gemini"])
def test_nan_arguments_go_as_text(fmt: str) -> None:
    """Arguments holding NaN are not JSON: they are sent as their text."""
    body = json.loads(_strict_json(Renderer(format=fmt).render(GRAPHS["nan_args"]).payload))
    as_text = json.dumps('{"x": NaN, "y": -Infinity}')  # the arguments as a JSON string
    assert f'"arguments": {as_text}' in json.dumps(body)


def test_empty_media_becomes_a_note() -> None:
    """An image with nothing to send is a short note in the user's turn."""
    body = Renderer(format="anthropic").render(GRAPHS["empty_media"]).payload
    texts = [b["text"] for b in body["messages"][0]["content"] if b["type"] == "text"]
    assert texts == [
        "Look at these.",
        "[image with no content: nothing to send]",
        "[document with no content: nothing to send]",
    ]
