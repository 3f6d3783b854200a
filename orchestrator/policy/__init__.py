"""Policies: how a `ContextManager` compacts, as one frozen `Policy`.

`Policy` (the value), the named policies (`get_policy`, `POLICIES`), `StageConfig` (a
stage built per manager), `SummarizerConfig` (a summarizer built per manager), and
`Policy.from_toml` / `Policy.to_toml` (`table`). `resolved` checks a policy with the
manager's own options into the `ManagerOptions` its collaborators read.
"""

from orchestrator.policy.named import DEFAULT_POLICY, POLICIES, PolicyLike, as_policy, get_policy
from orchestrator.policy.policy import Policy, PolicyChanges, Stage
from orchestrator.policy.stages import StageConfig, SummarizerConfig

__all__ = [
    "DEFAULT_POLICY",
    "POLICIES",
    "Policy",
    "PolicyChanges",
    "PolicyLike",
    "Stage",
    "StageConfig",
    "SummarizerConfig",
    "as_policy",
    "get_policy",
]
