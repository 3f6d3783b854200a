r"""What the user said that a summary must keep, in any language, and whether it did.

No list of cue words decides which of the user's sentences matter: "禁止修改 tests/",
"Skip the invoices table." and "Mia prefers short lists." carry none of "must", "never"
or "please", yet each is an instruction. Every sentence of the user's later messages is
kept, unless a later message restated it with another value (`updates.supersede`), or it
lies past the head of a message too long to keep whole (that message's head is what a
brief keeps). A summary keeps a sentence when it holds the sentence verbatim, or holds
every one of its words on a single line: the user's own words, with its values beside
them, in whatever frame the summary puts around them.

```python
said = user_sentences(["Skip the invoices table. 禁止修改 tests/ 目录。"], message_chars=2_000)
lost_sentences(said, "# Brief\n- Skip the invoices table.")  # ['禁止修改 tests/ 目录。']
```
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from processors.summarize.facts import clip, dedupe
from processors.summarize.updates import supersede

__all__ = ["MESSAGE_CHARS", "lost_sentences", "said_in", "split_sentences", "user_sentences"]

#: How long one of the user's messages may be in a brief: a longer one keeps its head.
MESSAGE_CHARS = 2_000

#: A sentence ends at `.`, `!` or `?` before a space, at a full-width stop (no space
#: needed after it), or at a line break.
_SENTENCE_END = re.compile("(?<=[.!?])\\s+|(?<=[\u3002\uff01\uff1f])\\s*|\\n+")
#: A word in any script: a run of letters, digits or underscores (a CJK run is one word).
_WORD = re.compile(r"\w+")
#: What `facts.clip` ends a cut text with: the sentence it ends was cut open.
_CUT = " [...]"
#: An element an agent harness wraps what it adds to a user turn in: a tag name with a
#: hyphen or an underscore (`<system-reminder>`, `<command-message>`,
#: `<local-command-stdout>`, `<ide_opened_file>`). Its text is the harness's, not the
#: user's; a lone end tag closes one whose start the head cut off.
_HARNESS = re.compile(
    r"<([a-z][a-z\d]*(?:[-_][a-z\d]+)+)\b[^<>]*>.*?</\1\s*>|</[a-z][a-z\d]*(?:[-_][a-z\d]+)+\s*>",
    re.IGNORECASE | re.DOTALL,
)


def split_sentences(text: str) -> list[str]:
    """The sentences of `text`, each on one line, those without a word left out."""
    found = (" ".join(piece.split()) for piece in _SENTENCE_END.split(text))
    return [sentence for sentence in found if _WORD.search(sentence)]


def user_sentences(messages: Sequence[str], *, message_chars: int) -> list[str]:
    """The sentences a summary of `messages` (oldest first) must keep, in order.

    Each message is taken as a brief keeps it (its head, when longer than
    `message_chars`); a sentence a later message restates with another value is not
    required, nor is the sentence a cut ends in, nor what a harness wrapped in its tags.
    """
    kept = supersede([clip(message, message_chars) for message in messages if message.strip()])
    return dedupe(
        sentence
        for message in kept
        for sentence in split_sentences(_HARNESS.sub(" ", message))
        if not sentence.endswith(_CUT)
    )


def _words(text: str) -> list[str]:
    return [w.casefold() for w in _WORD.findall(text)]


def said_in(sentence: str, text: str) -> bool:
    """Whether `text` keeps `sentence`: verbatim, or all its words on one line."""
    return _Kept(text).keeps(sentence)


class _Kept:
    """A text read once for many `keeps` questions.

    A brief is checked against every sentence the user said since the session began:
    flattening it and reading each line's words once per sentence cost more than
    the rest of the check.
    """

    def __init__(self, text: str) -> None:
        self._text = text
        self._flat = " ".join(text.split())
        self._lines: list[tuple[str, set[str]]] | None = None

    def keeps(self, sentence: str) -> bool:
        """Whether the text holds `sentence` verbatim, or all its words on one line."""
        if " ".join(sentence.split()) in self._flat:
            return True
        words = _words(sentence)
        return any(_all_on(words, folded, present) for folded, present in self._read_lines())

    def _read_lines(self) -> list[tuple[str, set[str]]]:
        """Each line casefolded, with its words (read at the first sentence not verbatim)."""
        if self._lines is None:
            folded = (line.casefold() for line in self._text.splitlines())
            self._lines = [(line, set(_words(line))) for line in folded]
        return self._lines


def _all_on(words: Sequence[str], folded: str, present: set[str]) -> bool:
    """Whether every word is on the line: a whole word, or inside a run (CJK has no spaces)."""
    return all(word in present or (not word.isascii() and word in folded) for word in words)


def lost_sentences(sentences: Sequence[str], text: str) -> list[str]:
    """The sentences of `sentences` that `text` does not keep, in order."""
    kept = _Kept(text)
    return [sentence for sentence in sentences if not kept.keeps(sentence)]
