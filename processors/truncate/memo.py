"""Reusing a cut when the same output is cut again to the same limits.

A compaction whose proposal waits (the cost guard) or is not applied leaves its outputs
as they were, and the next compaction offers the truncator the same texts again: in a
long session most real cuts repeat one made earlier. `truncate_text` is a pure function
of the text, the limits, the policy and the tokenizer, so a cut is reused when all of
them are the same. Cuts live with the token cache whose counter made them (it fixes the
tokenizer), and go with it; only real cuts are kept, since finding that a text already
fits costs one cached count.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, TypeVar
from weakref import WeakKeyDictionary

from context_graph.graph.node_tokens import NodeTokenCache
from processors.truncate.fit import Policy

__all__ = ["MEMO_CHARS", "MEMO_SIZE", "CutKey", "remembered_cut"]

#: Distinct cuts remembered per token cache (least recently used forgotten first).
MEMO_SIZE = 512
#: Characters of cut texts (the outputs, before the cut) remembered per token cache:
#: the outputs cut are the long ones, so the count alone would not bound the memory.
MEMO_CHARS = 2_000_000

#: (text, max_tokens, max_bytes, policy, context_lines): what a cut depends on besides
#: the tokenizer.
CutKey = tuple[str, int, int | None, Policy, int]

#: A cut (the truncator's `Truncation`; this module does not import the truncator,
#: which imports it).
_Cut = TypeVar("_Cut")


class _Cuts:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.entries: OrderedDict[CutKey, Any] = OrderedDict()
        self.chars = 0


_memos: WeakKeyDictionary[NodeTokenCache, _Cuts] = WeakKeyDictionary()
_memos_lock = threading.Lock()


def remembered_cut(
    tokens: NodeTokenCache, key: CutKey, cut: Callable[[], _Cut | None]
) -> _Cut | None:
    """An earlier real cut for `key` made with `tokens`' counter, or `cut()` (kept if real)."""
    with _memos_lock:
        cuts = _memos.get(tokens)
        if cuts is None:
            cuts = _memos[tokens] = _Cuts()
    with cuts.lock:
        earlier: _Cut | None = cuts.entries.get(key)
        if earlier is not None:
            cuts.entries.move_to_end(key)
            return earlier
    result = cut()
    if result is not None and len(key[0]) <= MEMO_CHARS:
        with cuts.lock:
            if key not in cuts.entries:
                cuts.chars += len(key[0])
            cuts.entries[key] = result
            cuts.entries.move_to_end(key)
            while len(cuts.entries) > MEMO_SIZE or cuts.chars > MEMO_CHARS:
                forgotten, _ = cuts.entries.popitem(last=False)
                cuts.chars -= len(forgotten[0])
    return result
