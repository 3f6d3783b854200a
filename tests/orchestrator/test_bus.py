from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from context_graph import ConfigurationError
from orchestrator.bus import SIGNALS, EventBus, RecordedEvent, Recorder

# No autouse fixture disconnects receivers: every bus holds its own signals, so a
# receiver connected in one test lives and dies with that test's bus.


@pytest.fixture(name="bus")
def bus_fixture() -> EventBus:
    return EventBus()


class TestEventBus:
    def test_carries_the_issue_signals(self) -> None:
        """The bus carries exactly the signals the orchestrator sends."""
        assert sorted(SIGNALS) == [
            "agent_tools_withheld",
            "auto_continued",
            "budget_crossed",
            "compaction_deferred",
            "compaction_done",
            "compaction_hook_deferred",
            "compaction_hook_ran",
            "compaction_timed_out",
            "memory_flushed",
            "node_added",
            "overflow_fallback",
            "proposal_applied",
            "proposal_made",
            "proposal_rejected",
            "proposal_waited",
            "render_done",
            "trigger_fired",
            "usage_recorded",
            "usage_reported",
            "user_turn_replayed",
        ]

    def test_emit_calls_receivers_with_sender_and_payload(self, bus: EventBus) -> None:
        """A receiver gets the sender first and the payload as keywords."""
        seen: list[tuple[object, dict[str, Any]]] = []
        bus.connect("proposal_rejected", lambda sender, **kw: seen.append((sender, kw)))
        bus.emit("proposal_rejected", proposal="p", reason="tokens went up")
        assert seen == [(bus, {"proposal": "p", "reason": "tokens went up"})]

    def test_sender_is_the_owner_when_given(self) -> None:
        """A bus made with a sender passes it to receivers."""
        owner = object()
        bus = EventBus(sender=owner)
        senders: list[object] = []
        bus.connect("render_done", lambda sender, **_: senders.append(sender))
        bus.emit("render_done", tokens=1)
        assert senders == [owner]

    def test_buses_do_not_hear_each_other(self) -> None:
        """A signal sent on one bus does not reach a receiver on another."""
        first, second = EventBus(), EventBus()
        heard: list[str] = []
        first.connect("node_added", lambda sender, **_: heard.append("first"))
        second.emit("node_added", node_id="n")
        assert heard == []

    def test_return_values_are_ignored(self, bus: EventBus) -> None:
        """What a receiver returns changes nothing: the next receiver still runs."""
        heard: list[str] = []
        bus.connect("usage_reported", lambda sender, **_: "ignored")
        bus.connect("usage_reported", lambda sender, **_: heard.append("next"))
        bus.emit("usage_reported", usage={"input_tokens": 3})
        assert heard == ["next"]

    def test_raising_receiver_is_logged_and_others_still_run(
        self, bus: EventBus, caplog: pytest.LogCaptureFixture
    ) -> None:
        """A receiver's exception is logged on `context_graph` and does not stop the rest."""
        heard: list[str] = []

        def broken(sender: object, **_: object) -> None:
            raise RuntimeError("observer bug")

        bus.connect("trigger_fired", broken)
        bus.connect("trigger_fired", lambda sender, **_: heard.append("ok"))
        with caplog.at_level(logging.ERROR, logger="context_graph"):
            bus.emit("trigger_fired", firing="f")
        assert heard == ["ok"]
        assert [(r.name, r.exc_info is not None) for r in caplog.records] == [
            ("context_graph", True)
        ]
        assert "trigger_fired" in caplog.records[0].getMessage()

    @pytest.mark.parametrize("error", [KeyboardInterrupt, asyncio.CancelledError])
    def test_cancellation_propagates(self, bus: EventBus, error: type[BaseException]) -> None:
        """A BaseException that is not an Exception is never swallowed."""

        def cancel(sender: object, **_: object) -> None:
            raise error

        bus.connect("budget_crossed", cancel)
        with pytest.raises(error):
            bus.emit("budget_crossed", ratio=0.8)

    def test_unknown_signal_names_raise(self, bus: EventBus) -> None:
        """Emit, connect, disconnect and signal refuse an unknown name."""
        with pytest.raises(ConfigurationError, match="unknown signal `nope`"):
            bus.emit("nope")
        with pytest.raises(ConfigurationError):
            bus.connect("nope", lambda sender: None)
        with pytest.raises(ConfigurationError):
            bus.disconnect("nope", lambda sender: None)
        with pytest.raises(ConfigurationError):
            bus.signal("nope")

    def test_async_receiver_is_refused(self, bus: EventBus) -> None:
        """An async receiver is a ConfigurationError at connect time."""

        async def receiver(sender: object, **_: object) -> None:
            return None

        with pytest.raises(ConfigurationError, match="is async"):
            bus.connect("render_done", receiver)

    def test_disconnect_stops_delivery(self, bus: EventBus) -> None:
        """A disconnected receiver is not called again."""
        heard: list[int] = []

        def receiver(sender: object, **_: object) -> None:
            heard.append(1)

        bus.connect("proposal_made", receiver)
        bus.emit("proposal_made", proposal="p")
        bus.disconnect("proposal_made", receiver)
        bus.emit("proposal_made", proposal="p")
        assert heard == [1]

    def test_connected_lambda_is_kept_alive(self, bus: EventBus) -> None:
        """Receivers are held strongly by default, so a lambda keeps receiving."""
        heard: list[int] = []
        bus.connect("proposal_applied", lambda sender, **_: heard.append(1))
        bus.emit("proposal_applied", proposal="p", entry="e")
        assert heard == [1]

    def test_muted_signal_sends_nothing(self, bus: EventBus) -> None:
        """A signal muted through blinker calls no receivers."""
        heard: list[int] = []
        bus.connect("render_done", lambda sender, **_: heard.append(1))
        with bus.signal("render_done").muted():
            bus.emit("render_done", tokens=1)
        assert heard == []


class TestRecorder:
    def test_records_every_signal_in_order(self, bus: EventBus) -> None:
        """Inside the block every signal is recorded with its payload, in order."""
        with Recorder(bus) as recorder:
            bus.emit("trigger_fired", firing="f")
            bus.emit("render_done", tokens=12)
        assert recorder.events == [
            RecordedEvent("trigger_fired", {"firing": "f"}),
            RecordedEvent("render_done", {"tokens": 12}),
        ]
        assert recorder.names() == ["trigger_fired", "render_done"]
        assert recorder.of("render_done") == [{"tokens": 12}]

    def test_stops_recording_after_the_block(self, bus: EventBus) -> None:
        """After the block the recorder is disconnected."""
        with Recorder(bus) as recorder:
            pass
        bus.emit("node_added", node_id="n")
        assert recorder.events == []
        assert not bus.signal("node_added").receivers

    def test_records_only_the_named_signals(self, bus: EventBus) -> None:
        """A recorder given names ignores other signals."""
        with Recorder(bus, names=["proposal_rejected"]) as recorder:
            bus.emit("proposal_made", proposal="p")
            bus.emit("proposal_rejected", proposal="p", reason="split a unit")
        assert recorder.names() == ["proposal_rejected"]

    def test_unknown_name_raises(self, bus: EventBus) -> None:
        """A recorder for an unknown signal is a ConfigurationError."""
        with pytest.raises(ConfigurationError):
            Recorder(bus, names=["nope"])

    def test_payload_is_read_only(self, bus: EventBus) -> None:
        """A recorded payload cannot be changed."""
        with Recorder(bus) as recorder:
            bus.emit("usage_reported", usage={"input_tokens": 5})
        with pytest.raises(TypeError):
            recorder.events[0].payload["usage"] = {}  # type: ignore[index]
