"""Reusing a distillate when the same text is distilled again with the same answers.

Each compaction may offer the distiller the same outputs again (a proposal that was not
applied, a node distilled further). `distill_text` is a pure function of its arguments
and of what `keep` answers, so a result is reused when the text, level, path and tool
are the same and `keep` answers every question the first run asked the same way.
Results live with the token cache they were counted with, and go with it.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Container
from weakref import WeakKeyDictionary

from context_graph.graph.node_tokens import NodeTokenCache
from processors.distill.distillate import Distillate

__all__ = ["MEMO_SIZE", "VARIANTS", "AskedKeep", "remembered"]

#: Distinct (text, level, path, tool) keys remembered per token cache.
MEMO_SIZE = 512
#: Results kept per key (one per distinct set of answers `keep` gave).
VARIANTS = 4

_Key = tuple[str, str, str | None, str | None]


class AskedKeep:
    """A `keep` container that remembers every question and its answer."""

    __slots__ = ("_keep", "answers")

    def __init__(self, keep: Container[str]) -> None:
        self._keep = keep
        self.answers: dict[object, bool] = {}

    def __contains__(self, entity: object) -> bool:
        answer = self.answers.get(entity)
        if answer is None:
            answer = self.answers[entity] = entity in self._keep
        return answer


class _Results:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.entries: OrderedDict[_Key, list[tuple[dict[object, bool], Distillate]]] = OrderedDict()


_memos: WeakKeyDictionary[NodeTokenCache, _Results] = WeakKeyDictionary()
_memos_lock = threading.Lock()


def remembered(
    tokens: NodeTokenCache,
    key: _Key,
    keep: Container[str],
    run: Callable[[AskedKeep], Distillate],
) -> Distillate:
    """`run(asked)` for `key`, or an earlier run's result whose questions `keep` answers alike."""
    with _memos_lock:
        results = _memos.get(tokens)
        if results is None:
            results = _memos[tokens] = _Results()
    with results.lock:
        earlier = list(results.entries.get(key, ()))
    for answers, result in earlier:
        if all((entity in keep) == answer for entity, answer in answers.items()):
            return result
    asked = AskedKeep(keep)
    result = run(asked)
    with results.lock:
        variants = results.entries.setdefault(key, [])
        variants.append((asked.answers, result))
        del variants[:-VARIANTS]
        results.entries.move_to_end(key)
        while len(results.entries) > MEMO_SIZE:
            results.entries.popitem(last=False)
    return result
