from __future__ import annotations

import json
from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph.entities import critical_entities, missing_entities
from context_graph.testing import WordCounter
from processors.distill import distill_text
from processors.distill.light import collapse_repeats, light, minify_json, overdraw

#: JSON values whose strings hold separators, quotes, escapes and whitespace.
_JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.text(alphabet=st.sampled_from('ab ,:"\\\n\té{}[]'), max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(alphabet="ab ,:", max_size=4), inner, max_size=4)
    ),
    max_leaves=12,
)


def _body(text: str, **kwargs: str) -> str:
    """The distilled text without its header line."""
    return distill_text(text, "light", count=WordCounter().count, **kwargs).text.split("\n", 1)[1]


class TestLight:
    def test_whitespace_is_normalised(self) -> None:
        """Trailing spaces, CRLF ends and runs of blank lines go; leading blank lines too."""
        text = "\n\nfirst line   \r\nsecond\t \n\n\n\nthird\n\n"
        assert _body(text) == "first line\nsecond\n\nthird"

    def test_consecutive_duplicates_get_a_count(self) -> None:
        """Identical consecutive lines become one with `(xN)`; separated repeats stay."""
        lines = ["Cloning test database"] * 4 + ["ok", "Cloning test database"]
        assert collapse_repeats(lines) == [
            "Cloning test database (x4)",
            "ok",
            "Cloning test database",
        ]
        assert _body("\n".join(lines)) == "Cloning test database (x4)\nok\nCloning test database"

    def test_source_code_keeps_layout_and_repeats(self) -> None:
        """Code keeps indentation, inner spaces and repeated lines such as `end`."""
        code = "defmodule A do\n  def f(x) do\n    x  +  1\n  end\nend\nend\n"
        assert light(code.split("\n"), content_type="code") == code.rstrip("\n")

    def test_colour_codes_go(self) -> None:
        """ANSI colour sequences are removed, the text between them stays."""
        assert _body("\x1b[31mERROR\x1b[0m: disk full on /dev/sda1\nsecond line") == (
            "ERROR: disk full on /dev/sda1\nsecond line"
        )

    def test_gutters_lose_padding_but_keep_numbered_blank_lines(self) -> None:
        """`     1→x` becomes `1→x`; a numbered blank line keeps its number."""
        lines = ["     1→import os", "     2→", "     3→", "     4→print(os.sep)", "     5→"]
        assert light(lines, content_type="python") == "1→import os\n2→\n3→\n4→print(os.sep)\n5→"

    def test_json_loses_whitespace_between_tokens_only(self) -> None:
        """Pretty JSON goes on one line; strings (spaces and escapes inside) are untouched."""
        value = {"name": "a  b", "items": [1, 2, {"path": 'x \\" y'}], "ok": True}
        pretty = json.dumps(value, indent=4)
        assert minify_json(pretty) == json.dumps(value)
        assert json.loads(_body(pretty)) == value

    def test_json_keeps_the_originals_separators(self) -> None:
        """Spaced separators stay spaced, so a line of the original is a piece of the result.

        A tool that answers `{"id": "A1", "status": "ok"}` is sent as it came; a compact
        original stays compact; separators inside strings are never touched.
        """
        spaced = '{"reservation_id": "OBUT9V", "flights": [{"date": "2024-05-20"}, 3]}'
        assert minify_json(spaced) == spaced
        compact = '{"note":"a, b: c","items":[1,2]}'
        assert minify_json(compact) == compact
        pretty = '{\n  "status": "ok",\n  "error": null\n}'
        assert '"status": "ok",' in minify_json(pretty)

    @given(_JSON_VALUES, st.sampled_from([None, 1, 2, 4, "\t"]))
    @settings(max_examples=200)
    def test_json_minified_like_json_dumps(self, value: object, indent: int | str | None) -> None:
        """Any dump, pretty or not, comes out as the same value spaced like `json.dumps`.

        A compact dump stays compact; the result always parses back to the value.
        """
        dumped = json.dumps(value, indent=indent)
        assert minify_json(dumped) == json.dumps(value)
        compact = json.dumps(value, separators=(",", ":"))
        assert minify_json(compact) == compact
        assert json.loads(minify_json(dumped)) == value

    def test_rulers_shrink_but_progress_dots_stay(self) -> None:
        """A run of `=` shrinks to ten; pytest's dots count tests and are kept."""
        text = "=" * 40 + " test session starts " + "=" * 40 + "\n" + "." * 60 + "F"
        assert _body(text) == "=" * 10 + " test session starts " + "=" * 10 + "\n" + "." * 60 + "F"

    def test_carriage_return_redraws_are_kept_until_medium(self) -> None:
        """Light keeps a redrawn progress line whole; medium keeps what a terminal shows."""
        line = "10 kB 27.2 MB/s\r20 kB 30.1 MB/s\r383 kB done"
        assert overdraw(line) == "383 kB done"
        assert "27.2" in _body(f"{line}\nnext")
        medium = distill_text(f"{line}\n" * 50, "medium", count=WordCounter().count).text
        assert "27.2" not in medium and "383 kB done" in medium


_WORDS = st.sampled_from(
    ["src/app/main.py", "ValueError", "HAT170", "2024-05-20", "1,234", "job_id", "ok", "  ", ""]
)


class TestLightProperties:
    @settings(max_examples=80, deadline=None)
    @given(lines=st.lists(st.lists(_WORDS, max_size=6).map(" ".join), max_size=40))
    def test_light_keeps_every_entity(self, lines: Sequence[str]) -> None:
        """Light distillation keeps every critical entity of the original."""
        text = "\n".join(lines)
        out = distill_text(text, "light", count=WordCounter().count).text
        assert missing_entities(critical_entities(text), out) == []

    @settings(max_examples=80, deadline=None)
    @given(lines=st.lists(st.text(max_size=40), max_size=30))
    def test_light_never_adds_lines(self, lines: Sequence[str]) -> None:
        """Light never makes the text longer, in characters or in lines."""
        text = "\n".join(lines)
        body = _body(text)
        assert len(body) <= len(text)
        assert body.count("\n") <= text.count("\n")
