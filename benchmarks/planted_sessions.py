"""Seeded sessions for `benchmarks.planted`: facts planted early, updated later, then buried.

Every session states, in its first user turns, two safety rules, three constraints with
values, three preferences, the goal and three plain facts (each drawn, with its value, from
a pool by the seed), updates one constraint and one fact in its second round, and does
long tool work in every round: file reads, test runs and searches whose outputs hold
identifiers, numbers and paths of their own, so that a planted value competes with many.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass, replace

from context_graph.graph.events import (
    AgentEvent,
    AssistantTurn,
    SystemPrompt,
    ToolCall,
    ToolResult,
    UserTurn,
)
from context_graph.tokens.counting import TokenCounter

__all__ = ["KINDS", "Item", "PlantedSession", "make_session"]

KINDS = ("safety", "constraint", "preference", "goal", "fact")


@dataclass(frozen=True)
class Item:
    """One planted statement: its subject, and its value as of some round."""

    kind: str
    template: str
    """The statement, with `{value}` where the value goes."""
    subject: str
    """Words that name what the statement is about ("budget cap"); empty for a goal."""
    value: str
    old_value: str | None = None
    """The value before an update, once the update was said."""
    update_template: str | None = None
    """How the update is said, with `{value}`; None for an item never updated."""
    next_value: str | None = None
    """The value the update sets."""

    def statement(self) -> str:
        return self.template.format(value=self.value)

    def holds(self, line: str, value: str) -> bool:
        """`line` (lowercased) names the subject and says `value`."""
        return self.subject.lower() in line and value.lower() in line


# Pools: (template, subject, values...). Values of one pool differ from each other.
_SAFETY: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    (
        "SAFETY RULE: never run database migrations against {value} without a dry run first.",
        "database migrations against",
        ("prod-db-1", "orders-primary", "ledger-main"),
    ),
    (
        "SAFETY RULE: never delete files under {value} without making a backup.",
        "delete files under",
        ("/srv/uploads", "/var/lib/billing", "/data/archive-2019"),
    ),
    (
        "SAFETY RULE: never push directly to the {value} branch; open a pull request.",
        "push directly to",
        ("release-2024", "stable", "hotfix-main"),
    ),
)
_CONSTRAINTS: tuple[tuple[str, str, tuple[str, ...], str | None, tuple[str, ...]], ...] = (
    (
        "HARD CONSTRAINT: the budget cap is {value} total. Never exceed without explicit approval.",
        "budget cap",
        ("$500", "$1,200", "$350"),
        "Update from the user: the budget cap is now {value} total; the earlier figure is void.",
        ("$800", "$1,900", "$640"),
    ),
    (
        "HARD CONSTRAINT: API calls are limited to {value} requests per minute.",
        "requests per minute",
        ("120", "45", "600"),
        None,
        (),
    ),
    (
        "HARD CONSTRAINT: the p95 latency of the checkout endpoint must stay under {value}.",
        "p95 latency",
        ("250 ms", "180 ms", "400 ms"),
        None,
        (),
    ),
)
_PREFERENCES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    (
        "I prefer {value} for indentation in this repository.",
        "indentation",
        ("tabs", "two spaces", "four spaces"),
    ),
    (
        "For new tests I prefer {value}.",
        "new tests",
        ("pytest fixtures over setUp methods", "table-driven parametrize cases"),
    ),
    (
        "Mia (the reviewer) prefers {value} in status updates.",
        "status updates",
        ("short bullet lists", "a single paragraph", "a numbered checklist"),
    ),
)
_GOALS = (
    "migrate the billing service from MySQL 5.7 to PostgreSQL 16 with zero downtime",
    "cut the nightly report job from 3 hours to under 40 minutes",
    "replace the hand-written retry loops with one shared backoff helper",
)
_FACTS: tuple[tuple[str, str, tuple[str, ...], str | None, tuple[str, ...]], ...] = (
    (
        "FYI: the staging database lives at {value}.",
        "staging database",
        ("db-staging-7.internal:5433", "pg-stage-2.corp:6432"),
        "Heads up: the staging database moved; it now lives at {value}.",
        ("db-staging-9.internal:5434", "pg-stage-5.corp:6433"),
    ),
    (
        "FYI: the feature flag for the new checkout is named {value}.",
        "feature flag",
        ("checkout_v3_rollout", "new_checkout_gate"),
        None,
        (),
    ),
    (
        "FYI: the on-call contact this week is {value}.",
        "on-call contact",
        ("Priya Raman", "Tomasz Nowak", "Keiko Ito"),
        None,
        (),
    ),
)


@dataclass(frozen=True)
class PlantedSession:
    """A session in rounds, and its planted items."""

    seed: int
    system_text: str
    round_events: tuple[tuple[AgentEvent, ...], ...]
    items: tuple[Item, ...]
    """Every item at its first value."""
    updated_in: int
    """The round whose first user turn says the updates."""

    def rounds(self, counter: TokenCounter) -> Iterator[tuple[list[AgentEvent], int]]:
        """After each round: every event so far, and their size in tokens."""
        seen: list[AgentEvent] = []
        size = 0
        for events in self.round_events:
            seen.extend(events)
            size += sum(counter.count(_event_text(e)) for e in events)
            yield list(seen), size

    def items_after(self, round_index: int) -> list[Item]:
        """The items as they stand after round `round_index` (updates applied once said)."""
        if round_index < self.updated_in:
            return list(self.items)
        return [_updated(item) for item in self.items]


def _updated(item: Item) -> Item:
    if item.next_value is None:
        return item
    return replace(item, value=item.next_value, old_value=item.value, next_value=None)


def _event_text(event: AgentEvent) -> str:
    return json.dumps(event.model_dump(mode="json", exclude={"meta", "timestamp"}))


def make_session(seed: int, rounds: int = 4, steps: int = 24) -> PlantedSession:
    """Session `seed`: `rounds` rounds of `steps` tool steps each, facts planted in round 0.

    Round 0 says the items over four user turns with tool work between them, as a user
    who adds rules while the agent works; round 1 opens with the updates.
    """
    rng = random.Random(seed)
    items, updates = _draw_items(rng)
    system = "You are a careful coding agent working in the billing repository. Use the tools."
    work = _Work(rng)
    round_events: list[tuple[AgentEvent, ...]] = []
    for index in range(rounds):
        events: list[AgentEvent] = [SystemPrompt(content=system)] if index == 0 else []
        turns = _user_turns(rng, index, items, updates)
        per_turn = steps // len(turns)
        for number, turn in enumerate(turns):
            events.append(turn)
            for _ in range(per_turn if number < len(turns) - 1 else steps - per_turn * number):
                events += work.step()
        events.append(AssistantTurn(content=work.wrap_up(index)))
        round_events.append(tuple(events))
    return PlantedSession(
        seed=seed,
        system_text=system,
        round_events=tuple(round_events),
        items=tuple(items),
        updated_in=1,
    )


def _draw_items(rng: random.Random) -> tuple[list[Item], list[Item]]:
    """Every kind's items for one seed, and those its second round updates."""
    items: list[Item] = []
    for template, subject, values in _SAFETY:
        items.append(Item("safety", template, subject, rng.choice(values)))
    for template, subject, values, update, next_values in _CONSTRAINTS + _FACTS:
        kind = "constraint" if template.startswith("HARD") else "fact"
        index = rng.randrange(len(values))
        items.append(
            Item(
                kind,
                template,
                subject,
                values[index],
                update_template=update,
                next_value=next_values[index % len(next_values)] if update else None,
            )
        )
    for template, subject, values in _PREFERENCES:
        items.append(Item("preference", template, subject, rng.choice(values)))
    items.append(Item("goal", "Our goal for this session: {value}.", "", rng.choice(_GOALS)))
    return items, [item for item in items if item.update_template]


def _user_turns(
    rng: random.Random, index: int, items: list[Item], updates: list[Item]
) -> list[AgentEvent]:
    """The round's user turns: round 0 plants every item, round 1 says the updates."""
    if index == 0:
        goal = next(item for item in items if item.kind == "goal")
        rest = [item for item in items if item.kind != "goal"]
        rng.shuffle(rest)
        groups = [rest[i::4] for i in range(4)]
        said = [
            f"{goal.statement()} {' '.join(i.statement() for i in groups[0])} "
            "Start by reading the service code.",
            *(
                f"One more thing. {' '.join(i.statement() for i in group)} Carry on."
                for group in groups[1:]
            ),
        ]
        return [UserTurn(content=text) for text in said]
    if index == 1:
        news = " ".join(
            item.update_template.format(value=item.next_value)
            for item in updates
            if item.update_template and item.next_value
        )
        return [UserTurn(content=news + " Now continue with the slow queries in reports.py.")]
    return [UserTurn(content=f"Round {index + 1}: now look at the retry helpers in net/retry.py.")]


class _Work:
    """Tool steps whose outputs carry identifiers, numbers and paths of their own."""

    _MODULES = ("billing", "invoices", "reports", "ledger", "payments", "accounts", "retry")

    def __init__(self, rng: random.Random) -> None:
        self._rng = rng
        self._step = 0

    def step(self) -> list[AgentEvent]:
        self._step += 1
        call_id = f"call_{self._step:04d}"
        kind = self._rng.choice(("read", "test", "grep"))
        module = self._rng.choice(self._MODULES)
        if kind == "read":
            name, args, output = "read_file", {"path": f"src/{module}.py"}, self._code(module)
        elif kind == "test":
            name, args, output = (
                "bash",
                {"cmd": f"pytest tests/test_{module}.py"},
                self._log(module),
            )
        else:
            name, args, output = "grep", {"pattern": f"def {module}_"}, self._grep(module)
        return [
            AssistantTurn(
                content=f"Step {self._step}: checking {module}.",
                tool_calls=(ToolCall(id=call_id, name=name, arguments=json.dumps(args)),),
            ),
            ToolResult(call_id=call_id, name=name, content=output),
        ]

    def wrap_up(self, index: int) -> str:
        return f"Round {index + 1} done: {self._step} steps so far."

    def _code(self, module: str) -> str:
        lines = [f'"""The {module} service."""', "import logging", ""]
        for i in range(self._rng.randint(12, 30)):
            limit = self._rng.randint(10, 9999)
            lines += [
                f"def {module}_handler_{i}(request, limit={limit}):",
                f"    timeout = {self._rng.randint(1, 90)}  # seconds",
                f"    return fetch('/api/{module}/{i}', limit=limit, timeout=timeout)",
                "",
            ]
        return "\n".join(lines)

    def _log(self, module: str) -> str:
        lines = []
        failed = self._rng.random() < 0.25
        for i in range(self._rng.randint(20, 60)):
            status = "PASSED" if not failed or i % 17 else "FAILED"
            lines.append(f"tests/test_{module}.py::test_case_{i} {status} [{i}%]")
        if failed:
            lines.append(f"E   AssertionError: expected {self._rng.randint(1, 999)} rows, got 0")
        return "\n".join(lines)

    def _grep(self, module: str) -> str:
        return "\n".join(
            f"src/{module}.py:{self._rng.randint(1, 900)}:def {module}_handler_{i}(request):"
            for i in range(self._rng.randint(5, 25))
        )
