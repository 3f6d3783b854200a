"""Managers for tests that vary their options as one keyword set.

Many tests build managers from a dict of options (`make(pipeline=..., budget=...)`).
The options that are a policy's go into one `Policy` here, said explicitly: `Policy()`
(the general mechanics: soft trigger 0.7, hard 0.9, `default_pipeline()`, compaction to
0.7) with those options, or the named policy `profile=` names with them. The rest are
the manager's own keywords.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

from orchestrator import ContextManager
from orchestrator.policy import Policy, as_policy

__all__ = ["make_manager", "manager_keywords", "open_manager"]

_POLICY_FIELDS = frozenset(field.name for field in dataclasses.fields(Policy))


def manager_keywords(options: dict[str, Any]) -> dict[str, Any]:
    """`options` as `ContextManager` keywords: the policy's gathered into `policy=`."""
    own = {key: value for key, value in options.items() if key not in _POLICY_FIELDS}
    changes = {key: value for key, value in options.items() if key in _POLICY_FIELDS}
    named = own.pop("profile", None)
    given = own.pop("policy", None)
    base = as_policy(named if named is not None else given) if named or given else Policy()
    own["policy"] = dataclasses.replace(base, **changes) if changes else base
    return own


def make_manager(**options: Any) -> ContextManager:
    """A manager made with `options` (see the module's docstring)."""
    return ContextManager(**manager_keywords(options))


def open_manager(path: str | os.PathLike[str], **options: Any) -> ContextManager:
    """`ContextManager.open(path, ...)` with `options` (see the module's docstring)."""
    return ContextManager.open(path, **manager_keywords(options))
