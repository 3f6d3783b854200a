"""What the data layer remembers process-wide, and `clear_caches` to forget it.

Some answers depend on a text alone and are asked for again and again: the critical
entities of a text and of each of its lines (`context_graph.entities`). They are
memoized for the whole process, bounded by entry count. Clearing changes no answer;
it frees the memory and makes the next call pay the first computation again, as in a
new process.

Kept on purpose, because they hold nothing a session computed: the loaded tokenizer
encodings and the shared default counter (`context_graph.tokens`), each node class's
field defaults (`context_graph.graph.node_build`). A graph's `NodeTokenCache` belongs
to its graph and goes with it.
"""

from __future__ import annotations

from context_graph import entities

__all__ = ["clear_caches"]


def clear_caches() -> None:
    """Forget every memo of session text that `context_graph` keeps process-wide."""
    entities.clear_cache()
