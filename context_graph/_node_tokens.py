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

from context_graph.nodes import (
    DocumentPart,
    FileNode,
    ImagePart,
    Node,
    RedactedThinkingPart,
    TextPart,
    ThinkingPart,
    ToolCallNode,
)
from context_graph.tokens import DOCUMENT_TOKENS, IMAGE_TOKENS, NodeTokenCache

__all__ = ["node_tokens"]

_ASCII_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")


def _pieces(node: Node) -> tuple[list[str], int]:
    """The pieces `countable_text` joins, and its flat count for media (kept in step)."""
    pieces: list[str] = []
    flat = 0
    if isinstance(node, ToolCallNode):
        pieces.append(node.name)
        pieces.append(node.arguments)
    elif isinstance(node, FileNode):
        pieces.append(node.path)
    for part in node.content:
        if isinstance(part, TextPart):
            pieces.append(part.text)
        elif isinstance(part, ThinkingPart):
            pieces.append(part.thinking)
        elif isinstance(part, RedactedThinkingPart):
            pieces.append(part.data)
        elif isinstance(part, ImagePart):
            flat += IMAGE_TOKENS
        elif isinstance(part, DocumentPart):
            if part.media_type == "text/plain" and part.data is not None:
                pieces.append(part.data)
            else:
                flat += DOCUMENT_TOKENS
    return pieces, flat


def node_tokens(cache: NodeTokenCache, node: Node) -> int:
    """The same number as `cache.count_node(node)`, counted piece by piece where exact."""
    pieces, flat = _pieces(node)
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
