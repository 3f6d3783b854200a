"""The integrations ask a format's `Wire` and an SDK method's `Api`, never a format's name.

A format or SDK method set up beside the built-ins gets the behaviour from its own
pieces: its reader of a rendered body, its system-only body, its stream collector.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from types import SimpleNamespace
from typing import Any

import pytest

from context_graph.formats.wires import WIRES
from context_graph.graph.node_tokens import NodeTokenCache
from context_graph.tokens.counting import default_counter
from orchestrator.integrations import rendered
from orchestrator.integrations.clients_apis import (
    ANTHROPIC_MESSAGES,
    GEMINI_CONTENT,
    OPENAI_CHAT,
    OPENAI_RESPONSES,
    Api,
)
from orchestrator.integrations.streams import StreamingNotSupportedError, watch_stream


def _with_wire(monkeypatch: pytest.MonkeyPatch, **changes: Any) -> None:
    """The chat format's wire, changed, in the registry `rendered` asks."""
    wire = dataclasses.replace(WIRES["openai"], **changes)
    monkeypatch.setattr(rendered, "WIRES", {**WIRES, "openai": wire})


class TestRendered:
    def test_chat_items_are_read_by_the_formats_own_reader(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """`chat_items` hands the body and the id map to `Wire.as_chat` and returns its items."""
        seen: list[Any] = []

        def read(payload: Mapping[str, Any], original_id: Any) -> list[dict[str, Any]]:
            seen.append((payload, original_id("sent")))
            return [{"role": "user", "content": "read by the wire"}]

        _with_wire(monkeypatch, as_chat=read)
        result: Any = SimpleNamespace(format="openai", payload={"turns": []})
        items = rendered.chat_items(result, lambda sent: f"{sent}-recorded")
        assert items == [{"role": "user", "content": "read by the wire"}]
        assert seen == [({"turns": []}, "sent-recorded")]

    def test_system_tokens_count_the_formats_system_body(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A format whose system body repeats the prompt counts it twice."""
        cache = NodeTokenCache(default_counter())
        prompt = "You review pull requests and answer in one short paragraph."
        once = rendered.system_tokens(prompt, "openai", cache)

        def twice(text: str) -> dict[str, Any]:
            return {"messages": [{"role": "system", "content": text}] * 2}

        _with_wire(monkeypatch, system_body=twice)
        assert rendered.system_tokens(prompt, "openai", cache) > once > 0


class _Turns:
    """A method's conversation that keeps the replies it is given."""

    def __init__(self, api: Api) -> None:
        self.api = api
        self.taken = 1
        self.given: list[Any] = []

    def take(self, kwargs: Mapping[str, Any]) -> None:
        """Nothing to take in: the test streams a reply only."""
        del kwargs

    def give(self, response: Any) -> None:
        """Keep the reply."""
        self.given.append(response)


class _Done:
    """A collector whose reply is complete at the event `"done"`."""

    def __init__(self, kwargs: Mapping[str, Any]) -> None:
        self.prefix = kwargs.get("prefix", "")

    def feed(self, event: Any) -> Any:
        """The reply at `"done"`."""
        return f"{self.prefix}reply" if event == "done" else None

    def finish(self) -> Any:
        """Nothing: the stream ended without `"done"`."""
        return None


class _Stream:
    def __init__(self, events: list[Any]) -> None:
        self._iterator: Iterator[Any] = iter(events)

    def __iter__(self) -> Iterator[Any]:
        return self._iterator


class TestStreams:
    def test_a_methods_own_collector_assembles_its_reply(self) -> None:
        """An `Api` made beside the built-ins streams through the collector it carries."""
        api = dataclasses.replace(OPENAI_CHAT, name="ledger.create", collect_stream=_Done)
        turns = _Turns(api)
        stream = watch_stream(_Stream(["a", "b", "done"]), turns, {"prefix": "ledger "})
        assert list(stream) == ["a", "b", "done"]
        assert turns.given == ["ledger reply"]

    def test_a_method_without_a_collector_refuses_to_stream(self) -> None:
        """No collector: a clear error naming the method, and the stream left as it was."""
        api = dataclasses.replace(OPENAI_CHAT, name="ledger.create", collect_stream=None)
        stream = _Stream(["a"])
        before = stream._iterator
        with pytest.raises(StreamingNotSupportedError, match=r"ledger\.create: no collector"):
            watch_stream(stream, _Turns(api), {})
        assert stream._iterator is before

    @pytest.mark.parametrize(
        "api", [OPENAI_CHAT, ANTHROPIC_MESSAGES, OPENAI_RESPONSES, GEMINI_CONTENT]
    )
    def test_each_built_in_method_reads_with_its_formats_reader(self, api: Api) -> None:
        """The importer of a method's conversations is its format's reader."""
        assert api.importer == WIRES[api.format].reader_name
        assert api.collect_stream is not None
