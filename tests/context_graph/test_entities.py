from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from context_graph.entities import critical_entities, missing_entities

_END = r"(?!\w|\.\w)"
# The rules as first written, each scanned over every text: the reference the faster
# scan (skipped rules, the guarded path pattern) must agree with exactly.
_REFERENCE = tuple(
    re.compile(pattern)
    for pattern in (
        r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?(?:\.\d+)?Z?)?" + _END,
        r"https?://[^\s\"'<>)\]]+",
        r"(?:\.{0,2}/)?(?:[\w.-]+/)+[\w.-]+|\b[\w-]+\.(?:py|js|ts|tsx|go|rs|java|rb|md|json|"
        r"ya?ml|toml|txt|cfg|ini|sh|sql|html|css|ex|exs|c|h|cpp|hpp|lock)\b",
        r"\b[A-Z][A-Za-z]*(?:Error|Exception|Warning|Fault)\b",
        r"\b[A-Z][A-Z0-9]{1,9}-\d+\b",
        r"\b(?=[A-Z0-9]*\d)(?=[A-Z0-9]*[A-Z])[A-Z0-9]{5,12}\b",
        r"\bv?\d+\.\d+(?:\.\d+)+\b",
        r"\b[0-9a-f]{7,40}\b",
        r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b",
        r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b",
        r"\b[a-z]+(?:[A-Z][a-z0-9]+)+\b",
        r"(?<![\w.])\$?\d[\d,]{2,}(?:\.\d+)?" + _END + r"|(?<![\w.])\d+\.\d+" + _END,
        r"\b[\w.+-]+@[\w-]+\.[\w.-]+\b",
    )
)


def _reference_entities(text: str) -> list[str]:
    spans: list[tuple[int, int, str]] = []
    for pattern in _REFERENCE:
        for match in pattern.finditer(text):
            value = match.group(0).rstrip(".,;:")
            if len(value) >= 3:
                spans.append((match.start(), match.start() + len(value), value))
    spans.sort(key=lambda span: (span[0], -span[1]))
    found: dict[str, None] = {}
    covered_to = -1
    for _start, end, value in spans:
        if end <= covered_to:
            continue
        covered_to = max(covered_to, end)
        found.setdefault(value)
    return list(found)


# Texts dense in what the rules look at: path characters, separators, digits, capitals.
_ENTITY_ALPHABET = st.sampled_from(
    [*"aZ9_-./:@ \n$,", "py", ".json", "http", "://", "Error", "ab", "../", "2024-05-20", "f3"]
)


class TestCriticalEntities:
    @pytest.mark.parametrize(
        ("text", "entity"),
        [
            ("change reservation 8DQ3ZP please", "8DQ3ZP"),
            ("user mia_li_3668 asked", "mia_li_3668"),
            ("fix ABC-1234 today", "ABC-1234"),
            ("it costs $1,234.50.", "$1,234.50"),
            ("see src/app/main.py for it", "src/app/main.py"),
            ("open https://example.com/a?b=1 now", "https://example.com/a?b=1"),
            ("raised ValueError again", "ValueError"),
            ("call parseConfig first", "parseConfig"),
            ("at commit 3fa2b91c", "3fa2b91c"),
            ("upgrade to v2.3.1.", "v2.3.1"),
            ("on 2024-05-20T10:00:00Z", "2024-05-20T10:00:00Z"),
            ("mail ada@example.org", "ada@example.org"),
            ("edit setup.cfg", "setup.cfg"),
        ],
    )
    def test_finds_each_kind(self, text: str, entity: str) -> None:
        """Each kind of critical entity is found whole."""
        assert entity in critical_entities(text)

    def test_no_fragments_of_longer_entities(self) -> None:
        """The path inside a URL and the digits of a ticket key are not listed apart."""
        found = critical_entities("see https://example.com/a/b.py and ABC-1234")
        assert found == ["https://example.com/a/b.py", "ABC-1234"]

    def test_order_and_uniqueness(self) -> None:
        """Entities come once each, in order of first appearance."""
        assert critical_entities("HAT170 then 8DQ3ZP then HAT170") == ["HAT170", "8DQ3ZP"]

    def test_plain_prose_has_none(self) -> None:
        """Ordinary words are not entities."""
        assert critical_entities("Please help me fix the login page today.") == []

    def test_limit(self) -> None:
        """`limit` keeps the first ones."""
        assert critical_entities("AB-12 CD-22 EF-333", limit=2) == ["AB-12", "CD-22"]

    @given(st.text(max_size=300))
    def test_never_raises_and_entities_come_from_the_text(self, text: str) -> None:
        """Any text gives a list of substrings of it."""
        for entity in critical_entities(text):
            assert entity in text

    @given(st.lists(_ENTITY_ALPHABET, max_size=60).map("".join) | st.text(max_size=200))
    def test_same_as_every_rule_scanned_everywhere(self, text: str) -> None:
        """Skipping rules a text cannot match and guarding the path scan change nothing."""
        assert critical_entities(text) == _reference_entities(text)

    @pytest.mark.parametrize(
        "text",
        [
            "a.b/c x../foo/bar main.py/x foo.py-bar/baz a/b/ c ./x.sh /etc/hosts",
            "see https://example.com/a/b.py, ada@x.org and setup.cfg.",
            "long-word-without-slash.py then-more.json",
        ],
    )
    def test_same_as_reference_on_paths(self, text: str) -> None:
        """Paths next to dots, dashes and other paths come out as the plain scan finds them."""
        assert critical_entities(text) == _reference_entities(text)

    def test_answers_are_fresh_lists(self) -> None:
        """Changing a returned list does not change the next answer for the same text."""
        text = "see src/app/main.py and TICKET-1234"
        first = critical_entities(text)
        first.clear()
        assert critical_entities(text) == ["src/app/main.py", "TICKET-1234"]
        assert critical_entities(text, limit=1) == ["src/app/main.py"]


class TestMissingEntities:
    def test_garbled_identifier_is_missing(self) -> None:
        """ABC-1234 written as ABC-1243 counts as missing."""
        assert missing_entities(["ABC-1234", "src/x.py"], "fixed ABC-1243 in src/x.py") == [
            "ABC-1234"
        ]

    def test_nothing_missing(self) -> None:
        """All present gives an empty list."""
        assert missing_entities(["a_b"], "x a_b y") == []
