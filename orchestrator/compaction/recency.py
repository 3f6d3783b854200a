"""The outputs a goal-sized pass takes last: the newest error, and what resolved it.

An agent that is fixing an error reads the error's output again, and the output that
showed the fix worked, more than any other: while they are among the newest tool
outputs, a stage that only has to free part of the request takes every other output
first (`first_by_priority`). Only a stage that still has to take everything (the second
pass of a run still over its target) takes them too.
"""

from __future__ import annotations

from context_graph.graph.nodes import AnswerNode
from orchestrator.working import WorkingView
from processors.summarize.facts import outcome_of

__all__ = ["RECENT_ANSWERS", "live_outputs"]

RECENT_ANSWERS = 10
"""How many of the newest tool outputs an error stays live among (an agent that ran ten
more tools since has moved on)."""


def live_outputs(view: WorkingView, recent: int = RECENT_ANSWERS) -> frozenset[str]:
    """The live error among the newest `recent` outputs, and its resolution.

    The newest failed output, and the first later output of the same tool that did not
    fail (what showed the fix worked), if any: their ids.
    """
    answers = [node for node in view.answers()[-recent:] if isinstance(node, AnswerNode)]
    for index in range(len(answers) - 1, -1, -1):
        error = answers[index]
        if outcome_of(error, view.call_of(error.id)).failed:
            break
    else:
        return frozenset()
    tool = _tool_name(view, error)
    for later in answers[index + 1 :]:
        if _tool_name(view, later) == tool and not outcome_of(later, view.call_of(later.id)).failed:
            return frozenset({error.id, later.id})
    return frozenset({error.id})


def _tool_name(view: WorkingView, answer: AnswerNode) -> str:
    call = view.call_of(answer.id)
    return call.name if call is not None else answer.kind
