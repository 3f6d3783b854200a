"""The named policies (`coding`, `service`, `chat`), and how a `policy=` value is read.

Their stages are `StageConfig`s, so every manager gets processors of its own.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

from context_graph.errors import ConfigurationError
from orchestrator.compaction.triggers import TriggerConfig
from orchestrator.policy.policy import Policy
from orchestrator.policy.stages import StageConfig
from processors.summarize.facts import AGENT_SHELL_TOOLS

__all__ = ["DEFAULT_POLICY", "POLICIES", "PolicyLike", "as_policy", "get_policy"]

PolicyLike = Policy | str | os.PathLike[str]
"""What `policy=` takes: a `Policy`, a named policy's name, or a TOML file's path."""

# Test and build tools whose failures matter more than their first and last lines: the
# agents' shell tools (`AGENT_SHELL_TOOLS`, names matched case-sensitively), and Codex
# CLI's `write_stdin`, which answers with the next chunk of a command's output.
_ERRORS_FIRST = (
    *AGENT_SHELL_TOOLS,
    "write_stdin",
    "run_tests",
    "pytest",
    "make",
    "*test*",
    "*build*",
)

_CODING_OUTPUT_STAGES = (
    # Cheapest first: leaving out what the model no longer reads (old thinking, the
    # content of old file writes) costs nothing it may need; the original stays expandable.
    StageConfig(processor="trim_preamble_trees"),
    StageConfig(processor="clear_thinking", options={"keep_turns": 1}),
    StageConfig(processor="clear_tool_inputs", options={"keep_turns": 3, "min_tokens": 200}),
    StageConfig(
        processor="mask",
        options={"keep_turns": 3, "mask_superseded": True, "min_tokens": 200},
    ),
    StageConfig(
        processor="truncate",
        options={
            "max_tokens": 1_500,
            "default_policy": "head_tail",
            "policies": dict.fromkeys(_ERRORS_FIRST, "errors_first"),
            "context_lines": 3,
        },
    ),
    StageConfig(processor="distill", options={"min_tokens": 200}),
)

_SERVICE_OUTPUT_STAGES = (
    StageConfig(
        processor="mask",
        options={"keep_turns": 2, "mask_superseded": False, "min_tokens": 50},
    ),
    StageConfig(processor="truncate", options={"max_tokens": 800, "default_policy": "head"}),
)

#: When every named policy compacts: late, only when a request nearly no longer fits.
_LATE = TriggerConfig(soft_ratio=None, hard_ratio=0.95, hysteresis=0.1)

#: The named policies (read-only: a policy of one's own is a `Policy` or a TOML file).
POLICIES: Mapping[str, Policy] = MappingProxyType(
    {
        "coding": Policy(
            name="coding",
            description=(
                "A coding agent (SWE-agent, mini-swe-agent, Claude Code): large shell, test and "
                "file outputs; the first request and its constraints stay in the floor."
            ),
            # No soft trigger: every compaction rewrites the cached prompt prefix, and
            # shrinking outputs early bought no retention on the shared sessions (see
            # docs/configuration.md). `pipelines.outputs` is there to opt in to it.
            triggers=_LATE,
            pipeline=(
                *_CODING_OUTPUT_STAGES,
                StageConfig(processor="summarize", options={"timeout": 120.0}),
            ),
            pipelines={"outputs": _CODING_OUTPUT_STAGES},
            compact_to=0.7,
        ),
        "service": Policy(
            name="service",
            description=(
                "A tool-using service agent (tau-bench): many short JSON lookups between user "
                "turns; results stay valid JSON and the conversation is summarized rarely."
            ),
            triggers=_LATE,
            pipeline=(
                *_SERVICE_OUTPUT_STAGES,
                StageConfig(processor="summarize", options={"timeout": 60.0}),
            ),
            pipelines={"outputs": _SERVICE_OUTPUT_STAGES},
            compact_to=0.7,
        ),
        "chat": Policy(
            name="chat",
            description=(
                "A chat assistant, with at most a few tools (a web search): old turns are "
                "summarized, and a tool result too long for the chat is cut first."
            ),
            triggers=_LATE,
            pipeline=(
                # Without a stage that can cut new material, a large tool result could only be
                # made room for by summarizing turns the provider has cached already.
                StageConfig(processor="truncate", options={"max_tokens": 1_000}),
                StageConfig(processor="summarize", options={"timeout": 60.0}),
            ),
            compact_to=0.7,
        ),
    }
)
"""The named policies (see docs/configuration.md for the reasons)."""


DEFAULT_POLICY: PolicyLike = "coding"
"""The policy a manager runs when none is named: `coding`, the one docs/benchmarks.md measures."""


def get_policy(name: str) -> Policy:
    """The named policy called `name`.

    Raises:
        ConfigurationError: no named policy has that name (the message lists them).
    """
    try:
        return POLICIES[name]
    except KeyError:
        names = ", ".join(sorted(POLICIES))
        msg = f"no named policy {name!r}; use one of {names}, or Policy.load(path)"
        raise ConfigurationError(msg) from None


def as_policy(value: object, where: str = "ContextManager") -> Policy:
    """A `policy=` value read: a `Policy`, a named policy, or a TOML file (`.toml` path).

    Raises:
        ConfigurationError: at `where`, for a value of none of those kinds, an unknown
            name, or a TOML file that does not read.
    """
    if isinstance(value, Policy):
        return value
    if isinstance(value, os.PathLike) or (isinstance(value, str) and value.endswith(".toml")):
        return Policy.load(Path(value))
    if isinstance(value, str):
        return get_policy(value)
    msg = (
        f"{where}: `policy` must be a Policy, a named policy "
        f"({', '.join(POLICIES)}) or the path of a .toml file, got {value!r}"
    )
    raise ConfigurationError(msg)
