"""The ideal drop compactor: what prefix stability a given fill leaves room for.

Prefix stability counts the calls whose request starts with the previous request's
messages; fill, the share of the budget a compacted request uses. A compactor that
leaves more in the request after a compaction compacts again sooner, so the two trade
against each other. This contender is the best a compactor that drops history can do
on that trade, with none of a real one's costs:

- it compacts only when the request would not fit the budget (no level below it);
- it then drops the oldest messages after the task (the system prompt and the first
  user turn, which it always keeps), a message at a time, until the request is at or
  under `low` x the budget: token-exact, with no summary taking room;
- the window it keeps starts on a user or assistant message, so every tool result keeps
  its call;
- between compactions it sends what it held plus what came, so the prefix holds;
- content that alone would not fit (the latest turn with the task over the budget) is
  cut at its end, newest message first, before any request carries it, which keeps the
  prefix too. What still does not fit (a task larger than the budget) is sent over it.

It keeps nothing of what it drops, so its retention and probes are a recency buffer's; it
is here for the prefix stability and fill of each `low`: what a compactor that frees
room by rewriting sent history, when a request does not fit, can hope for at each fill
(a compaction that frees more makes fill lower, one that frees less comes sooner). A
compactor that also cuts new outputs before any request carries them can pass it, at
what those outputs held.
`python -m benchmarks.probes_quick --ideal-drop 0.5 0.6 0.7` replays it beside a policy.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from benchmarks.compare.contenders import Contender, ContenderSpec
from benchmarks.compare.dollars import PRICES, cost_of
from benchmarks.compare.langchain_peer import LangChainTrimContender
from benchmarks.compare.runner import Run
from benchmarks.compare.stats import summarize
from context_graph import TokenCounter
from context_graph.render import count_payload

__all__ = ["IDEAL_DROP_SHARES", "IdealDropContender", "bound_line", "ideal_drop_spec"]

#: The low-water marks the page replays it at (at 50%), beside the prefix target.
IDEAL_DROP_SHARES: tuple[float, ...] = (0.5, 0.6, 0.7, 0.75, 0.8, 0.9)

_PRIMING = 3
"""Tokens counted once per request for the reply's priming (`LangChainTrimContender._count`)."""


class IdealDropContender(LangChainTrimContender):
    """Holds the messages an agent would; drops the oldest when a request would not fit."""

    def __init__(self, budget: int, counter: TokenCounter, low: float) -> None:
        if not 0 < low <= 1:
            raise ValueError(f"low must be a share of the budget in (0, 1], got {low!r}")
        super().__init__(budget, counter)
        self._low = low
        self._start: int | None = None
        """Where the kept window begins in the held messages (after the task)."""
        self._sent = 0
        """How many held messages the previous request carried or dropped."""
        self._sizes: dict[int, tuple[Any, int]] = {}
        """Each counted message's tokens by its id, with the message: held here, a cut
        copy cannot die and leave its id (and a stale count) to another."""

    async def feed(self, item: Any) -> None:
        before = len(self._held)
        await super().feed(item)
        if len(self._held) < before:  # a recorded compaction replaced the history
            self._start, self._sent = None, 0

    def _count(self, messages: list[Any]) -> int:
        total = _PRIMING
        for message in messages:
            known = self._sizes.get(id(message))
            if known is None:
                body = {"messages": self._to_openai([message])}
                known = (message, count_payload(body, "openai", self._cache) - _PRIMING)
                self._sizes[id(message)] = known
            total += known[1]
        return total

    def _task(self) -> int:
        """How many leading messages are the task: system messages, then one user turn."""
        held, count = self._held, 0
        while count < len(held) and held[count].type == "system":
            count += 1
        if count < len(held) and held[count].type == "human":
            count += 1
        return count

    def _window(self, task: int, start: int) -> list[Any]:
        return self._held[:task] + self._held[start:]

    async def request(self, budget: int) -> Any | None:
        task = self._task()
        start = max(self._start or task, task)
        if self._count(self._window(task, start)) > budget:
            start = self._dropped_to(task, start, budget)
            self._fit_unsent(task, start, budget)
        self._start, self._sent = start, len(self._held)
        return self._window(task, start)

    def _dropped_to(self, task: int, start: int, budget: int) -> int:
        """The window's new start: the first at or under `low` x `budget`, or the latest
        turn's start when none is."""
        held = self._held
        latest = next(
            (i for i in range(len(held) - 1, task - 1, -1) if held[i].type in ("human", "ai")),
            len(held),
        )
        total = self._count(self._window(task, start))
        while start < latest and total > self._low * budget:
            total -= self._count([held[start]]) - _PRIMING
            start += 1
            while start < latest and held[start].type == "tool":
                total -= self._count([held[start]]) - _PRIMING
                start += 1
        return start

    def _fit_unsent(self, task: int, start: int, budget: int) -> None:
        """Cut what no request carried yet, newest first, until the window fits."""
        for index in range(len(self._held) - 1, max(start, self._sent, task) - 1, -1):
            excess = self._count(self._window(task, start)) - budget
            if excess <= 0:
                return
            self._held[index] = _cut(self._held[index], excess, self._count)


def _cut(message: Any, excess: int, count: Any) -> Any:
    """`message` with its text cut at the end by about `excess` tokens (its calls kept)."""
    text = message.content
    if not isinstance(text, str) or not text:
        return message
    size = count([message])
    keep = max(0, len(text) - int(len(text) * min(1.0, excess / max(size, 1))) - 16)
    while True:
        cut = message.model_copy(update={"content": text[:keep]})
        if keep == 0 or count([cut]) <= size - excess:
            return cut
        keep = max(0, keep - max(16, keep // 16))


def ideal_drop_spec(low: float) -> ContenderSpec:
    """The ideal drop compactor down to `low` x the budget, as a contender."""

    def make(budget: int, counter: TokenCounter) -> Contender:
        return IdealDropContender(budget, counter, low)

    return ContenderSpec(
        name=f"ideal drop to {low:g}",
        family="ideal drop",
        make=make,
        settings=f"drops the oldest messages after the task to {low:g} x the budget "
        "when a request would not fit; cuts unsent content that alone would not",
    )


def bound_line(runs: Sequence[Run], label: str, fill_target: float = 0.8) -> str:
    """What the ideal drop compactor's replays (`runs`, at `label`) reach.

    Prefix stability at each fill, the most of it at `fill_target` or above, and the share
    of the tokens sent that the first provider's cache would serve. Empty when it was not
    replayed at `label`.
    """
    price = PRICES[0]
    points: list[tuple[str, float, float, float]] = []
    for name in dict.fromkeys(r.contender for r in runs if r.budget_label == label):
        figures = summarize(runs, name, label)
        chosen = [r for r in runs if r.contender == name and r.budget_label == label]
        cache = cost_of((row for r in chosen for row in r.rows), price).hit_share
        prefix, fill = figures.prefix_stability, figures.fill
        if prefix is None or fill is None or cache is None:
            continue
        points.append((name.removeprefix("ideal drop to "), prefix, fill, cache))
    if not points:
        return ""
    reached = [prefix for _, prefix, fill, _ in points if fill >= fill_target]
    best = f"at most {max(reached):.3f}" if reached else "no share replayed"
    return (
        "The ideal drop compactor (`benchmarks.compare.ideal_drop`: it compacts only when "
        "a request would not fit, and then drops the oldest messages, token-exact, down to "
        f"a share of the budget, with no summary taking room) at {label}, down to "
        + " / ".join(share for share, *_ in points)
        + " of the budget: prefix stability "
        + " / ".join(f"{prefix:.3f}" for _, prefix, _, _ in points)
        + " at fill "
        + " / ".join(f"{fill:.3f}" for _, _, fill, _ in points)
        + f"; at a fill of {fill_target:g} or more, {best}. The share of the tokens sent "
        f"that {price.provider}'s cache would serve (as in the dollars table): "
        + " / ".join(f"{cache:.3f}" for *_, cache in points)
        + "."
    )
