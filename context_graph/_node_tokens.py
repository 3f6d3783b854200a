"""A node's content tokens, counted as the pieces a rendered request counts.

`countable_text` joins a node's pieces with newlines (a call's name and arguments, a
file's path and text, an assistant's thinking and text), while a rendered request
counts some of those pieces on their own (an OpenAI request sends a call's arguments,
a file's text and an assistant's text without the rest). Counting the joined text at
ingest and the pieces at render would tokenize most of the text twice.

Where the counter's tokenizer provably cuts the joined text at each newline
(`SeamCounter.is_seam`), the joined count is the sum of the counts of each piece with
its newline, and a piece that ends in an ASCII letter or digit keeps its own tokens in
front of a final newline, which is one more token. So the count is the same number,
and the pieces the renderer will look up are in the cache already. Anywhere else the
joined text is counted, as before.
"""

from __future__ import annotations

from itertools import pairwise

from context_graph.nodes import Node
from context_graph.tokens import NodeTokenCache, countable_pieces

__all__ = ["node_tokens"]

_ASCII_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")


def node_tokens(cache: NodeTokenCache, node: Node) -> int:
    """The same number as `cache.count_node(node)`, counted piece by piece where exact."""
    pieces, flat = countable_pieces(node)
    is_seam = getattr(cache.counter, "is_seam", None)
    if len(pieces) < 2 or is_seam is None:
        return cache.count_node(node)
    for left, right in pairwise(pieces):
        if not is_seam(left + "\n", right):
            return cache.count_node(node)
    count = cache.count_text
    total = flat + count(pieces[-1])
    for piece in pieces[:-1]:
        if piece and piece[-1] in _ASCII_ALNUM:
            total += count(piece) + 1
        else:
            total += count(piece + "\n")
    return total
