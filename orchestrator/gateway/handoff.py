"""A handoff: a proxied session written out for a fresh agent session to pick up.

When the proxy is stopped, the agent's own history is as long as it ever was: the
user starts a fresh agent session instead and pastes the handoff into it. The handoff
is built from the thread's record by the engine's own summarizer
(`processors.summarize.ExtractiveSummarizer`, the brief every compaction writes): the
brief of the whole transcript, and, pulled out of it so that they come first, the
user's latest request verbatim, the files touched, the last error still open and where
the agent stopped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from context_graph.graph.context_graph import ContextGraph
from context_graph.graph.nodes import AssistantNode, Node, UserNode
from processors.summarize import brief as brief_format
from processors.summarize.brief import Brief
from processors.summarize.extractive import ExtractiveSummarizer
from processors.summarize.facts import ErrorFact

__all__ = ["HandoffSource", "write_handoff"]

_BRIEF_TOKENS = 3_000
"""The bound of the brief inside the handoff: room for the facts, short enough to paste."""


@dataclass(frozen=True, slots=True)
class HandoffSource:
    """Which conversation a handoff is of.

    Attributes:
        session: The agent's session id.
        wire: The wire format it came in.
        thread: The thread's number in the session.
    """

    session: str
    wire: str
    thread: int


def write_handoff(record: ContextGraph, source: HandoffSource) -> str:
    """The Markdown handoff of the conversation in `record` (its pristine transcript)."""
    nodes = [record[node_id] for node_id in record.transcript()]
    text = ExtractiveSummarizer(max_tokens=_BRIEF_TOKENS).brief(nodes)
    brief = brief_format.parse(text) or Brief()
    parts = [
        f"# Handoff of session {source.session} (thread {source.thread}, {source.wire})",
        "This session was run through the context-graph proxy. Continue the work it "
        "describes; the user's latest request comes first, verbatim.",
        _section("Latest request (verbatim)", _latest_request(nodes) or "(none recorded)"),
        _section("Files touched", _files(brief)),
        _section("Last error", _last_error(brief.errors)),
        _section("Next step", _next_step(nodes, brief)),
        _section("Summary of the session", _body(text)),
    ]
    return "\n\n".join(parts) + "\n"


def _section(title: str, body: str) -> str:
    return f"## {title}\n\n{body.strip()}"


def _latest_request(nodes: Sequence[Node]) -> str:
    """The text of the user's last message (a harness notice is not the user's)."""
    for node in reversed(nodes):
        if isinstance(node, UserNode) and not node.notice and node.text.strip():
            return node.text
    return ""


def _files(brief: Brief) -> str:
    lines = [f"- modified: `{path}`" for path in brief.files_modified]
    lines += [f"- read: `{path}`" for path in brief.files_read]
    return "\n".join(lines) or "(none recorded)"


def _last_error(errors: Sequence[ErrorFact]) -> str:
    """The last error still open, as the brief says it (`none open` when all resolved)."""
    open_errors = [error for error in errors if not error.resolved]
    if not open_errors:
        return "(none open)"
    error = open_errors[-1]
    said = "; ".join(part for part in (error.said, error.line) if part) or "failed"
    return f"`{error.key}`: {said}"


def _next_step(nodes: Sequence[Node], brief: Brief) -> str:
    """What the fresh session does first: answer an unanswered request, else go on."""
    spoken = [n for n in nodes if isinstance(n, (UserNode, AssistantNode))]
    if spoken and isinstance(spoken[-1], UserNode):
        return "Answer the latest request above: the session stopped before the agent did."
    stopped = brief.state or "(the agent's last message had no text)"
    return f"Go on from where the agent stopped; its last message:\n\n{stopped}"


def _body(text: str) -> str:
    """The brief without its own title (the handoff has one), its sections one level down."""
    body = text.strip().removeprefix(brief_format.TITLE).strip()
    return "\n".join("#" + line if line.startswith("## ") else line for line in body.split("\n"))
