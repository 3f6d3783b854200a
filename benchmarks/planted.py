"""`python -m benchmarks.planted`: do the rules, values and preferences said early survive?

Seeded synthetic sessions state safety rules, constraints with values, preferences, goals
and plain facts in their first user turns, update some of them later (a budget raised, a
host moved), and bury everything under long tool work. Each session is fed in rounds;
after each round the contender is asked for a request at a fraction (10%, 20%, 30%) of
the session's size so far, so round k+1 compacts round k's output plus the new turns.

A planted item survives a request when one line of the request holds its subject and its
current value together (a rule without its number is another rule). An updated item is
stale when the last line that states it says the old value. Controls on the same
sessions: a null compactor (the system prompt alone), random deletion of whole turns
down to the size our default sent, and an oracle (the system prompt, every item at its
current value and the latest user turn).

    python -m benchmarks.planted                      # 5 seeds, 3 rounds, 10/20/30%
    python -m benchmarks.planted --seeds 2 --json out.json
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.planted_sessions import KINDS, Item, PlantedSession, make_session
from context_graph import TiktokenCounter
from context_graph.errors import BudgetExceededError
from context_graph.graph.events import AgentEvent, UserTurn
from context_graph.tokens.counting import TokenCounter
from orchestrator.manager import ContextManager
from orchestrator.policy import DEFAULT_POLICY

FRACTIONS = (0.1, 0.2, 0.3)
#: The targets the issue sets: survival of every kind at 20% and 30%, no stale value.
TARGETS = {0.2: 0.95, 0.3: 1.0}


@dataclass(frozen=True)
class Request:
    """What one contender sent after one round (None: it refused)."""

    text: str | None
    tokens: int
    budget: int


def request_text(payload: object) -> str:
    """Every string of a request body, one per line, in order."""
    out: list[str] = []

    def walk(value: object) -> None:
        if isinstance(value, str):
            out.append(value)
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list | tuple):
            for item in value:
                walk(item)

    walk(payload)
    return "\n".join(out)


def survives(item: Item, text: str) -> bool:
    """One line of `text` holds the item's subject and its current value."""
    return any(item.holds(line, item.value) for line in text.lower().splitlines())


def stale(item: Item, text: str) -> bool:
    """The last line that states an updated item says its old value."""
    if item.old_value is None:
        return False
    stated = [
        line
        for line in text.lower().splitlines()
        if item.holds(line, item.value) or item.holds(line, item.old_value)
    ]
    return bool(stated) and not item.holds(stated[-1], item.value)


# --- contenders: each maps a session's rounds to one request per round ---------------

Contender = Callable[[PlantedSession, float, TokenCounter, Sequence[Request]], list[Request]]


def _ours(profile: str | None) -> Contender:
    def run(
        session: PlantedSession, fraction: float, counter: TokenCounter, _: Sequence[Request]
    ) -> list[Request]:
        manager: ContextManager | None = None
        out: list[Request] = []
        fed = 0
        for seen, size in session.rounds(counter):
            budget = max(256, int(size * fraction))
            if manager is None:
                manager = ContextManager(
                    budget=budget,
                    counter=counter,
                    policy=DEFAULT_POLICY if profile is None else profile,
                )
            manager.ingest(seen[fed:])
            fed = len(seen)
            try:
                result = manager.render_sync(budget=budget)
            except BudgetExceededError:
                out.append(Request(None, 0, budget))
                continue
            out.append(Request(request_text(result.payload), result.tokens, budget))
        return out

    return run


def _null(
    session: PlantedSession, fraction: float, counter: TokenCounter, _: Sequence[Request]
) -> list[Request]:
    system = session.system_text
    return [
        Request(system, counter.count(system), max(256, int(size * fraction)))
        for _, size in session.rounds(counter)
    ]


def _oracle(
    session: PlantedSession, fraction: float, counter: TokenCounter, _: Sequence[Request]
) -> list[Request]:
    out = []
    for index, (seen, size) in enumerate(session.rounds(counter)):
        items = session.items_after(index)
        latest_user = next(e for e in reversed(seen) if isinstance(e, UserTurn))
        text = "\n".join([session.system_text, *(i.statement() for i in items), _text(latest_user)])
        out.append(Request(text, counter.count(text), max(256, int(size * fraction))))
    return out


def _random_matched(
    session: PlantedSession, fraction: float, counter: TokenCounter, ours: Sequence[Request]
) -> list[Request]:
    """Whole events deleted at random (the system prompt kept) down to our size."""
    rng = random.Random(session.seed * 7919 + int(fraction * 1000))
    out = []
    for (seen, size), matched in zip(session.rounds(counter), ours, strict=True):
        target = matched.tokens or int(size * fraction)
        kept = [_text(e) for e in seen]
        sizes = [counter.count(t) for t in kept]
        order = list(range(1, len(kept)))
        rng.shuffle(order)
        total = sum(sizes)
        dropped: set[int] = set()
        for index in order:
            if total <= target:
                break
            dropped.add(index)
            total -= sizes[index]
        text = "\n".join(t for i, t in enumerate(kept) if i not in dropped)
        out.append(Request(text, total, max(256, int(size * fraction))))
    return out


def _text(event: AgentEvent) -> str:
    return request_text(event.model_dump(mode="json", exclude={"meta", "timestamp"}))


CONTENDERS: dict[str, Contender] = {
    "context-graph (default)": _ours(None),
    "context-graph coding": _ours("coding"),
    "control: null": _null,
    "control: random at our size": _random_matched,
    "control: oracle": _oracle,
}
#: Whose request size the random control matches.
MATCHED = "context-graph (default)"


@dataclass
class Score:
    """One contender at one fraction, over every seed and round."""

    survived: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    asked: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    stale: int = 0
    refused: int = 0
    requests: int = 0
    tokens: int = 0
    budget: int = 0

    def add(self, session: PlantedSession, index: int, request: Request) -> None:
        self.requests += 1
        self.budget += request.budget
        if request.text is None:
            self.refused += 1
            for item in session.items_after(index):
                self.asked[item.kind] += 1
            return
        self.tokens += request.tokens
        for item in session.items_after(index):
            self.asked[item.kind] += 1
            self.survived[item.kind] += survives(item, request.text)
            self.stale += stale(item, request.text)

    def rate(self, kind: str) -> float:
        return self.survived[kind] / self.asked[kind] if self.asked[kind] else 1.0

    @property
    def fill(self) -> float:
        return self.tokens / self.budget if self.budget else 0.0


def measure(
    seeds: Sequence[int], rounds: int, fractions: Sequence[float], counter: TokenCounter
) -> dict[float, dict[str, Score]]:
    """Every contender's score at every fraction."""
    sessions = [make_session(seed, rounds) for seed in seeds]
    table: dict[float, dict[str, Score]] = {}
    for fraction in fractions:
        row = table[fraction] = {name: Score() for name in CONTENDERS}
        for session in sessions:
            sent: dict[str, list[Request]] = {}
            for name, contender in CONTENDERS.items():
                sent[name] = contender(session, fraction, counter, sent.get(MATCHED, []))
                for index, request in enumerate(sent[name]):
                    row[name].add(session, index, request)
    return table


def verdicts(table: dict[float, dict[str, Score]]) -> Iterator[tuple[str, str, bool]]:
    """The issue's targets for our contenders: (target, measured, met)."""
    for fraction, row in table.items():
        for name, score in row.items():
            if not name.startswith("context-graph"):
                continue
            at = f"{name} at {fraction:.0%}"
            floor = TARGETS.get(fraction)
            if floor is not None:
                worst = min(score.rate(kind) for kind in KINDS)
                yield f"{at}: every kind >= {floor:.0%}", f"{worst:.0%}", worst >= floor
            yield f"{at}: no stale value", str(score.stale), score.stale == 0
            yield f"{at}: no refusal", str(score.refused), score.refused == 0


def table_lines(table: dict[float, dict[str, Score]]) -> list[str]:
    """The markdown table: survival per kind, stale values, refusals, fill."""
    head = ["contender", "size", *KINDS, "stale", "refused", "fill"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for fraction, row in table.items():
        for name, score in row.items():
            cells = [name, f"{fraction:.0%}", *(f"{score.rate(k):.2f}" for k in KINDS)]
            cells += [str(score.stale), str(score.refused), f"{score.fill:.2f}"]
            lines.append("| " + " | ".join(cells) + " |")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.planted", description=__doc__)
    parser.add_argument("--seeds", type=int, default=5, help="sessions (seeds 0..N-1)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per session")
    parser.add_argument("--json", type=Path, help="also write the scores here")
    args = parser.parse_args(argv)
    table = measure(range(args.seeds), args.rounds, FRACTIONS, TiktokenCounter())
    print("\n".join(table_lines(table)))
    print()
    judged = list(verdicts(table))
    for what, measured, met in judged:
        print(f"- {'met' if met else 'NOT met'}: {what} ({measured})")
    if args.json:
        data: dict[str, Any] = {
            f"{fraction}": {name: asdict(score) for name, score in row.items()}
            for fraction, row in table.items()
        }
        data["targets"] = [
            {"target": what, "measured": measured, "met": met} for what, measured, met in judged
        ]
        args.json.write_text(json.dumps(data, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
