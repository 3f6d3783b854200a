"""Test doubles for users' tests (and ours): deterministic, offline, fast.

`WordCounter` counts whitespace-separated words, so expected token numbers can be
worked out by hand in a test.
"""

from __future__ import annotations

__all__ = ["WordCounter"]


class WordCounter:
    """A `TokenCounter` that counts whitespace-separated words (and nothing else).

    Deterministic and dependency-free: use it in tests where the exact count matters more
    than realism.
    """

    @property
    def name(self) -> str:
        """`words`."""
        return "words"

    def count(self, text: str) -> int:
        """Return the number of whitespace-separated words in `text`."""
        return len(text.split())
