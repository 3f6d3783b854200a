"""Splitting shell commands into words: the quote-free fast path is exactly POSIX shlex."""

from __future__ import annotations

import shlex

from hypothesis import given
from hypothesis import strategies as st

from processors.summarize.facts import _shell_paths, _shell_words

# Words, the whitespace shlex knows and the kinds it does not, and shell punctuation.
PIECES = st.sampled_from(
    ["ls", "-la", "src/app/main.py", "cat", ">", "out.txt", "#", "x=1", "$HOME", "*.py",
     " ", "  ", "\t", "\n", "\r", "\x0b", "\x0c", "\xa0", "\u2003", "é", "", "=", "~/a"]
)  # fmt: skip


def _shlex(segment: str) -> list[str]:
    try:
        return shlex.split(segment, comments=False)
    except ValueError:
        return segment.split()


@given(st.lists(PIECES | st.text(max_size=6), max_size=12).map("".join))
def test_every_segment_splits_as_shlex_splits_it(segment: str) -> None:
    assert _shell_words(segment) == _shlex(segment)


@given(st.lists(PIECES | st.sampled_from(["'a b'", '"c d"', "\\ ", "'", '"']), max_size=10))
def test_quoted_segments_still_go_through_shlex(parts: list[str]) -> None:
    segment = " ".join(parts)
    assert _shell_words(segment) == _shlex(segment)


def test_a_command_reads_and_writes_the_paths_it_names() -> None:
    _shell_paths.cache_clear()
    read, written = _shell_paths("cat src/app/main.py | grep -n port > out/ports.txt")
    assert read == ("src/app/main.py",)
    assert written == ("out/ports.txt",)
    read, written = _shell_paths("sed -i 's/a b/c/' 'conf/app.toml'")  # through shlex
    assert (read, written) == ((), ("conf/app.toml",))
