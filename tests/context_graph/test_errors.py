from __future__ import annotations

import pytest

from context_graph import (
    BudgetExceededError,
    ConfigurationError,
    ContextGraphError,
    CycleError,
    GraphError,
    IngestError,
    InvariantViolation,
    ProcessorError,
    SourceLocation,
    TokenizerError,
    UnknownNodeError,
)


class TestHierarchy:
    @pytest.mark.parametrize(
        ("error", "builtin"),
        [
            (IngestError("x"), ValueError),
            (GraphError("x"), ValueError),
            (CycleError("x"), GraphError),
            (UnknownNodeError("x"), KeyError),
            (TokenizerError("x"), LookupError),
            (ConfigurationError("x"), ValueError),
            (InvariantViolation("x"), ContextGraphError),
            (BudgetExceededError(10, 20), ContextGraphError),
            (ProcessorError("p", "x"), ContextGraphError),
        ],
    )
    def test_errors_share_a_base_and_match_builtins(
        self, error: Exception, builtin: type[Exception]
    ) -> None:
        """Every error is a ContextGraphError and the builtin callers would catch."""
        assert isinstance(error, ContextGraphError)
        assert isinstance(error, builtin)


class TestMessages:
    def test_ingest_error_names_file_line_and_path(self) -> None:
        """The message starts with the place, then says what is wrong."""
        where = SourceLocation("run.jsonl", 14, None, "message.content[2]")
        error = IngestError("unknown block type 'x'", where)
        assert str(error) == "run.jsonl line 14 message.content[2]: unknown block type 'x'"
        assert error.reason == "unknown block type 'x'"

    def test_location_paths_nest(self) -> None:
        """A location can point deeper into its record."""
        where = SourceLocation(index=3, path="content").with_path("[0].text")
        assert where.describe() == "message 3 content[0].text"
        assert SourceLocation(path="a").with_path("b").path == "a.b"

    def test_budget_error_carries_the_numbers(self) -> None:
        """The budget error says both the budget and what is needed."""
        error = BudgetExceededError(1000, 1350, "pinned nodes alone")
        assert (error.budget, error.required) == (1000, 1350)
        assert "1000" in str(error) and "1350" in str(error) and "pinned" in str(error)

    def test_processor_error_names_the_processor(self) -> None:
        """A processor failure says which processor failed."""
        assert "'Distiller'" in str(ProcessorError("Distiller", "boom"))

    def test_unknown_node_message_is_not_quoted(self) -> None:
        """The KeyError subclass prints its message plainly."""
        assert str(UnknownNodeError("node 'x' is not in the graph")) == (
            "node 'x' is not in the graph"
        )
