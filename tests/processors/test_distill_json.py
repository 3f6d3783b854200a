from __future__ import annotations

import json
from typing import Any

import pytest

from context_graph.testing import WordCounter
from processors.distill import distill_text
from processors.distill.json_ import is_key_field

RESERVATIONS: dict[str, Any] = {
    "user_id": "sophia_silva_7557",
    "status": "active",
    "reservations": [
        {
            "reservation_id": f"R{i:05d}",
            "origin": "JFK",
            "destination": "ATL",
            "flights": [{"flight_number": f"HAT{100 + i}", "date": "2024-05-24", "price": 74 + i}],
            "notes": "Passenger asked for a window seat and a vegetarian meal; " * 4,
        }
        for i in range(40)
    ],
    "error": None,
    "message": "40 reservations found for sophia_silva_7557 in the last twelve months of history",
}


def _distill(value: Any, level: str) -> tuple[str, Any]:
    text = distill_text(json.dumps(value, indent=2), level, count=WordCounter().count).text  # type: ignore[arg-type]
    header, body = text.split("\n", 1)
    assert header.startswith(f"[distilled JSON, {level}: ")
    return body, json.loads(body)


class TestJson:
    @pytest.mark.parametrize("level", ["medium", "heavy"])
    def test_output_is_valid_json_with_every_top_key(self, level: str) -> None:
        """The distillate parses as JSON and keeps every top-level key in order."""
        _, shaped = _distill(RESERVATIONS, level)
        assert list(shaped) == list(RESERVATIONS)

    def test_key_fields_stay_verbatim(self) -> None:
        """ids, status, error and message values stay exactly."""
        _, shaped = _distill(RESERVATIONS, "heavy")
        assert shaped["user_id"] == RESERVATIONS["user_id"]
        assert shaped["status"] == "active"
        assert shaped["error"] is None
        assert shaped["message"] == RESERVATIONS["message"]
        assert shaped["reservations"][0]["reservation_id"] == "R00000"

    def test_long_arrays_become_first_items_and_a_count(self) -> None:
        """A long array keeps its first items and says how many more there are."""
        _, medium = _distill(RESERVATIONS, "medium")
        items = medium["reservations"]
        shown = [item for item in items if isinstance(item, dict)]
        assert items[-1] == f"<+{40 - len(shown)} more items>"
        assert 1 <= len(shown) <= 5

    def test_long_strings_are_cut(self) -> None:
        """A long string that is not a key field is cut to a prefix or its length."""
        _, medium = _distill(RESERVATIONS, "medium")
        note = medium["reservations"][0]["notes"]
        original = RESERVATIONS["reservations"][0]["notes"]
        assert note != original
        assert note.startswith(original[:16]) or note == f"<str, {len(original):,} chars>"

    def test_deep_nesting_becomes_a_placeholder(self) -> None:
        """Containers nested deeper than the level allows are summarized."""
        value: Any = {"leaf": [1, 2, 3]}
        for depth in range(30):
            value = {f"level_{depth}": value, "id": depth}
        body, shaped = _distill(value, "heavy")
        assert "<object: " in body
        assert shaped["id"] == 29
        assert len(body) < len(json.dumps(value))

    def test_short_values_are_never_made_longer(self) -> None:
        """Strings shorter than a placeholder stay as they are."""
        value = {"rows": [{"code": "X1", "city": "Paris", "zip": "75001"} for _ in range(30)]}
        _, shaped = _distill(value, "heavy")
        assert shaped["rows"][0] == {"code": "X1", "city": "Paris", "zip": "75001"}

    @pytest.mark.parametrize(
        ("key", "expected"),
        [
            ("id", True), ("user_id", True), ("reservationId", True), ("name", True),
            ("status", True), ("error", True), ("message", True), ("file_path", True),
            ("notes", False), ("price", False), ("description", False),
        ],
    )  # fmt: skip
    def test_key_fields(self, key: str, expected: bool) -> None:
        """Ids, names, status, errors, messages and paths are key fields."""
        assert is_key_field(key) is expected
