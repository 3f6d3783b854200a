"""Later values replace earlier ones: which sentences of the user's a newer one restates.

"The budget cap is $500 total." is stale once the user says "the budget cap is now $800
total": a brief that kept both would leave the agent to guess which holds. Two sentences
state the same thing when they share a subject (two content words in a row, after any
leading label such as `HARD CONSTRAINT:`) and each carries a value (a number, an amount, a
path, a host, an identifier); when their values differ, the newer one stands and the older
one is dropped. A sentence with no value is never dropped this way: a rule restated in
other words is not a changed value.

```python
supersede(["HARD CONSTRAINT: the budget cap is $500 total. Never exceed it.",
           "Update: the budget cap is now $800 total."])
# ['Never exceed it.', 'Update: the budget cap is now $800 total.']
```
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["clear_cache", "is_stale", "stale_values", "supersede"]

#: Sentences end at `.`, `!` or `?` before a space (a host or a file name keeps its dots),
#: or at a full-width stop, which needs no space after it.
_SENTENCE_END = re.compile("(?<=[.!?])\\s+|(?<=[\u3002\uff01\uff1f])\\s*")
#: A leading label ("HARD CONSTRAINT:", "FYI:", "Update from the user:") names no subject.
_LABEL = re.compile(r"^\s*[\w ()'-]{1,40}:\s+")
_WORD = re.compile(r"[^\W\d_][\w'-]*")
#: A value: anything with a digit in it, a money amount, a path, a host:port or a snake id.
#: A path or a host is read from the start of its run of characters (the lookbehinds): from
#: every position inside a long run, `[\w.-]*/` and `[\w-]+\.` read to its end again, and a
#: user message with a 32,000-character word in it took 37 s.
_VALUE = re.compile(
    r"[$€£]?\d[\d,.:]*\w*"
    r"|(?:(?<![\w.-])[\w.-]+)?/[\w./-]+"
    r"|(?<![\w-])[\w-]+(?:\.[\w-]+)+(?::\d+)?"
    r"|\b[a-z]+(?:_[a-z\d]+)+\b"
)
_STOP = frozenset(
    "a an the is are was were be been now it its this that these those of to in on at for "
    "from with by and or but not no new old all any our your my we you they he she i me us "
    "them than then there here as if so do does did has have had will would should can could "
    "must may might also just only still very more most less least over under into onto per "
    "total every each about after before until while when where which who whom whose what "
    "update updated heads up fyi note please moved lives named called set changed".split()
)


def _sentences(item: str) -> list[str]:
    return [s for s in _SENTENCE_END.split(item) if s.strip()]


@dataclass(frozen=True, slots=True)
class _Claim:
    """One sentence as `supersede` compares it: its values, their sorts and its subject."""

    text: str
    values: frozenset[str]
    kinds: frozenset[str]
    subject: frozenset[tuple[str, str]]


#: A brief is merged again at every compaction, with mostly the same sentences: each is
#: read once (a long session's briefs held thousands, compared pair by pair).
@functools.lru_cache(maxsize=8192)
def _claim(sentence: str) -> _Claim:
    values = _values(sentence)
    return _Claim(sentence, values, frozenset(map(_kind, values)), _subject(sentence))


def clear_cache() -> None:
    """Forget the sentences and messages read (`processors.caches.clear_caches`)."""
    _claim.cache_clear()
    _values.cache_clear()


def _subject(sentence: str) -> frozenset[tuple[str, str]]:
    """The sentence's subject: its pairs of content words in a row, values left out.

    Words inside values do not count: "fix tests/test_io.py" and "fix tests/test_api.py"
    are two tasks, not one value changed.
    """
    words = [w.lower() for w in _WORD.findall(_VALUE.sub(" ", _LABEL.sub("", sentence)))]
    content = [w for w in words if w not in _STOP and len(w) > 2]
    return frozenset(itertools.pairwise(content))


#: A rolling brief carries the user's messages on, and every compaction reads their
#: values again (`stale_values`): each message is read once.
@functools.lru_cache(maxsize=8192)
def _values(text: str) -> frozenset[str]:
    return frozenset(v.strip(".,").lower() for v in _VALUE.findall(text))


def _kind(value: str) -> str:
    """What sort of value: an amount, a path, a host, an identifier or a number."""
    if value[:1] in "$€£":
        return "amount"
    if "/" in value:
        return "path"
    if "." in value.strip(".") and not value.replace(".", "").replace(",", "").isdigit():
        return "host"
    if "_" in value:
        return "identifier"
    return "number"


def _restates(older: _Claim, newer: _Claim) -> bool:
    """`newer` says the same subject as `older` with other values of the same sort."""
    if not older.values or not newer.values or older.values <= newer.values:
        return False
    return bool(older.kinds & newer.kinds) and bool(older.subject & newer.subject)


class _Later:
    """The sentences with a value said after the one in hand, found by subject pair.

    A sentence is compared only with those that share a pair of its words, not with
    every later one.
    """

    def __init__(self) -> None:
        self._by_pair: dict[tuple[str, str], list[_Claim]] = {}

    def restate(self, claim: _Claim) -> bool:
        if not claim.values:
            return False
        return any(
            _restates(claim, newer)
            for pair in claim.subject
            for newer in self._by_pair.get(pair, ())
        )

    def add(self, claim: _Claim) -> None:
        if claim.values:
            for pair in claim.subject:
                self._by_pair.setdefault(pair, []).append(claim)


def supersede(items: Sequence[str]) -> list[str]:
    """`items` (oldest first) without the sentences a later item restates with new values.

    An item whose every sentence was restated is left out; every other item keeps its
    text but for the stale sentences.
    """
    later = _Later()
    kept: list[str] = []
    for item in reversed(items):
        claims = [_claim(s) for s in _sentences(item)]
        stale = [c.text for c in claims if later.restate(c)]
        for claim in claims:
            if claim.text not in stale:
                later.add(claim)
        if len(stale) == len(claims):
            continue
        text = item
        for sentence in stale:
            text = text.replace(sentence, "", 1)
        kept.append(" ".join(text.split()))
    return kept[::-1]


def stale_values(items: Sequence[str]) -> frozenset[str]:
    """The values (lowercased) said only in sentences a later item restates.

    What a summary must no longer carry: `$500` once the budget cap became `$800`.
    """
    said = frozenset(v for item in items for v in _values(item))
    # No value holds a space, so the values of the kept items joined by spaces are
    # those of each item: read one by one, each is a cache hit at the next compaction.
    kept = frozenset(v for item in supersede(items) for v in _values(item))
    return said - kept


def is_stale(value: str, stale: frozenset[str]) -> bool:
    """Whether an identifier (as the entity extractor wrote it) is one of `stale`."""
    return value.strip(".,").lower() in stale
