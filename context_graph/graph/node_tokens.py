"""What a node costs in tokens, and the per-graph cache of those counts.

`countable_text` says which of a node's content costs tokens (text, thinking, a call's
name and arguments, a file's path) and what is a flat estimate (media);
`NodeTokenCache` counts it once per distinct content, with a `TokenCounter`.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from itertools import pairwise

from context_graph.errors import ConfigurationError
from context_graph.graph.content import (
    DocumentPart,
    ImagePart,
    ReasoningPart,
    RedactedThinkingPart,
    TextPart,
    ThinkingPart,
)
from context_graph.graph.nodes import FileNode, Node, ToolCallNode
from context_graph.tokens.counting import SeamCounter, TiktokenCounter, TokenCounter, seam_runs

__all__ = [
    "DOCUMENT_TOKENS",
    "IMAGE_TOKENS",
    "NodeTokenCache",
    "countable_pieces",
    "countable_text",
]

#: A flat estimate for one image: what Anthropic charges for an image near its size cap,
#: so that budgets err on the safe side when the dimensions are unknown.
IMAGE_TOKENS = 1600
#: A flat estimate for one document block whose data is not plain text.
DOCUMENT_TOKENS = 1600

# Characters after which a newline is a token of its own (see `NodeTokenCache.count_node`).
_ASCII_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")


def countable_text(node: Node) -> tuple[str, int]:
    """Return the text of a node that costs tokens, and a flat count for its media.

    Thinking blocks count (they are sent back); images and non-text documents count as a
    flat estimate because their pixels are not text.
    """
    pieces, flat = countable_pieces(node)
    return "\n".join(pieces), flat


def countable_pieces(node: Node) -> tuple[list[str], int]:
    """The texts `countable_text` joins with newlines, in order, and the flat count."""
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
        elif isinstance(part, ReasoningPart):
            # Counted like thinking: its summary and payload go back to the provider.
            pieces.extend(part.summary)
            if part.encrypted_content is not None:
                pieces.append(part.encrypted_content)
        elif isinstance(part, ImagePart):
            flat += IMAGE_TOKENS
        elif isinstance(part, DocumentPart):
            if part.media_type == "text/plain" and part.data is not None:
                pieces.append(part.data)
            else:
                flat += DOCUMENT_TOKENS
    return pieces, flat


class NodeTokenCache:
    """Per-node token counts, cached by content so each node is counted once.

    Two nodes with the same countable content share one entry, so re-ingesting a
    rendered history, or a summary that repeats a node, costs nothing extra.

    Texts counted through `count_node` (the pieces of nodes, which the graph keeps for
    good) are remembered for good. Other texts (a truncator's candidate cuts, distiller
    probes, joined message bodies) are remembered in two generations of at most
    `scratch_chars` characters each: when the newer fills, the older is forgotten and
    the newer takes its place; a text found in the older moves back to the newer. So a
    long session's transient texts cost bounded memory, and a text asked for again and
    again (a request's message text, at every render) stays. Forgetting only costs a
    second encoding: a count never changes.
    """

    #: Characters of transient text per generation (a few MB of strings at most).
    SCRATCH_CHARS = 1_000_000
    #: Nodes whose count `count_node` remembers by the node object; past that many it
    #: starts over (candidate nodes a processor made and dropped must not pile up).
    NODE_MEMO = 65_536

    def __init__(self, counter: TokenCounter, *, scratch_chars: int | None = None) -> None:
        self.counter = counter
        self._is_seam = counter.is_seam if isinstance(counter, SeamCounter) else None
        self._by_text: dict[str, int] = {}
        self._recent: dict[str, int] = {}
        self._older: dict[str, int] = {}
        self._recent_chars = 0
        # Node id -> (the node object counted, its count): nodes are frozen, so the same
        # object always counts the same, and the triggers, processors and checks ask for
        # the counts of the same nodes again and again.
        self._by_node: dict[str, tuple[Node, int]] = {}
        self._scratch_chars = self.SCRATCH_CHARS if scratch_chars is None else scratch_chars
        if type(self._scratch_chars) is not int or self._scratch_chars < 0:
            msg = f"NodeTokenCache: scratch_chars must be an int >= 0, got {scratch_chars!r}"
            raise ConfigurationError(msg)
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._by_text) + len(self._recent) + len(self._older)

    @property
    def transient_chars(self) -> int:
        """Characters of transient text remembered now (both generations)."""
        return self._recent_chars + sum(map(len, self._older))

    def count_node(self, node: Node) -> int:
        """Return the content tokens of `node` (no per-message overhead).

        The number is `count` of `countable_text(node)` plus its flat media count. That
        text joins the node's pieces with newlines (a call's name and arguments, a file's
        path and text, an assistant's thinking and text), while a rendered request counts
        some pieces on their own; counting the joined text here and the pieces at render
        would tokenize most text twice. So where the counter's tokenizer provably cuts
        at each newline (`SeamCounter.is_seam`), the pieces are counted (and cached) one
        by one: a piece that ends in an ASCII letter or digit keeps its own tokens in
        front of the newline, which is one more token. Anywhere else the joined text is
        counted whole. Either way the same number. The count of a node object asked for
        again is remembered (`NODE_MEMO`).
        """
        known = self._by_node.get(node.id)
        if known is not None and known[0] is node:
            return known[1]
        counted = self._count_node(node)
        with self._lock:
            if len(self._by_node) >= self.NODE_MEMO:
                self._by_node.clear()
            self._by_node[node.id] = (node, counted)
        return counted

    def _count_node(self, node: Node) -> int:
        pieces, flat = countable_pieces(node)
        is_seam = self._is_seam
        if (
            is_seam is None
            or len(pieces) < 2
            or not all(is_seam(left + "\n", right) for left, right in pairwise(pieces))
        ):
            return self._count_kept("\n".join(pieces)) + flat
        total = flat + self._count_kept(pieces[-1])
        for piece in pieces[:-1]:
            if piece and piece[-1] in _ASCII_ALNUM:
                total += self._count_kept(piece) + 1
            else:
                total += self._count_kept(piece + "\n")
        return total

    def _count_kept(self, text: str) -> int:
        """`count_text` for a node's piece: remembered for good."""
        counted = self._by_text.get(text)
        if counted is not None:
            return counted
        counted = self._transient(text)
        if counted is None:
            counted = self.counter.count(text)
        with self._lock:
            self._by_text[text] = counted
        return counted

    def _transient(self, text: str) -> int | None:
        """The count of a transient text in either generation, or `None`.

        One found in the older generation moves to the newer.
        """
        counted = self._recent.get(text)
        if counted is None:
            counted = self._older.get(text)
            if counted is not None:
                self._remember(text, counted)
        return counted

    def _remember(self, text: str, counted: int) -> None:
        with self._lock:
            if text not in self._recent:
                self._recent[text] = counted
                self._recent_chars += len(text)
            if self._recent_chars > self._scratch_chars:
                self._older, self._recent, self._recent_chars = self._recent, {}, 0

    def count_text(self, text: str) -> int:
        """Return the tokens of `text`, from the cache when seen before."""
        # The renderer asks for every message's text at every render: the lasting table
        # is looked up inline, before a call for the transient generations.
        cached = self._by_text.get(text)
        if cached is None:
            cached = self._transient(text)
        if cached is not None:
            return cached
        counted = self.counter.count(text)
        self._remember(text, counted)
        return counted

    def count_pieces(self, pieces: Sequence[str]) -> int:
        """Return the tokens of `"".join(pieces)`, and remember them for the joined text.

        The pieces are cut into runs where the counter proves two neighbouring (non-empty)
        pieces meet at a seam (`SeamCounter.is_seam`), and the count is the sum of the
        runs' counts (`seam_runs`), each from the cache when counted before (through
        `count_text` or `count_pieces`). The seam contract makes that sum exactly what
        encoding the joined text gives; without a proven seam the joined text is counted
        whole. So a caller that has counted the pieces of a new text through this cache
        (and only the cache decides how they add up) saves encoding the whole text when
        it is counted next.
        """
        text = "".join(pieces)
        cached = self._by_text.get(text)
        if cached is None:
            cached = self._transient(text)
        if cached is not None:
            return cached
        runs = seam_runs(pieces, self._is_seam)
        if len(runs) < 2:
            return self.count_text(text)
        counted = sum(self.count_text("".join(pieces[i] for i in run)) for run in runs)
        self._remember(text, counted)
        return counted

    def counts_like(self, counter: TokenCounter) -> bool:
        """Whether `counter` gives the same counts as this cache's counter.

        True when it is the same counter, or both are `TiktokenCounter`s of one encoding
        (the same encoding gives the same tokens); a caller can then count through the
        cache instead. False otherwise, even for counters that happen to agree.
        """
        own = self.counter
        if counter is own:
            return True
        return (
            type(counter) is TiktokenCounter
            and type(own) is TiktokenCounter
            and counter.name == own.name
        )
