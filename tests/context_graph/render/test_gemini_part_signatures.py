"""Gemini signatures on plain text parts go back on the parts they came with.

The importer keeps a text part's `thoughtSignature` in the model turn's
`meta["thought_signatures"]` (a text part has no field of its own for it); the renderer
writes it back, so a conversation rendered whole is the conversation as sent, and the
head of the provider's cached prefix does not change from call to call.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from context_graph import ContextGraph
from context_graph.importers import load_events
from context_graph.render import render_history
from context_graph.testing import WordCounter

_TEXT = st.text(alphabet="abcdefgh .", min_size=1, max_size=30).filter(str.strip)
_SIGNATURE = st.text(alphabet="ABCDEFGHabcdefgh0123456789+/", min_size=4, max_size=24)


@st.composite
def model_turns(draw: st.DrawFn) -> dict[str, Any]:
    """A model turn: text parts, some signed, then a signed call."""
    texts = draw(st.lists(st.tuples(_TEXT, st.none() | _SIGNATURE), min_size=1, max_size=4))
    parts: list[dict[str, Any]] = []
    for text, signature in texts:
        part: dict[str, Any] = {"text": text}
        if signature is not None:
            part["thoughtSignature"] = signature
        parts.append(part)
    call = {"id": "c1", "name": "run", "args": {"n": 1}}
    parts.append({"functionCall": call, "thoughtSignature": draw(_SIGNATURE)})
    return {"role": "model", "parts": parts}


@given(model_turns())
def test_a_conversation_rendered_whole_is_sent_as_it_came(turn: dict[str, Any]) -> None:
    contents = [
        {"role": "user", "parts": [{"text": "Count."}]},
        turn,
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"id": "c1", "name": "run", "response": {"output": "1"}}}
            ],
        },
    ]
    graph = ContextGraph(counter=WordCounter())
    graph.ingest(load_events({"contents": contents}, format="gemini"))
    payload = render_history(graph, format="gemini").payload
    assert payload["contents"] == contents
