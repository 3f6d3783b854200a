"""Another tool's summary, read for what the brief carries on.

A session continued from another tool's compaction starts with that tool's summary; the
first compaction of ours absorbs it as the brief's earlier-summary block (clipped to
what the budget leaves). Claude Code's summaries written by its earlier versions (the
shared traces', February 2026) open with the model's scratchpad ("Analysis:" then
"Summary:", its `<analysis>` and `<summary>` tags made headings): a chronological walk
through the conversation that the summary after it restates by topic. Claude Code
itself (2.1.197) drops the scratchpad when it writes the summary; a clip that kept the
text's head would keep the scratchpad and cut the summary (the pending tasks, the
current work and the next step come last). The pristine record keeps the whole text.
"""

from __future__ import annotations

import re

__all__ = ["without_scratchpad"]

_ANALYSIS_LINE = re.compile(r"^Analysis:[ \t]*$", re.MULTILINE)
_SUMMARY_LINE = re.compile(r"^Summary:[ \t]*$", re.MULTILINE)


def without_scratchpad(text: str) -> str:
    """`text` without a summary's analysis scratchpad, when a summary follows it.

    The tagged form (`<analysis>...</analysis>` before a `<summary>`) and the headed
    form (an "Analysis:" line, later a "Summary:" line) are read; any other text comes
    back as is. Plain searches, no backtracking: the text is whatever the import held.
    """
    opened = text.find("<analysis>")
    if opened >= 0:
        closed = text.find("</analysis>", opened)
        if closed >= 0 and "<summary>" in text[closed:]:
            return (text[:opened] + text[closed + len("</analysis>") :].lstrip()).strip()
    analysis = _ANALYSIS_LINE.search(text)
    if analysis is not None:
        summary = _SUMMARY_LINE.search(text, analysis.end())
        if summary is not None:
            return (text[: analysis.start()] + text[summary.start() :]).strip()
    return text
