"""`python -m benchmarks.integrations`: every integration, with and without, on a short task."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.exceptions import ModelHTTPError

from benchmarks import integrations
from benchmarks.integrations import Row, main, measure, table, user_lines
from benchmarks.integrations_runs import RUNNERS, Task
from benchmarks.provider_server import ProviderServer
from context_graph.errors import ConfigurationError

#: Four logs of about 1,000 tokens under a 2,500-token limit: the third request, holding
#: two logs by the provider's count (ours x 1.25), is over it.
TASK = Task(turns=4, budget=2_500, log_lines=60)


@pytest.fixture(autouse=True)
def no_tracing(monkeypatch: pytest.MonkeyPatch) -> None:
    """The Agents SDK's trace exporter would try to reach OpenAI: off in these tests."""
    monkeypatch.setenv("OPENAI_AGENTS_DISABLE_TRACING", "1")


class TestMeasure:
    @pytest.mark.parametrize("framework", list(RUNNERS))
    def test_with_fits_and_without_is_rejected(self, framework: str) -> None:
        """With the integration every request is accepted, under the limit; without, one is not."""
        without = measure(framework, False, TASK)
        with_ = measure(framework, True, TASK)
        assert (with_.rejected, with_.finished, with_.requests) == (0, True, TASK.turns + 1)
        assert 0 < with_.largest <= TASK.budget
        assert 1 <= with_.user_lines <= 5
        assert (without.rejected, without.finished, without.user_lines) == (1, False, 0)
        assert without.largest > TASK.budget
        assert without.requests < with_.requests

    def test_an_error_the_provider_did_not_cause_is_raised(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A 400 that no server refusal explains is the benchmark's failure, not a row."""

        def broken(task: Task, url: str, integrated: bool) -> None:
            raise ModelHTTPError(400, "elsewhere")

        monkeypatch.setitem(RUNNERS, "langchain", ("openai", broken))
        with pytest.raises(ModelHTTPError):
            measure("langchain", True, TASK)


class TestProviderServer:
    def test_text_shorthands_of_responses_input_are_counted(self) -> None:
        """`input="..."` and string `content` count as the same text spelled as parts."""
        spelled = [{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}]
        with ProviderServer("responses") as server:
            expected = server.count({"input": spelled})
            assert server.count({"input": "hi"}) == expected
            assert server.count({"input": [{"role": "user", "content": "hi"}]}) == expected


PAGE = """# A framework

Intro.

```python
print("not the example")
```

## In an agent

```python
from framework import Agent

from orchestrator import ContextManager  # context-graph
from orchestrator.integrations.x import Plug  # context-graph

plug = Plug(ContextManager(budget=1))  # context-graph
agent = Agent(
    plugins=[plug],  # context-graph: plugins=
    name="# context-graph in a string is not a mark",
)
```

```python
extra = Plug()  # context-graph: a second block is not the example
```

## Other

Text.
"""


class TestUserLines:
    def test_counts_the_marked_lines_of_the_sections_first_block(self, tmp_path: Path) -> None:
        """Marked lines count; a mark inside a string, and other blocks, do not."""
        page = tmp_path / "page.md"
        page.write_text(PAGE, encoding="utf-8")
        assert user_lines(page, "In an agent") == 4

    def test_without_a_section_the_pages_first_block(self, tmp_path: Path) -> None:
        """With no section named, the page's first Python block is the example."""
        page = tmp_path / "page.md"
        page.write_text(PAGE, encoding="utf-8")
        assert user_lines(page) == 0

    def test_an_unmarked_library_import_is_refused(self, tmp_path: Path) -> None:
        """An import from the library without the mark raises, naming its line."""
        page = tmp_path / "page.md"
        page.write_text(PAGE.replace("import ContextManager  # context-graph", "import X"))
        with pytest.raises(ConfigurationError, match="line 3 of the example imports"):
            user_lines(page, "In an agent")

    def test_a_missing_section_is_refused(self, tmp_path: Path) -> None:
        """A section the page lacks raises, listing the sections it has."""
        page = tmp_path / "page.md"
        page.write_text(PAGE, encoding="utf-8")
        with pytest.raises(ConfigurationError, match="sections: In an agent, Other"):
            user_lines(page, "Elsewhere")
        with pytest.raises(ConfigurationError, match="no ```python block"):
            user_lines(page, "Other")

    def test_the_real_pages_count(self) -> None:
        """The docs pages' examples add three lines each, five for the Agents SDK."""
        counts = {
            name: user_lines(integrations.ROOT / page, section)
            for name, (page, section) in integrations.DOCS.items()
        }
        assert counts == {name: 5 if name == "openai-agents" else 3 for name in RUNNERS}


ROWS = [
    Row("langchain", "openai", "without", 3, 1, 25_149, 16_664, False, 0),
    Row("langchain", "openai", "with", 31, 0, 306_000, 13_430, True, 3),
]


class TestOutput:
    def test_table(self) -> None:
        """The table has a row per run, and says where a run stopped."""
        assert table(ROWS).splitlines()[2:] == [
            "| langchain | openai | without | 3 | 1 | 25,149 | 16,664 "
            "| no: stopped at request 3 | 0 |",
            "| langchain | openai | with | 31 | 0 | 306,000 | 13,430 | yes | 3 |",
        ]

    def test_json_and_turns(
        self, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """`--turns 7 --json` runs a 7-turn task and prints the rows as JSON."""
        seen: list[Any] = []

        def fake_run(task: Task, factor: float) -> list[Row]:
            seen.append((task, factor))
            return ROWS

        monkeypatch.setattr(integrations, "run", fake_run)
        assert main(["--turns", "7", "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert seen == [(Task(turns=7), 1.25)]
        assert (out["turns"], out["budget"], out["factor"]) == (7, 16_000, 1.25)
        assert out["rows"][1]["user_lines"] == 3
        assert len(out["rows"]) == 2

    def test_bad_turns_exit(self) -> None:
        """A non-positive `--turns` is a usage error."""
        with pytest.raises(SystemExit) as exit_:
            main(["--turns", "0"])
        assert exit_.value.code == 2
