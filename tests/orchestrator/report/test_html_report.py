"""The replay's HTML report: what it records, that it is self-contained, and that it works in
a real browser (headless Chromium, driven over the DevTools protocol)."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any

from context_graph import AssistantTurn, SystemPrompt, ToolCall, ToolResult, UserTurn
from context_graph.examples import EXAMPLE_SESSION
from context_graph.graph.events import AgentEvent
from context_graph.importers import load_sessions
from orchestrator import ContextManager
from orchestrator.cli import main as cli_main
from orchestrator.policy import get_policy
from orchestrator.replay import replay
from orchestrator.report import Recording, ReplayRecorder, call_dollars, price_for
from orchestrator.report.page import render_html
from orchestrator.report.recorder import MAX_TEXT
from tests.orchestrator.report.chromium import needs_browser, open_page

HOSTILE = '</script><script>window.__owned = 1</script><img src=x onerror="window.__owned=2">'


def _events(noise: str = "") -> list[AgentEvent]:
    """A tool loop with large outputs, so that a small budget has to compact."""
    events: list[AgentEvent] = [
        SystemPrompt(content="You fix bugs."),
        UserTurn(content="Fix the parser; keep the API. " + noise),
    ]
    for i in range(8):
        events.append(
            AssistantTurn(
                content=f"Step {i}.",
                tool_calls=[ToolCall(id=f"c{i}", name="bash", arguments='{"cmd": "pytest"}')],
            )
        )
        body = "\n".join(f"line {i}-{k}: value_{i}_{k} {noise}" for k in range(120))
        events.append(ToolResult(call_id=f"c{i}", content=body))
    events.append(AssistantTurn(content="Done."))
    return events


def _record(events: list[AgentEvent], budget: int = 2_500) -> tuple[Recording, Any]:
    manager = ContextManager(format="openai", budget=budget, policy=get_policy("coding"))
    recorder = ReplayRecorder(manager, "openai")
    report = replay(events, budget=budget, manager=manager, on_call=recorder)
    return recorder.recording, report


class TestRecorder:
    """What the recorder keeps of a replay."""

    def test_every_call_is_kept_with_the_replay_figures(self) -> None:
        """One entry per call, with the report's raw and sent tokens and its compactions."""
        recording, report = _record(_events())
        assert len(recording.calls) == len(report.calls)
        for kept, call in zip(recording.calls, report.calls, strict=True):
            assert (kept["raw"], kept["sent"]) == (call.raw_tokens, call.rendered_tokens)
            assert kept["processors"] == call.processors
        totals = recording.totals()
        assert totals["sent"] == report.total_rendered_tokens
        assert totals["compactions"] == sum(len(c.processors) for c in report.calls) > 0

    def test_compacted_pieces_carry_their_originals(self) -> None:
        """Each piece a compaction added is found in a sent message, with the original text."""
        recording, _ = _record(_events())
        assert recording.pieces
        shown = {p for m in recording.messages for p in m["pieces"]}
        assert shown, "no compacted piece was found inside any sent message"
        for piece_id in shown:
            piece = recording.pieces[piece_id]
            assert piece["original"] != piece["text"]
            assert re.search(r"line \d-\d+: value_\d_\d+", piece["original"])

    def test_messages_are_stored_once(self) -> None:
        """A message repeated by many calls is one entry; calls name it by number."""
        recording, _ = _record(_events(), budget=50_000)
        numbers = [n for call in recording.calls for n in call["messages"]]
        assert len(numbers) > len(recording.messages)
        assert len({m["text"] + m["role"] for m in recording.messages}) == len(recording.messages)

    def test_cache_and_cost_follow_the_shared_prefix(self) -> None:
        """Without compaction each request extends the last: the cache serves the prefix."""
        recording, _ = _record(_events(), budget=50_000)
        price = price_for("openai")
        later = recording.calls[1:]
        assert any(c["cached"] > 0 for c in later)
        for call in recording.calls:
            assert 0 <= call["cached"] <= call["sent"]
            assert call["dollars"] <= call_dollars(call["sent"], 0, price)[0] + 1e-12

    def test_long_texts_are_cut_and_say_so(self) -> None:
        """A text over the limit is cut, with how much was left out."""
        events: list[AgentEvent] = [UserTurn(content="x" * (MAX_TEXT + 500))]
        recording, _ = _record(events, budget=50_000)
        text = recording.messages[0]["text"]
        assert text.endswith("[... 500 more characters not shown ...]")


class TestPage:
    """The page's text: self-contained, and safe with any session text."""

    def test_nothing_is_fetched(self) -> None:
        """No external script, style, image or font: the file works offline."""
        recording, _ = _record(_events())
        page = render_html(recording, "t")
        assert not re.search(r"<(?:link|img|iframe)\b|\bsrc=|@import|url\(", page)
        assert re.findall(r"https?://[^\s\"']+", page) == ["http://www.w3.org/2000/svg"]

    def test_session_text_cannot_close_the_data_block(self) -> None:
        """`</script>` inside a session is escaped; the data still reads back."""
        recording, _ = _record(_events(HOSTILE))
        page = render_html(recording, HOSTILE)
        start = page.index('id="replay-data">') + len('id="replay-data">')
        end = page.index("</script>", start)
        data = json.loads(page[start:end])
        assert any(HOSTILE in m["text"] for m in data["messages"])
        assert "<img" not in page.split("<script", 1)[0]

    def test_cli_writes_the_page(self, tmp_path: Path) -> None:
        """`replay --html` writes the page for the bundled example."""
        out = tmp_path / "report.html"
        code = cli_main(["replay", "--budget", "6000", "--html", str(out)])
        assert code in (0, 3)
        assert "replay-data" in out.read_text(encoding="utf-8")

    def test_cli_refuses_a_missing_folder(self, tmp_path: Path) -> None:
        """An --html path in a folder that does not exist is a usage error, written nowhere."""
        out = tmp_path / "absent" / "report.html"
        code = cli_main(["replay", "--budget", "6000", "--html", str(out)])
        assert code == 2 and not out.exists()


@needs_browser
class TestInChromium:
    """The page in a real browser: it loads clean, a click expands a piece, a screenshot."""

    def test_loads_without_errors_and_a_click_expands_a_piece(
        self, browser: str, tmp_path: Path
    ) -> None:
        """No console error; clicking a compacted piece shows its original text."""
        events = load_sessions(EXAMPLE_SESSION)[0].events
        manager = ContextManager(format="openai", budget=6_000, policy=get_policy("coding"))
        recorder = ReplayRecorder(manager, "openai")
        replay(events, budget=6_000, manager=manager, on_call=recorder)
        out = tmp_path / "report.html"
        out.write_text(render_html(recorder.recording, "example"), encoding="utf-8")
        for page in open_page(browser, out.as_uri()):
            assert page.evaluate("document.querySelectorAll('tr.call').length") == len(
                recorder.recording.calls
            )
            assert page.evaluate("document.querySelector('#chart svg polyline') !== null")
            hidden = "getComputedStyle(document.querySelector('.piece .original')).display"
            assert page.evaluate(hidden) == "none"
            page.evaluate("document.querySelector('.piece button').click()")
            assert page.evaluate(hidden) == "block"
            original = page.evaluate("document.querySelector('.piece .original pre').textContent")
            piece_id = page.evaluate("document.querySelector('.piece').dataset.piece")
            assert original == recorder.recording.pieces[piece_id]["original"]
            page.evaluate("document.querySelectorAll('tr.call')[2].click()")
            assert "call #2" in page.evaluate("document.querySelector('#request h2').textContent")
            shot = page.send("Page.captureScreenshot", format="png")["data"]
            png = base64.b64decode(shot)
            (tmp_path / "report.png").write_bytes(png)
            assert png.startswith(b"\x89PNG") and len(png) > 10_000
            assert page.problems() == []

    def test_the_scale_toggle_switches_the_axis(self, browser: str, tmp_path: Path) -> None:
        """A click turns the axis logarithmic (powers of ten), another back; no console error."""
        recording, _ = _record(_events(), budget=1_500)
        out = tmp_path / "scale.html"
        out.write_text(render_html(recording, "scale"), encoding="utf-8")
        ticks = "[...document.querySelectorAll('#chart svg text.tick')].map((t) => t.textContent)"
        budget_y = "document.querySelectorAll('#chart svg polyline')[2].getAttribute('points')"
        for page in open_page(browser, out.as_uri()):
            assert page.evaluate("document.querySelector('#chart svg').dataset.scale") == "linear"
            linear_ticks, linear_budget = page.evaluate(ticks), page.evaluate(budget_y)
            top = max(recording.budget or 0, *(call["raw"] for call in recording.calls))
            assert linear_ticks == ["0", f"{(top + 1) // 2:,}", f"{top:,}"]  # JS rounds .5 up
            page.evaluate("document.getElementById('scale-toggle').click()")
            assert page.evaluate("document.querySelector('#chart svg').dataset.scale") == "log"
            assert page.evaluate(ticks) == [f"{10**k:,}" for k in range(len(str(top)))]
            assert page.evaluate(budget_y) != linear_budget
            assert page.evaluate("document.getElementById('scale-toggle').textContent") == (
                "linear scale"
            )
            assert page.evaluate("document.querySelectorAll('#chart svg').length") == 1
            page.evaluate("document.getElementById('scale-toggle').click()")
            assert page.evaluate(ticks) == linear_ticks
            assert page.evaluate(budget_y) == linear_budget
            assert page.problems() == []

    def test_hostile_session_text_runs_nothing(self, browser: str, tmp_path: Path) -> None:
        """Markup inside the session is shown as text; no script of it runs."""
        recording, _ = _record(_events(HOSTILE))
        out = tmp_path / "hostile.html"
        out.write_text(render_html(recording, HOSTILE), encoding="utf-8")
        for page in open_page(browser, out.as_uri()):
            assert page.evaluate("window.__owned === undefined")
            assert page.evaluate("document.querySelectorAll('img').length") == 0
            assert page.evaluate(f"document.body.textContent.includes({json.dumps(HOSTILE)})")
            assert page.problems() == []
