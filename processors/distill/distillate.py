"""`Distillate`: what distilling one text gives, apart from the rules that made it.

Its own module so that the memo of results (`_memo`) and the distiller that makes them
can both name it without importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass

from processors.distill.common import Level
from processors.distill.detect import ContentType

__all__ = ["Distillate"]


@dataclass(frozen=True)
class Distillate:
    """The outcome of distilling one text.

    Attributes:
        text: The distilled text, header first.
        content_type: What the body was detected as.
        level: The level applied.
        tokens_before: Tokens of the original text.
        tokens_after: Tokens of `text`, counted as its header plus its body.
    """

    text: str
    content_type: ContentType
    level: Level
    tokens_before: int
    tokens_after: int
