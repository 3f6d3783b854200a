"""Retention and compression of the Distiller on the shared real sessions.

Run with `-s` to see the table that docs/processors/distill.md reports:
`python -m pytest tests/processors/test_distill_traces.py -s`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.distill_retention import Measurement, measure, report, trace_files

TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "traces"

#: Floors measured on the shared traces (docs/processors/distill.md), a little below
#: the measured values: (entities kept, paths kept, largest after/before).
FLOORS = {
    "light": (0.99, 0.99, 0.90),
    "medium": (0.37, 0.55, 0.30),
    "heavy": (0.16, 0.24, 0.15),
}

#: Of the entities a later turn of the agent names: (all of them, their paths) kept.
NAMED_LATER_FLOORS = {
    "light": (0.99, 0.99),
    "medium": (0.88, 0.88),
    "heavy": (0.72, 0.70),
}

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not TRACES.exists(), reason="shared traces not present"),
]


@pytest.fixture(name="measured", scope="module")
def measured_fixture() -> Measurement:
    files = trace_files(TRACES)
    assert {f.relative_to(TRACES).parts[0] for f in files} == {
        "claude_code",
        "mini_swe_agent_deepseek",
        "swe_agent",
        "openhands_claude35_swebench_verified",
    }
    result = measure(files)
    print("\n" + report(result))
    return result


class TestRetentionOnTraces:
    @pytest.mark.parametrize("level", list(FLOORS))
    def test_floors(self, measured: Measurement, level: str) -> None:
        """Each level keeps at least its measured share of entities and paths, at its size."""
        entities, paths, ratio = FLOORS[level]
        tally = measured.levels[level]
        assert tally.nodes > 100
        assert tally.retention >= entities
        assert tally.path_retention >= paths
        assert tally.ratio <= ratio

    @pytest.mark.parametrize("level", list(NAMED_LATER_FLOORS))
    def test_what_later_turns_name_is_kept_first(self, measured: Measurement, level: str) -> None:
        """The entities (and paths) the agent went on to name are kept far above the rest."""
        entities, paths = NAMED_LATER_FLOORS[level]
        tally = measured.levels[level]
        assert tally.later > 1_000 and tally.later_paths > 200
        assert tally.later_retention >= entities
        assert tally.later_path_retention >= paths
        assert tally.later_retention > tally.retention or level == "light"

    def test_error_names_are_always_kept(self, measured: Measurement) -> None:
        """At every level, every error name (`KeyError`) of every distilled node is kept."""
        for level in FLOORS:
            assert measured.levels[level].names > 50
            assert measured.levels[level].name_retention == 1.0

    def test_error_lines_keep_paths_error_names_and_numbers(self, measured: Measurement) -> None:
        """At every level, every entity on an error line of command output is kept."""
        assert measured.error_misses == []
        for level in FLOORS:
            assert measured.levels[level].error_entities > 0
            assert measured.levels[level].error_retention == 1.0

    def test_heavier_levels_are_smaller(self, measured: Measurement) -> None:
        """Heavy is smaller than medium, medium smaller than light (per original token)."""
        ratios = [measured.levels[level].ratio for level in FLOORS]
        assert ratios == sorted(ratios, reverse=True)

    def test_every_content_type_is_met(self, measured: Measurement) -> None:
        """The traces exercise the content rules (not all of them fall to plain text)."""
        kinds = {kind for level, kind in measured.cells if level == "medium"}
        assert {"python", "code", "grep", "listing", "traceback", "text", "json"} <= kinds
