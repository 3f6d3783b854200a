"""A session file written before the manager's state was split among its collaborators.

`data/state_owners_44b3b6b.db` was written by the manager of commit 44b3b6b, whose state
was one shared record (`ManagerState`), from the session `write_session` scripts (run by
hand under that commit: `python -m tests.orchestrator.persistence.test_old_store
write <folder>`); it holds every state key (triggers, guards, counters, calibration,
pending, scanned, sent, renderers, pins, usage). `data/state_owners_44b3b6b.json` holds
what that commit's manager did with it (`resume`, run under 44b3b6b with `record`): the
state as stored, the figures on opening, and the digest of the next request and the
state stored after it. The collaborators that own the state now must load it exactly.
Since the thirty-fourth session the coding profile's first stage (`trim_preamble_trees`)
has an entry in the guard state stored after the request: that entry (and nothing else)
was added to the json file (`resume` again, by the `__main__` below).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from pathlib import Path
from typing import Any

from context_graph.testing import WordCounter
from context_graph.tokens.usage import Usage
from orchestrator import ContextManager
from orchestrator.persistence.sqlite.store import SQLiteStore
from orchestrator.policy import get_policy
from tests.orchestrator.persistence.test_manager_state import STATE_KEYS

DATA = Path(__file__).with_name("data")
STORE = DATA / "state_owners_44b3b6b.db"
EXPECTED = DATA / "state_owners_44b3b6b.json"


def _options() -> dict[str, Any]:
    return {
        "format": "anthropic",
        "budget": 1_200,
        "clock": lambda: 1e9,
        "counter": WordCounter(),
        "agent_tools": True,
        "policy": get_policy("coding").replace(redact_secrets=True),
    }


def _stored(path: Path) -> dict[str, Any]:
    with SQLiteStore.open(path, counter=WordCounter(), read_only=True) as store:
        return dict(store.state())


def write_session(path: Path) -> None:
    """The session of the data file: compacted, calibrated, redacted, expanded, marked."""
    manager = ContextManager.open(path, durable=False, **_options())
    manager.add_system("You are a careful coding agent.")
    manager.add_user("Fix what fails. The token is ghp_R7mQ2xK9pL4vN8sT1wY6zB3cF5hJ0dG2aE7u")
    for n in range(1, 5):
        manager.add_assistant(f"Running step {n}.", [{"id": f"c{n}", "name": "bash"}])
        manager.add_tool_result(f"c{n}", " ".join(f"out{n}_{i}" for i in range(330)))
        result = manager.render_sync()
        usage = Usage(prompt_tokens=result.tokens + 11, completion_tokens=5, cached_tokens=3)
        manager.report_usage(usage)
        manager.add_assistant(f"Step {n} done.")
        manager.add_user(f"Go on with step {n + 1}.")
    manager.render_sync()
    view = manager.working.view
    for node_id in [i for i in view.overlay.derived if view.is_current(i)]:
        told = manager.handle_tool_call_sync("context_expand", {"id": node_id})
        if told.startswith("context_expand: restored"):
            break
    manager.add_assistant("Back to it.")  # not sent
    manager.mark_boundary("step")  # a firing left pending
    manager.close()


def resume(path: Path) -> dict[str, Any]:
    """Open the session, close it, open it again and render once: what each step left."""
    stored = _stored(path)
    manager = ContextManager.open(path, durable=False, **_options())
    opened = manager.stats().model_dump(mode="json")
    manager.close()
    unchanged = _stored(path) == stored
    manager = ContextManager.open(path, durable=False, **_options())
    payload = json.dumps(manager.render_sync().payload, sort_keys=True)
    manager.report_usage(Usage(prompt_tokens=900, completion_tokens=7))
    manager.close()
    return {
        "stored": stored,
        "opened": opened,
        "closed_unchanged": unchanged,
        "next_request": hashlib.sha256(payload.encode()).hexdigest(),
        "stored_after": _stored(path),
    }


class TestOldStore:
    def test_a_store_written_by_the_shared_record_loads_as_it_did(self, tmp_path: Path) -> None:
        """The 44b3b6b file opens with the same figures, rewrites nothing, renders the same."""
        path = tmp_path / "session.db"
        shutil.copy(STORE, path)
        got = resume(path)
        expected = json.loads(EXPECTED.read_text(encoding="utf-8"))
        assert sorted(got["stored"]) == STATE_KEYS
        assert got == expected


if __name__ == "__main__":  # pragma: no cover - how the data files were made
    job, folder = sys.argv[1], Path(sys.argv[2])
    if job == "write":
        write_session(folder / STORE.name)
    else:
        copy = folder / "resumed.db"
        shutil.copy(folder / STORE.name, copy)
        text = json.dumps(resume(copy), indent=1, sort_keys=True) + "\n"
        (folder / EXPECTED.name).write_text(text, encoding="utf-8")
