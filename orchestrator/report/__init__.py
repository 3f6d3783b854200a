"""The replay report a person can look at: one self-contained HTML file.

`ReplayRecorder` watches a replay (`orchestrator.replay.replay(..., on_call=recorder)`)
and keeps, call by call, the request sent (its messages stored once however many calls
repeat them), what each compaction did and the original of every compacted piece;
`write_html` turns the recording into a page that works offline: the sawtooth of raw
against sent tokens, where each compaction happened, the prompt cache's hits and the
input cost, which trigger set each compaction off, and every request with its compacted
pieces expandable to their originals. `OutputScreen` redacts what leaves the engine for a
person (this page, the CLI's JSON and text) as a request is redacted, when redaction is on.

    context-graph replay --budget 8000 --html report.html
"""

from __future__ import annotations

from orchestrator.pricing import PRICES, CachePrice, call_dollars, price_for
from orchestrator.report.page import write_html
from orchestrator.report.recorder import Recording, ReplayRecorder
from orchestrator.report.screen import OutputScreen

__all__ = [
    "PRICES",
    "CachePrice",
    "OutputScreen",
    "Recording",
    "ReplayRecorder",
    "call_dollars",
    "price_for",
    "write_html",
]
