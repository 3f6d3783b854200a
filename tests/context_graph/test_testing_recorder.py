"""`context_graph.testing.Recorder` against the real `orchestrator.EventBus`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from context_graph.errors import ConfigurationError
from context_graph.testing import ListsSignals, RecordedEvent, Recorder
from orchestrator.bus import SIGNALS, EventBus


class ListingBus(EventBus):
    """An `EventBus` that lists its signals (what `Recorder` records by default)."""

    @property
    def signal_names(self) -> tuple[str, ...]:
        return tuple(SIGNALS)


class BareBus:
    """The least a `SignalBus` offers: look up, connect, disconnect (no list of names)."""

    def __init__(self) -> None:
        self.inner = EventBus()

    def signal(self, name: str, /) -> object:
        return self.inner.signal(name)

    def connect(self, name: str, receiver: Callable[..., Any], /) -> object:
        return self.inner.connect(name, receiver)

    def disconnect(self, name: str, receiver: Callable[..., Any], /) -> None:
        self.inner.disconnect(name, receiver)


@pytest.fixture(name="bus")
def bus_fixture() -> EventBus:
    return EventBus()


class TestRecorder:
    def test_records_the_named_signals_in_order(self, bus: EventBus) -> None:
        """Inside the block the named signals are recorded with their payloads, in order."""
        with Recorder(bus, names=["trigger_fired", "render_done"]) as recorder:
            bus.emit("trigger_fired", firing="f")
            bus.emit("proposal_made", proposal="p")
            bus.emit("render_done", tokens=12)
        assert recorder.events == [
            RecordedEvent("trigger_fired", {"firing": "f"}),
            RecordedEvent("render_done", {"tokens": 12}),
        ]
        assert recorder.names() == ["trigger_fired", "render_done"]
        assert recorder.of("render_done") == [{"tokens": 12}]

    def test_records_every_signal_a_listing_bus_carries(self) -> None:
        """Without `names`, a bus that lists its signals has every one of them recorded."""
        bus = ListingBus()
        assert isinstance(bus, ListsSignals)
        with Recorder(bus) as recorder:
            for name in SIGNALS:
                bus.emit(name, seen=name)
        assert recorder.names() == list(SIGNALS)
        assert [event.payload["seen"] for event in recorder.events] == list(SIGNALS)

    def test_a_bus_that_lists_nothing_needs_names(self) -> None:
        """Without `names` and without `signal_names`, the error says to pass names."""
        with pytest.raises(ConfigurationError, match=r"BareBus does not list its signals"):
            Recorder(BareBus())
        bare = BareBus()
        with Recorder(bare, names=["node_added"]) as recorder:
            bare.inner.emit("node_added", node_id="n1")
        assert recorder.of("node_added") == [{"node_id": "n1"}]

    def test_stops_recording_after_the_block(self, bus: EventBus) -> None:
        """After the block the recorder is disconnected from every signal it heard."""
        with Recorder(bus, names=list(SIGNALS)) as recorder:
            bus.emit("node_added", node_id="a")
        bus.emit("node_added", node_id="b")
        assert recorder.of("node_added") == [{"node_id": "a"}]
        assert all(not bus.signal(name).receivers for name in SIGNALS)

    def test_other_receivers_still_run(self, bus: EventBus) -> None:
        """Recording observes only: the bus's other receivers hear every signal too."""
        heard: list[int] = []
        bus.connect("render_done", lambda sender, **payload: heard.append(payload["tokens"]))
        with Recorder(bus, names=["render_done"]) as recorder:
            bus.emit("render_done", tokens=7)
        assert heard == [7]
        assert recorder.of("render_done") == [{"tokens": 7}]

    def test_unknown_name_raises_at_construction(self, bus: EventBus) -> None:
        """A name the bus does not carry fails when the recorder is made, not on entering."""
        with pytest.raises(ConfigurationError, match="unknown signal `nope`"):
            Recorder(bus, names=["render_done", "nope"])
        assert not bus.signal("render_done").receivers

    def test_payload_is_read_only(self, bus: EventBus) -> None:
        """A recorded payload cannot be changed."""
        with Recorder(bus, names=["usage_reported"]) as recorder:
            bus.emit("usage_reported", usage={"input_tokens": 5})
        with pytest.raises(TypeError):
            recorder.events[0].payload["usage"] = {}  # type: ignore[index]
