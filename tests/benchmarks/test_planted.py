"""The planted-fact benchmark: its sessions, its scoring, and its controls."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import planted
from benchmarks.planted_sessions import KINDS, Item, make_session
from context_graph import TiktokenCounter
from context_graph.graph.events import UserTurn

BUDGET_CAP = Item(
    "constraint",
    "HARD CONSTRAINT: the budget cap is {value} total. Never exceed without explicit approval.",
    "budget cap",
    "$800",
    old_value="$500",
)


class TestScoring:
    def test_a_rule_cut_from_its_value_does_not_survive(self) -> None:
        """The value in another line than its rule's subject is a lost item."""
        text = "- Never exceed the budget cap without explicit approval.\nIdentifiers: `$800`"
        assert not planted.survives(BUDGET_CAP, text)
        assert planted.survives(BUDGET_CAP, "The budget cap is $800 total.")

    def test_the_last_statement_decides_staleness(self) -> None:
        """An updated item is stale when the last line stating it holds the old value."""
        assert planted.stale(BUDGET_CAP, "the budget cap is $800\n...\nthe budget cap is $500")
        assert not planted.stale(BUDGET_CAP, "the budget cap is $500\nthe budget cap is $800")
        assert not planted.stale(BUDGET_CAP, "nothing about it")

    def test_request_text_reads_every_string_of_a_body(self) -> None:
        """Nested strings of a request body come out one per line, in order."""
        body = {"messages": [{"role": "user", "content": [{"type": "text", "text": "a"}]}]}
        assert planted.request_text(body).splitlines() == ["user", "text", "a"]


class TestSessions:
    def test_every_item_is_said_and_every_update_follows_it(self) -> None:
        """Round 0 states each item verbatim; the round that updates says the new value."""
        session = make_session(3, rounds=2, steps=8)
        said = [
            "".join(part.text for part in event.content if hasattr(part, "text"))
            for events in session.round_events
            for event in events
            if isinstance(event, UserTurn)
        ]
        first_round = " ".join(said[:4])
        for item in session.items:
            assert item.statement() in first_round
        updated = [i for i in session.items_after(1) if i.old_value is not None]
        assert updated, "no item is updated"
        for item in updated:
            assert any(item.value in text for text in said[4:])
        assert {item.kind for item in session.items} == set(KINDS)

    def test_a_seed_makes_the_same_session(self) -> None:
        """Sessions are seeded: one seed, one session; another seed, another one."""
        assert make_session(5) == make_session(5)
        assert make_session(5) != make_session(6)


@pytest.fixture(name="table", scope="module")
def _table() -> dict[float, dict[str, planted.Score]]:
    return planted.measure([0], 2, [0.2], TiktokenCounter())


class TestControls:
    def test_the_oracle_keeps_everything_and_null_nothing(
        self, table: dict[float, dict[str, planted.Score]]
    ) -> None:
        """The controls bound the scale: the oracle at 1 on every kind, null at 0."""
        row = table[0.2]
        for kind in KINDS:
            assert row["control: oracle"].rate(kind) == 1.0
            assert row["control: null"].rate(kind) == 0.0
        assert row["control: oracle"].stale == 0

    def test_random_deletion_matches_our_size(
        self, table: dict[float, dict[str, planted.Score]]
    ) -> None:
        """Random deletion sends no more tokens than our default sent."""
        row = table[0.2]
        assert row["control: random at our size"].tokens <= row[planted.MATCHED].tokens
        assert row[planted.MATCHED].requests == 2

    def test_the_command_writes_scores_and_targets(self, tmp_path: Path) -> None:
        """`--json` holds every fraction's scores and the judged targets."""
        out = tmp_path / "planted.json"
        assert planted.main(["--seeds", "1", "--rounds", "2", "--json", str(out)]) == 0
        data = json.loads(out.read_text())
        assert {"0.1", "0.2", "0.3", "targets"} <= set(data)
        assert all({"target", "measured", "met"} <= set(row) for row in data["targets"])

    def test_the_page_section_adds_its_targets(self) -> None:
        """The page's section holds the table, and each target becomes a three-cell row."""
        from benchmarks.compare.planted_section import planted_section

        judged: list[str] = []
        text = planted_section(lambda _: None, judged)
        assert text.startswith("## Planted facts") and "| control: oracle |" in text
        assert judged and all(row.count(" | ") == 2 for row in judged)
