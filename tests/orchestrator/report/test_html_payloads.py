"""No session text changes how the report parses, and the tables fit a 1,400 px window.

Each payload below (markup, script-data escapes such as `<!--<script>`, CDATA ends, line
separators, attribute and URL tricks) is planted in a session's user turn, tool call, tool
output and in the report's title. In headless Chromium the page must then render every
section (the session's call and compaction rows, the request with its messages), show
the payload as text, and run none of it: no `window.__owned`, no dialog, no element
the payload would have made, no console error.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from context_graph import AssistantTurn, SystemPrompt, ToolCall, ToolResult, UserTurn
from context_graph.graph.events import AgentEvent
from orchestrator import ContextManager
from orchestrator.compaction.triggers import TRIGGER_NAMES
from orchestrator.policy import Policy, get_policy
from orchestrator.replay import replay
from orchestrator.report import Recording, ReplayRecorder
from orchestrator.report.page import embed_json, render_html
from tests.orchestrator.report.chromium import needs_browser, open_page

_OWN = "window.__owned=1"

PAYLOADS = [
    "<!--<script>",
    "<!--",
    "-->",
    "<script>",
    "</script >",
    "</script>",
    "</script\t>",
    "</script/x>",
    "</SCRIPT>",
    "]]>",
    "<![CDATA[",
    "\u2028",
    "\u2029",
    "a\u2028b\u2029c",
    "<!--<script>--></script>",
    "<script><!--",
    "<!--</script><script>" + _OWN + "</script>-->",
    "<!-- <script> --><script>" + _OWN + "</script>",
    "<!--<script>" + _OWN + "</script>-->",
    "<script>" + _OWN + "</script>",
    "</script><script>" + _OWN + "</script>",
    "</script ><script>" + _OWN + "</script>",
    "</script\n><script>" + _OWN + "</script>",
    "<ScRiPt>" + _OWN + "</sCrIpT>",
    "<scr<script>ipt>" + _OWN + "</scr</script>ipt>",
    "<script src=data:," + _OWN + "></script>",
    "<img src=x onerror=" + _OWN + ">",
    '<img src=x onerror="' + _OWN + '">',
    "<svg onload=" + _OWN + ">",
    "<svg><script>" + _OWN + "</script></svg>",
    '<iframe srcdoc="<script>parent.__owned=1</script>">',
    "<body onload=" + _OWN + ">",
    "<details open ontoggle=" + _OWN + ">",
    "<input autofocus onfocus=" + _OWN + ">",
    "<video><source onerror=" + _OWN + ">",
    '<object data="javascript:' + _OWN + '">',
    '<embed src="javascript:' + _OWN + '">',
    '<a href="javascript:' + _OWN + '">x</a>',
    "javascript:" + _OWN,
    '<base href="javascript:/">',
    '<meta http-equiv="refresh" content="0;url=javascript:' + _OWN + '">',
    "<template><script>" + _OWN + "</script></template>",
    '<noscript><p title="</noscript><img src=x onerror=' + _OWN + '>">',
    "<xmp></xmp><script>" + _OWN + "</script>",
    "<math><mtext><table><mglyph><style><img src=x onerror=" + _OWN + ">",
    "<style>body{display:none}</style>",
    "</style><script>" + _OWN + "</script>",
    "</title><script>" + _OWN + "</script>",
    "</textarea><script>" + _OWN + "</script>",
    "<plaintext>",
    "<!DOCTYPE html>",
    '<?xml version="1.0"?>',
    '"><script>' + _OWN + "</script>",
    "'><script>" + _OWN + "</script>",
    "&lt;script&gt;" + _OWN + "&lt;/script&gt;",
    "&#60;script&#62;" + _OWN,
    "&amp;&lt;&gt;&quot;",
    "\\u003cscript\\u003e" + _OWN + "\\u003c/script\\u003e",
    '\\"</script>',
    '"; ' + _OWN + "; //",
    "');" + _OWN + ";//",
    "${" + _OWN + "}",
    "{{constructor.constructor('" + _OWN + "')()}}",
    "</pre><script>" + _OWN + "</script>",
    "</div></section><script>" + _OWN + "</script>",
    "<table><tr><td><script>" + _OWN + "</script>",
    "\x00<script>" + _OWN + "</script>",
    "\ufeff<script>",
    "\u202e<script>",
    "\U0001d54f<!--<script>",
]


def _events(payload: str) -> list[AgentEvent]:
    """A small tool loop with the payload everywhere a session holds text."""
    arguments = json.dumps({"cmd": f"grep -n '{payload}' src/"})
    events: list[AgentEvent] = [
        SystemPrompt(content="You fix bugs."),
        UserTurn(content=f"Fix the page that shows {payload} as text."),
    ]
    for i in range(5):
        events.append(
            AssistantTurn(
                content=f"Step {i}: {payload}",
                tool_calls=[ToolCall(id=f"c{i}", name="bash", arguments=arguments)],
            )
        )
        body = "\n".join(f"src/page_{i}.html:{k}: {payload} filler {k}" for k in range(90))
        events.append(ToolResult(call_id=f"c{i}", content=body))
    events.append(AssistantTurn(content=f"Done: {payload}"))
    return events


def _record(events: list[AgentEvent], budget: int = 1_800) -> Recording:
    manager = ContextManager(format="openai", budget=budget, policy=get_policy("coding"))
    recorder = ReplayRecorder(manager, "openai")
    replay(events, budget=budget, manager=manager, on_call=recorder)
    return recorder.recording


def _rendered_sections(page_url: str, browser: str, recording: Recording, payload: str) -> None:
    """Open the page; assert every section rendered, the payload as text, nothing run."""
    for page in open_page(browser, page_url):
        counts = page.evaluate(
            "[document.querySelectorAll('tr.call').length,"
            " document.querySelectorAll('tr.compaction').length,"
            " document.querySelectorAll('#request .message').length,"
            " document.querySelectorAll('#chart svg polyline').length,"
            " document.getElementById('totals').children.length]"
        )
        assert counts[0] == len(recording.calls) > 0
        assert counts[1] == len(recording.compactions) > 0
        assert counts[2] > 0 and counts[3] >= 2 and counts[4] > 0
        assert page.evaluate("window.__owned === undefined")
        made = "img, iframe, object, embed, video, details, input, base, meta[http-equiv], a[href]"
        assert page.evaluate(f"document.querySelectorAll({json.dumps(made)}).length") == 0
        assert page.evaluate("document.querySelectorAll('script').length") == 2
        shown = payload.replace("\x00", "\ufffd") if "\x00" in payload else payload
        text = page.evaluate("document.body.textContent + document.title")
        assert payload in text or shown in text
        assert page.problems() == []


class TestEmbedding:
    """The data block's text, whatever the session holds."""

    @pytest.mark.parametrize("payload", PAYLOADS)
    def test_the_data_block_holds_no_markup(self, payload: str) -> None:
        """No `<`, `>` or `&` or line separator is left raw; the JSON reads back the same."""
        value = {"text": payload, payload: [payload]}
        embedded = embed_json(value)
        assert not set(embedded) & {"<", ">", "&", "\u2028", "\u2029"}
        assert json.loads(embedded) == value


@needs_browser
class TestInChromium:
    """Every payload in a real browser: the whole page renders, no payload runs."""

    @pytest.mark.parametrize("payload", PAYLOADS)
    def test_the_page_renders_and_runs_nothing(
        self, browser: str, tmp_path: Path, payload: str
    ) -> None:
        """Calls, compactions and the request are all rendered; the payload is only text."""
        recording = _record(_events(payload))
        out = tmp_path / "payload.html"
        out.write_text(render_html(recording, f"trace {payload}"), encoding="utf-8")
        _rendered_sections(out.as_uri(), browser, recording, payload)


_LONG = "x" * 40 + "".join(f"/segment_{k}_without_any_space" for k in range(20))


@needs_browser
class TestLayout:
    """At 1,400 px the page has no horizontal scroll, long ids and notes wrap in their cells."""

    def test_tables_fit_1400_px(self, browser: str, tmp_path: Path) -> None:
        """Long unbroken text everywhere: `scrollWidth` stays within the window; a screenshot."""
        events = _events(_LONG)
        events.insert(2, UserTurn(content=_LONG * 3))
        recording = _record(events)
        out = tmp_path / "wide.html"
        out.write_text(render_html(recording, _LONG), encoding="utf-8")
        for page in open_page(browser, out.as_uri(), width=1400):
            assert page.evaluate("window.innerWidth") == 1400
            page.evaluate("document.querySelectorAll('.piece button').forEach((b) => b.click())")
            width = page.evaluate("document.documentElement.scrollWidth")
            assert width <= 1400, f"the page is {width} px wide at 1,400"
            shot = page.send("Page.captureScreenshot", format="png")["data"]
            png = base64.b64decode(shot)
            (tmp_path / "wide.png").write_bytes(png)
            assert png.startswith(b"\x89PNG")
            assert page.problems() == []


class TestTriggers:
    """Each compaction in the report says which trigger set it off."""

    def test_every_compaction_names_its_trigger(self) -> None:
        """A budget trigger by name (with its reason), or `over budget` when none fired."""
        recording = _record(_events("plain"), budget=1_800)
        triggers = [c["trigger"] for c in recording.compactions]
        assert triggers
        for compaction in recording.compactions:
            names = compaction["trigger"].split(", ")
            assert compaction["trigger"] == "over budget" or set(names) <= set(TRIGGER_NAMES)
            if compaction["trigger"] != "over budget":
                assert compaction["reason"]
        assert any(t != "over budget" for t in triggers), triggers

    def test_redaction_is_named_as_such(self) -> None:
        """With `redact_secrets`, the redaction edits say `redaction`, not a trigger."""
        manager = ContextManager(format="openai", budget=50_000, policy=Policy(redact_secrets=True))
        recorder = ReplayRecorder(manager, "openai")
        key = "sk-proj-" + "Qx7Lm2Np9Rt4Sv6Wy8Za1Bc3De5Fg7Hi9Jk0Lm2Np4Qr6St8Uv0Wx2Yz4Ab6Cd8Ef0Gh"
        events: list[AgentEvent] = [UserTurn(content=f"key: {key}"), AssistantTurn(content="ok")]
        replay(events, budget=50_000, manager=manager, on_call=recorder)
        assert [c["trigger"] for c in recorder.recording.compactions] == ["redaction"]

    def test_the_page_shows_the_trigger_column(self) -> None:
        """The compactions table has a `trigger` column, filled from the recording."""
        page = render_html(_record(_events("plain")), "t")
        assert '<th class="text">trigger</th>' in page
        assert "c.trigger" in page
