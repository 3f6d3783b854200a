"""The integrations benchmark: the same 30-turn task with and without each integration."""

from __future__ import annotations

from benchmarks.integrations_langchain_pydantic import BUDGET, TURNS, run


class TestIntegrationsBenchmark:
    """What `python -m benchmarks.integrations_langchain_pydantic` prints holds."""

    def test_with_the_integration_no_request_is_rejected(self) -> None:
        """Alone, each framework has requests rejected; with its integration none, fewer tokens."""
        rows = {(row.framework, row.mode): row for row in run(factor=1.2)}
        for framework in ("langchain", "pydantic-ai"):
            without, with_ = rows[(framework, "without")], rows[(framework, "with")]
            assert without.requests == with_.requests == TURNS + 1
            assert without.rejected > TURNS // 2
            assert with_.rejected == 0 and with_.largest <= BUDGET
            assert with_.tokens_sent < without.tokens_sent // 5
            assert 0 < with_.user_lines <= 5
