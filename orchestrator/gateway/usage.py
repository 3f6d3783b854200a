"""What an upstream answer says of its usage, reported to the thread it answered.

The gateway streams each answer back as it comes and keeps only its ends (`Answer`); once
the answer is through, `report_answer` reads the usage there: a stream's from its events,
a whole JSON answer's from its `usage`, a token count's from its count. The usage
calibrates the engine's count and adds to the session's usage.
"""

from __future__ import annotations

import json
import logging
from typing import Any, NamedTuple

from context_graph.errors import IngestError
from orchestrator.gateway.threads import Thread
from orchestrator.gateway.wires import Wire

__all__ = ["USAGE_SCAN", "Answer", "report_answer"]

LOG = logging.getLogger("context_graph.gateway")

USAGE_SCAN = 65_536
"""How many leading and trailing bytes of a stream are searched for its usage (one API
says it in its first event, another in its last)."""


class Answer(NamedTuple):
    """What the gateway kept of an upstream answer: its status, its type and its ends."""

    status: int
    content_type: str
    head: bytes
    """Its first `USAGE_SCAN` bytes (a JSON answer: all of it)."""
    tail: bytes
    """Its last `USAGE_SCAN` bytes."""


def report_answer(thread: Thread, wire: Wire, answer: Answer, *, counting: bool) -> None:
    """Report the answer's usage to the thread's manager, if it says it.

    The answer has gone to the agent already: a usage that does not read is logged and
    left out, never an error. `counting`: the answer is a token count, not a call's.
    """
    status, content_type, head, tail = answer
    if status != 200:
        return
    try:
        if content_type == "text/event-stream":
            # An API says its usage in the first and last events, or in its last; a
            # stream shorter than the scan is in both pieces, read once each.
            usage = wire.http.sse_usage(head + b"\n" + tail)
        else:
            whole = _json_object(head)
            if whole is None:
                return
            if counting and wire.http.count is not None:
                _report_count(thread, wire.http.count.tokens(whole))
                return
            usage = wire.http.answer_usage(whole)
    except IngestError as error:
        LOG.warning("context-graph gateway: the upstream's usage was left out: %s", error)
        return
    if usage is not None:
        thread.manager.report_usage(usage)


def _json_object(data: bytes) -> dict[str, Any] | None:
    """`data` read as a JSON object (`None`: it is not one)."""
    try:
        value = json.loads(data)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _report_count(thread: Thread, tokens: object) -> None:
    """Calibrate by a token-count answer's count (no call was made: no usage)."""
    if isinstance(tokens, int) and not isinstance(tokens, bool) and tokens > 0:
        thread.manager.report_usage(tokens)
