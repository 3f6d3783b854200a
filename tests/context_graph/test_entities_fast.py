from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from context_graph import entities
from context_graph.entities import critical_entities

# Pieces dense in what the rules look at, so lines hold entities at their edges, entities
# meet the newline, and paths, numbers and names sit next to each other.
_PIECES = st.sampled_from(
    [
        *"aZ9_-./:@ $,",
        "py",
        ".json",
        "http",
        "://",
        "Error",
        "ab",
        "../",
        "2024-05-20",
        "f3",
        "ABC-12",
        "3fa2b91c",
        "v2.3.1",
        "HAT170",
        "parseConfig",
        "1,234.5",
        "\r",
        "\t",
    ]
)
_LINE = st.lists(_PIECES, max_size=12).map("".join)
_TEXT = st.lists(_LINE, max_size=12).map("\n".join)


def _scan(text: str) -> tuple[str, ...]:
    """The entities of one scan of the whole text (the computation before the line memory)."""
    return tuple(dict.fromkeys(value for _start, value in entities._spans(text)))


def _uncached(text: str) -> tuple[str, ...]:
    """`_entities` without its whole-text memory (the line memory stays)."""
    return entities._entities.__wrapped__(text)


@pytest.fixture(name="fresh_memory", autouse=True)
def _fresh_memory() -> Iterator[None]:
    entities.clear_cache()
    yield
    entities.clear_cache()


class TestLineMemory:
    @given(_TEXT)
    def test_same_as_one_whole_scan(self, text: str) -> None:
        """With no line remembered, the entities are those of one scan of the whole text."""
        entities.clear_cache()
        assert _uncached(text) == _scan(text)

    @given(
        st.lists(_LINE, min_size=1, max_size=10), st.lists(st.lists(st.integers(0, 9), max_size=12))
    )
    def test_same_as_one_whole_scan_with_lines_remembered(
        self, pool: list[str], picks: list[list[int]]
    ) -> None:
        """Texts built from lines scanned before, in other orders and company, read the same."""
        entities.clear_cache()
        for pick in picks:
            text = "\n".join(pool[i % len(pool)] for i in pick)
            assert _uncached(text) == _scan(text)

    @pytest.mark.parametrize(
        "text",
        [
            "a_b\nc_d\ne_f\ng_h\ni_j\nk_l\nm_n",
            "x ABC-12\n1,234\nsrc/a.py\nsee 3fa2b91c\nv2.3.1\n\nHAT170 ok",
        ],
    )
    def test_each_line_keeps_its_own_entities(self, text: str) -> None:
        """After a text is read, each of its lines read alone gives its own entities."""
        assert critical_entities(text) == list(_scan(text))
        for line in text.split("\n"):
            assert _uncached(line) == _scan(line)

    def test_only_new_lines_are_scanned(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A text that repeats scanned lines scans only the lines it adds, once each."""
        scanned: list[str] = []
        spans = entities._spans

        def recording(text: str) -> list[tuple[int, str]]:
            scanned.append(text)
            return spans(text)

        monkeypatch.setattr(entities, "_spans", recording)
        assert critical_entities("see src/app.py\nraised ValueError") == [
            "src/app.py",
            "ValueError",
        ]
        assert critical_entities("raised ValueError\nticket ABC-12\nticket ABC-12") == [
            "ValueError",
            "ABC-12",
        ]
        assert scanned == ["see src/app.py\nraised ValueError", "ticket ABC-12"]

    def test_full_memory_starts_over(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """When the line memory is full it is emptied, and answers stay the same."""
        monkeypatch.setattr(entities, "_LINES_KEPT", 3)
        texts = ["a_b\nc_d", "e_f\na_b\ng_h", "c_d\ne_f", "i_j\nk_l\nm_n\no_p"]
        for text in texts:
            assert _uncached(text) == _scan(text)
            assert len(entities._LINES) <= max(3, text.count("\n") + 1)
