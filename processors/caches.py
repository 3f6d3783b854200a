"""What the processors remember across calls, process-wide, and how to forget it.

Some answers depend on a text alone and are asked for again at every compaction: the
critical entities of a text, the paths a shell command touches, whether a tool output
failed, the entities an agent's turn names, a brief's identifiers as code spans, the
values and subject of a user's sentence, the values of a user's message (a rolling
brief carries the user's messages on), the decisions and questions of an assistant's
turn (a summary sized to its room reads its span twice), the flattened text and words
of the turns a summary's lines are traced to. They are memoized for the whole process
(bounded by entry count). Clearing changes no result; it frees the memory and makes the
next call pay the first computation again.
The benchmarks clear before every replay, so that no contender starts with what an
earlier replay of the same session computed.

Each package clears its own: `context_graph.caches.clear_caches` the data layer's memos
(`critical_entities`), the family modules here theirs.
"""

from __future__ import annotations

from context_graph import caches as _data_layer
from processors.distill.references import clear_cache as _clear_references
from processors.summarize.facts import clear_cache as _clear_facts
from processors.summarize.lineage import clear_cache as _clear_lineage
from processors.summarize.quoting import clear_cache as _clear_quoting
from processors.summarize.turns import clear_cache as _clear_turns
from processors.summarize.updates import clear_cache as _clear_updates

__all__ = ["clear_caches"]


def clear_caches() -> None:
    """Forget every process-wide memo of the processors and of the data layer below them."""
    _data_layer.clear_caches()
    _clear_facts()
    _clear_lineage()
    _clear_references()
    _clear_quoting()
    _clear_turns()
    _clear_updates()
