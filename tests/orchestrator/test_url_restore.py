"""Shortened URLs in what the model answers are restored when the reply is added."""

from __future__ import annotations

import json
import re
from typing import Any, NamedTuple

import anyio
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from context_graph.graph.nodes import AssistantNode, ToolCallNode
from context_graph.graph.sdk_replies import read_response
from context_graph.urls import url_map
from orchestrator import ContextManager
from orchestrator.policy import Policy
from processors import UrlShortener
from processors.urls import HINT_CHARS, restore_urls, shorten_urls

URL = (
    "https://search.example.com/results?q=context+graph+compaction+survey&sca_esv=58124"
    "&source=hp&ei=Zx81ZqzXNoGBxc8P&iflsig=AL9hbdgAAAAAZj&uact=5"
)
QUERY = URL[URL.index("?") :]


def shortened_session(fmt: str = "openai") -> tuple[ContextManager, str]:
    """A manager whose view shortened `URL`, and the shortened URL the model saw."""
    manager = ContextManager(format=fmt, policy=Policy(pipeline=(UrlShortener(),)))
    results = "\n".join(f"{i}. {URL}&page={i}" for i in range(3))
    manager.ingest(
        [
            {"type": "user", "content": "find surveys"},
            {
                "type": "assistant",
                "tool_calls": [{"id": "s1", "name": "search", "arguments": '{"q": "graph"}'}],
            },
            {"type": "tool_result", "call_id": "s1", "name": "search", "content": results},
        ]
    )
    anyio.run(manager.compact)
    sent = json.dumps(manager.render_sync().payload)
    match = re.search(r"https://search\.example\.com/results\?[^\s\"]*~[0-9a-f]{8,}", sent)
    assert match is not None, "the render carries a shortened URL"
    return manager, match.group(0)


def chat_completion(text: str, arguments: dict[str, Any]) -> dict[str, Any]:
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "fetch", "arguments": json.dumps(arguments)},
    }
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "m",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {"role": "assistant", "content": text, "tool_calls": [call]},
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


class TestAddResponse:
    def test_text_and_tool_arguments_are_restored(self) -> None:
        """The recorded turn holds the original URL in its text and its call's arguments."""
        manager, short = shortened_session()
        assert short != f"{URL}&page=0"
        reply = chat_completion(f"See {short}.", {"url": short, "opts": {"urls": [short]}})
        ids = manager.add_response(reply)
        nodes = [manager.raw[i] for i in ids]
        (turn,) = [n for n in nodes if isinstance(n, AssistantNode)]
        (call,) = [n for n in nodes if isinstance(n, ToolCallNode)]
        assert turn.text == f"See {URL}&page=0."
        assert json.loads(call.arguments) == {
            "url": f"{URL}&page=0",
            "opts": {"urls": [f"{URL}&page=0"]},
        }

    def test_the_tag_keeps_a_hint_of_the_query(self) -> None:
        """The shortened form starts with the query's first characters (seed 004)."""
        _, short = shortened_session()
        assert short.startswith("https://search.example.com/results" + QUERY[: 1 + HINT_CHARS])

    def test_anthropic_tool_input_is_restored(self) -> None:
        """A `tool_use` block's nested `input` is restored."""
        manager, short = shortened_session("anthropic")
        ids = manager.add_response(
            {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": "m",
                "content": [
                    {"type": "tool_use", "id": "t1", "name": "fetch", "input": {"u": [short]}}
                ],
                "stop_reason": "tool_use",
                "usage": {"input_tokens": 10, "output_tokens": 5},
            }
        )
        (call,) = [manager.raw[i] for i in ids if manager.raw[i].kind == "tool_call"]
        assert call.parsed_arguments == {"u": [f"{URL}&page=0"]}  # type: ignore[attr-defined]

    def test_url_map_and_restore(self) -> None:
        """`url_map` is what the session's nodes carry; `restore_urls` walks any value."""
        manager, short = shortened_session()
        assert manager.url_map == url_map(manager.working.view.overlay.derived.values())
        assert manager.restore_urls((short, {"k": short})) == (
            f"{URL}&page=0",
            {"k": f"{URL}&page=0"},
        )

    def test_read_response_restores_with_a_map(self) -> None:
        """`read_response(url_map=...)` restores; without a map the reply is read as it is."""
        manager, short = shortened_session()
        reply = chat_completion(short, {"url": short})
        assert read_response(reply, url_map=manager.url_map).turn.content[0].text == (  # type: ignore[union-attr]
            f"{URL}&page=0"
        )
        assert read_response(reply).turn.content[0].text == short  # type: ignore[union-attr]


class Link(BaseModel):
    href: str
    tags: tuple[str, ...] = ()


class Pair(NamedTuple):
    first: Any
    second: Any


_QUERY = st.text(st.sampled_from("abcdefghij0123456789=&+%-_."), min_size=0, max_size=120)
_URLS = st.builds(
    lambda path, query: f"https://ex.example.org/{path}?{query}",
    st.text("abc/", max_size=10),
    _QUERY,
)
_TEXTS = st.builds(lambda words, url: f"{words} {url} end", st.text("xyz ", max_size=10), _URLS)
_NESTED = st.recursive(
    _TEXTS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.tuples(inner, inner),
        st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3),
        st.builds(Pair, inner, inner),
        st.builds(Link, href=_TEXTS, tags=st.tuples(_TEXTS)),
    ),
    max_leaves=6,
)


def _shorten_all(value: Any, mapping: dict[str, str]) -> Any:
    if isinstance(value, str):
        short, found = shorten_urls(value, min_length=8)
        mapping.update(found)
        return short
    if isinstance(value, Link):
        return Link(href=_shorten_all(value.href, mapping), tags=_shorten_all(value.tags, mapping))
    if isinstance(value, Pair):
        return Pair(_shorten_all(value.first, mapping), _shorten_all(value.second, mapping))
    if isinstance(value, dict):
        return {k: _shorten_all(v, mapping) for k, v in value.items()}
    if isinstance(value, tuple):
        return tuple(_shorten_all(v, mapping) for v in value)
    return [_shorten_all(v, mapping) for v in value]


@settings(max_examples=150, deadline=None)
@given(_NESTED)
def test_restore_of_shorten_is_identity_anywhere(value: Any) -> None:
    """restore(shorten(x)) == x for URLs nested in dicts, lists, tuples and models."""
    mapping: dict[str, str] = {}
    short = _shorten_all(value, mapping)
    assert restore_urls(short, mapping) == value
