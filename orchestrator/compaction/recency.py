"""The outputs a compaction spares: the newest error, and what resolved it.

An agent that is fixing an error reads the error's output again, and the output that
showed the fix worked, more than any other. While they are among the newest tool
outputs, the output stages of a run that compacts to its target (and the pass over
unsent outputs) leave them as they are (`StageSettings.spared`); a summary may still take
them into the brief, which quotes the error's line and the line that showed the fix, and
a stage that caps each output (the truncator) still cuts them down to its cap
(`pipeline.takes_spared`). Only a run still over its target after every stage goes
through them too.

Measured with `python -m benchmarks.probes_quick --budgets 8k` (coding policy, all
shared sessions): at a7fa249 (spared by the output stages) the last error's line is in
0.998 of the requests that should hold it, retention 0.989; at 7659189 (held from every
stage, the summary too) 0.996 and 0.959; at d28b8cf (neither) 0.965 and 0.978.
"""

from __future__ import annotations

from context_graph.graph.context_graph import ContextGraph
from context_graph.graph.nodes import AnswerNode
from orchestrator.working import WorkingView
from processors.summarize.facts import outcome_of, still_running

__all__ = ["RECENT_ANSWERS", "live_outputs"]

RECENT_ANSWERS = 10
"""How many of the newest tool outputs an error stays live among (an agent that ran ten
more tools since has moved on)."""


def live_outputs(view: WorkingView, recent: int = RECENT_ANSWERS) -> frozenset[str]:
    """The live error among the newest `recent` outputs, and its resolution.

    The newest failed output, and the first later output of the same tool that did not
    fail (what showed the fix worked), if any: the ids of the current nodes that stand
    for them. A chunk of a command still running (a Codex exec session's "Process
    running") tells no outcome yet, so it resolves nothing. Read off the record, not the
    view: a resolution is still live after a summary took its error in (the brief
    quotes the error; the output that showed the fix is still the newest word on it).
    """
    record = view.pristine
    answers: list[AnswerNode] = []
    for node_id in reversed(view.transcript()):
        node = record[node_id]
        if isinstance(node, AnswerNode):
            answers.append(node)
            if len(answers) == recent:
                break
    answers.reverse()
    for index in range(len(answers) - 1, -1, -1):
        error = answers[index]
        if _failed(record, error):
            break
    else:
        return frozenset()
    live = [error]
    tool = _tool_name(record, error)
    for later in answers[index + 1 :]:
        if (
            _tool_name(record, later) == tool
            and not still_running(later)
            and not outcome_of(later, record.call_of(later.id)).failed
        ):
            live.append(later)
            break
    return frozenset(now.id for node in live if (now := view.standing_for(node.id)) is not None)


def _failed(record: ContextGraph, answer: AnswerNode) -> bool:
    return outcome_of(answer, record.call_of(answer.id)).failed


def _tool_name(record: ContextGraph, answer: AnswerNode) -> str:
    call = record.call_of(answer.id)
    return call.name if call is not None else answer.kind
