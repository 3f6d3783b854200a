"""How much of a contender's engine time is the tokenizer, measured the same way for all.

While a `TokenizerClock` is open, every `TiktokenCounter.count` call (the shared counter
the harness hands each contender, and any other instance, such as the process default
the extractive summarizer falls back to) adds its time and the characters it encoded
to the clock. The harness reads the clock at the edges of each timed span, so the
tokenizer's share of engine time is split out of the same spans the engine time is.

The class attribute is swapped, not the instances: the library tells counters apart by
type (`NodeTokenCache.counts_like`), and a wrapper object would change which code runs.
The clock adds two clock reads per count, the same for every contender.
"""

from __future__ import annotations

import time
from types import TracebackType

from context_graph import TiktokenCounter

__all__ = ["TokenizerClock"]


class TokenizerClock:
    """Adds up the time and characters of `TiktokenCounter.count` while open."""

    def __init__(self) -> None:
        self.ns = 0
        self.chars = 0
        self.calls = 0
        self._real = TiktokenCounter.count

    def __enter__(self) -> TokenizerClock:
        real = self._real
        clock = time.perf_counter_ns

        def timed(counter: TiktokenCounter, text: str) -> int:
            start = clock()
            tokens = real(counter, text)
            self.ns += clock() - start
            self.chars += len(text)
            self.calls += 1
            return tokens

        TiktokenCounter.count = timed  # type: ignore[method-assign,assignment]
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        TiktokenCounter.count = self._real  # type: ignore[method-assign]

    def reading(self) -> tuple[int, int]:
        """(nanoseconds, characters) so far."""
        return self.ns, self.chars
