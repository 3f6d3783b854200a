"""`AgentToolRunner`: a manager's agent tool calls, read and run.

It reads each call (`read_call`), answers a model's mistake with a `Refusal`'s text,
and runs `context_expand` through the manager's `Expander` and `context_compact`
through its `compact`. A host that calls it on a manager without agent tools gets a
`ConfigurationError`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from context_graph.errors import ConfigurationError
from orchestrator.agent_tools.calls import AgentCall, Refusal, read_call
from orchestrator.agent_tools.expander import Expander
from orchestrator.agent_tools.specs import COMPACT_TOOL, EXPAND_TOOL
from orchestrator.compaction.pipeline import PipelineRun
from orchestrator.compaction.slot import RunSlot
from orchestrator.working import WorkingGraph

__all__ = ["AgentToolRunner"]


class AgentToolRunner:
    """Runs the agent tools a manager has.

    Args:
        names: The agent tools the manager adds to its requests (none: every call is a
            host's mistake).
        expander: Runs `context_expand`.
        compact: The manager's `compact(instructions)`, for `context_compact`.
        slot: The compaction run slot: an expand waits for a run in progress.
        working: The working graph, for the sizes `context_compact` reports.
    """

    def __init__(
        self,
        names: tuple[str, ...],
        expander: Expander,
        compact: Callable[[str | None], Awaitable[PipelineRun]],
        slot: RunSlot,
        working: WorkingGraph,
    ) -> None:
        self._names = names
        self._expander = expander
        self._compact = compact
        self._slot = slot
        self._working = working

    def read(self, name: object, arguments: object, where: str) -> AgentCall | Refusal:
        """The call, or the refusal the model reads.

        Raises:
            ConfigurationError: the manager has no agent tools, or `name` / `arguments`
                are of a type no SDK hands over.
        """
        if not self._names:
            msg = (
                f"{where}: this manager has no agent tools; make it with "
                "ContextManager(agent_tools=True) (or ('expand', 'compact'))"
            )
            raise ConfigurationError(msg)
        return read_call(name, arguments, self._names)

    async def run(self, call: AgentCall | Refusal) -> str:
        """Run a call read by `read`; the tool result's text."""
        if isinstance(call, Refusal):
            return call.text
        if call.name == EXPAND_TOOL:
            await self._slot.wait()  # a background run lands first
            return self._expander.expand(call.arguments["id"])
        before = self._working.total_tokens
        run = await self._compact(call.arguments.get("instructions"))
        after = self._working.total_tokens
        cut = "; cut short by the time limit" if run.timed_out else ""
        return (
            f"{COMPACT_TOOL}: {run.applied} edit(s) applied, the context went from "
            f"{before:,} to {after:,} tokens{cut}"
        )

    def run_inline(self, call: AgentCall | Refusal) -> str | None:
        """Run a call that needs no event loop (a refusal, an expand); `None` for the rest."""
        if isinstance(call, Refusal):
            return call.text
        if call.name == EXPAND_TOOL:
            return self._expander.expand(call.arguments["id"])
        return None
