"""The LangChain sync middleware when one LangGraph thread is invoked twice at once.

Two Python threads run `agent.invoke` on the same `thread_id` (a server handling two
requests of one conversation): both model calls go through the thread's one manager,
whose render must compact. Each thread is joined with a time limit (a hang guard).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import pytest
from langchain_core.messages import HumanMessage

from context_graph.render import count_payload
from context_graph.tokens.counting import default_counter
from context_graph.validate import validate
from orchestrator.integrations.langchain import ContextMiddleware
from orchestrator.integrations.langchain_messages import ID_KEY
from tests.orchestrator.integrations.test_langchain import (
    BUDGET,
    ScriptedChatModel,
    _agent,
    _ask,
    _config,
    _log,
)

HANG = 120.0


def run_threads(*targets: Callable[[], Any]) -> list[Any]:
    """Run each target on its own thread at once; their results, or the first error."""
    results: list[Any] = [None] * len(targets)
    errors: list[BaseException] = []
    start = threading.Barrier(len(targets))

    def runner(index: int) -> None:
        try:
            start.wait()
            results[index] = targets[index]()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=runner, args=(i,), daemon=True) for i in range(len(targets))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(HANG)
    if any(thread.is_alive() for thread in threads):
        pytest.fail("hung: a thread is still running")
    if errors:
        raise errors[0]
    return results


def invoke_sync(agent: Any, question: HumanMessage) -> dict[str, Any]:
    result: dict[str, Any] = agent.invoke({"messages": [question]}, _config())
    return result


def invoke_async(agent: Any, question: HumanMessage) -> dict[str, Any]:
    result: dict[str, Any] = asyncio.run(agent.ainvoke({"messages": [question]}, _config()))
    return result


@pytest.mark.parametrize("invoke", [invoke_sync, invoke_async], ids=["invoke", "ainvoke"])
def test_one_thread_invoked_twice_at_once(invoke: Callable[[Any, HumanMessage], Any]) -> None:
    """Both calls are answered, every request fits, and the record holds each message once.

    The question carries a log, so the render of each call must compact; before the
    manager serialized its callers, the second waited forever on the first's run.
    """
    model = ScriptedChatModel(turns=3)
    middleware = ContextMiddleware(budget=BUDGET)
    agent = _agent(model, [middleware])
    agent.invoke(_ask(), _config())
    question = HumanMessage(content="And this log?\n" + _log(99), id="q-2")
    outs = run_threads(*[lambda: invoke(agent, question)] * 2)
    assert [out["messages"][-2].id for out in outs] == ["q-2", "q-2"]
    assert len(model.requests) == 6
    for payload in model.requests:
        assert validate(payload, "openai") == []
        assert count_payload(payload, "openai", default_counter()) <= BUDGET
    keys = [node.meta.get(ID_KEY) for node in middleware.manager("t1").raw]
    ids = [key for key in keys if key is not None]
    assert len(ids) == len(set(ids))
    assert "q-2" in ids
