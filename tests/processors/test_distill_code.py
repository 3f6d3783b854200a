from __future__ import annotations

import ast

from context_graph.testing import WordCounter
from processors.distill import distill_text
from processors.distill.code import distill_code
from processors.distill.common import Costs, Doc

PYTHON = '''\
"""Order handling: loading, pricing and persistence."""

import json
from decimal import Decimal
from pathlib import (
    Path,
    PurePath,
)

TAX_RATE = Decimal("0.2")


class OrderError(Exception):
    """Raised when an order is malformed."""


class Order:
    """An order with its lines."""

    def __init__(self, order_id: int, lines: list[dict[str, str]]) -> None:
        self.order_id = order_id
        self.lines = lines

    @property
    def total(self) -> Decimal:
        """The total price, tax included."""
        subtotal = sum(Decimal(line["price"]) for line in self.lines)
        return subtotal * (1 + TAX_RATE)

    def save(
        self,
        path: Path,
        *,
        indent: int = 2,
    ) -> None:
        """Write the order as JSON."""
        if not self.lines:
            raise OrderError(f"order {self.order_id} has no lines")
        payload = {"id": self.order_id, "lines": self.lines}
        path.write_text(json.dumps(payload, indent=indent))


def load_order(path: Path) -> Order:
    """Read an order written by `Order.save`."""
    data = json.loads(path.read_text())
    if "id" not in data:
        raise OrderError("missing id")
    return Order(data["id"], data["lines"])
''' + "".join(
    f"""

def helper_{i}(value: int, *, limit: int = {i * 100}) -> int:
    \"\"\"Scale `value` by {i}, within `limit`.\"\"\"
    scaled = value * {i}
    if scaled > limit:
        scaled -= {i * 7}
    elif scaled < -limit:
        scaled += {i * 5}
    for step in range({i}):
        scaled += step
        if scaled % 2:
            scaled //= 2
    return scaled + {i * 3}"""
    for i in range(12)
)


def _distill(text: str, level: str, path: str | None = "orders.py") -> str:
    return distill_text(text, level, path=path, count=WordCounter().count).text  # type: ignore[arg-type]


class TestPython:
    def test_medium_keeps_the_structure(self) -> None:
        """Imports, classes, signatures (multi-line too), decorators, docstring heads stay."""
        out = _distill(PYTHON, "medium")
        assert out.startswith("[distilled python source, medium: ")
        for line in [
            "from pathlib import (",
            "    PurePath,",
            "class OrderError(Exception):",
            "class Order:",
            "    def __init__(self, order_id: int, lines: list[dict[str, str]]) -> None:",
            "    @property",
            "    def total(self) -> Decimal:",
            "    def save(",
            "        *,",
            "    ) -> None:",
            "def load_order(path: Path) -> Order:",
            '    """An order with its lines."""',
            "def helper_0(value: int, *, limit: int = 0) -> int:",
        ]:
            assert line in out.split("\n"), line

    def test_bodies_go_and_gaps_are_marked(self) -> None:
        """Function bodies are left out; each left-out run is a `...` line at its indentation."""
        out = _distill(PYTHON, "medium").split("\n")
        assert '        subtotal = sum(Decimal(line["price"]) for line in self.lines)' not in out
        assert "        ..." in out
        assert "    ..." in out

    def test_heavy_is_shorter_and_drops_docstrings(self) -> None:
        """Heavy keeps declarations (and imports while they fit), not docstrings."""
        medium, heavy = _distill(PYTHON, "medium"), _distill(PYTHON, "heavy")
        assert len(heavy) < len(medium) < len(PYTHON)
        assert '    """An order with its lines."""' not in heavy
        assert "class Order:" in heavy and "def load_order(path: Path) -> Order:" in heavy

    def test_every_kept_line_is_verbatim(self) -> None:
        """Kept lines are the original lines, character for character; the reserve line closes."""
        source = PYTHON.split("\n")
        body = _distill(PYTHON, "medium").split("\n")[1:]
        assert body[-1] == "[also in the original: write_text, read_text, 0.2]"
        assert all(line in source or line.strip() == "..." for line in body[:-1])

    def test_signatures_match_the_ast(self) -> None:
        """Every top-level function and class of the module is named at heavy."""
        out = _distill(PYTHON, "heavy")
        tree = ast.parse(PYTHON)
        names = [n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)]
        assert names and all(f"def {n}(" in out or f"class {n}" in out for n in names)

    def test_gutter_is_kept(self) -> None:
        """A `cat -n` view keeps its line numbers on the kept lines and needs no markers."""
        view = "\n".join(f"{i:6d}\t{line}" for i, line in enumerate(PYTHON.split("\n"), 1))
        out = _distill(view, "heavy", path=None).split("\n")
        numbered = {line.split("\t", 1)[0]: line for line in out[1:]}
        index = PYTHON.split("\n").index("class Order:") + 1
        assert numbered[str(index)] == f"{index}\tclass Order:"
        assert "..." not in out

    def test_broken_python_gets_an_outline(self) -> None:
        """Python that does not parse still shows its def and class lines."""
        broken = PYTHON.replace(
            "def load_order(path: Path) -> Order:", "def load_order(path: Path -> Order:"
        )
        out = _distill(broken, "heavy")
        assert out.startswith("[distilled python source, heavy: ")
        assert "def load_order(path: Path -> Order:" in out
        assert "class Order:" in out


JAVASCRIPT = """\
import { Socket } from "phoenix";
import topbar from "../vendor/topbar";

export const connect = async (url, params) => {
  const socket = new Socket(url, { params });
  socket.connect();
  return socket;
};

export function highlight(el, query) {
  const text = el.textContent;
  const index = text.indexOf(query);
  if (index < 0) {
    return null;
  }
  return index;
}

class Hooks {
  mounted() {
    this.el.scrollIntoView({ behavior: "smooth", block: "center" });
  }
}
""" + "\n".join(
    f"""
export function helper{i}(items, options = {{}}) {{
  const limit = options.limit ?? {i * 10};
  const kept = [];
  for (const item of items) {{
    if (item.size > limit) {{
      continue;
    }}
    kept.push({{ ...item, rank: item.size * {i} }});
  }}
  return kept.sort((a, b) => a.rank - b.rank);
}}"""
    for i in range(10)
)

ELIXIR = """\
defmodule Spotter.Transcripts.Renderer do
  @moduledoc \"\"\"
  Renders transcript messages into lines.
  \"\"\"

  alias Spotter.Transcripts.Message
  import Spotter.Format

  @doc "Renders all messages."
  def render(messages) do
    messages
    |> Enum.flat_map(&render_message/1)
    |> Enum.with_index()
  end

  defp render_message(%Message{type: :assistant} = message) do
    [format(message.content)]
  end

  defp render_message(_), do: []
end
""" + "\n".join(
    f"""
defmodule Spotter.Helper{i} do
  def run(items, opts \\\\ []) do
    limit = Keyword.get(opts, :limit, {i * 10})

    items
    |> Enum.reject(&(&1.size > limit))
    |> Enum.map(fn item -> Map.put(item, :rank, item.size * {i}) end)
    |> Enum.sort_by(& &1.rank)
  end
end"""
    for i in range(10)
)


class TestOutline:
    def test_javascript(self) -> None:
        """Imports, exported arrows, functions and classes stay; bodies go."""
        out = _distill(JAVASCRIPT, "medium", path="app.js")
        assert out.startswith("[distilled javascript source, medium: ")
        for line in [
            'import { Socket } from "phoenix";',
            "export const connect = async (url, params) => {",
            "export function highlight(el, query) {",
            "class Hooks {",
        ]:
            assert line in out.split("\n"), line
        assert "  const index = text.indexOf(query);" not in out.split("\n")

    def test_elixir(self) -> None:
        """Modules and functions stay; bodies go."""
        out = _distill(ELIXIR, "medium", path="renderer.ex").split("\n")
        for line in [
            "defmodule Spotter.Transcripts.Renderer do",
            "  def render(messages) do",
            "  defp render_message(_), do: []",
            "defmodule Spotter.Helper9 do",
        ]:
            assert line in out, line
        assert "    |> Enum.flat_map(&render_message/1)" not in out

    def test_outline_ranks_declarations_then_imports_then_docs(self) -> None:
        """With room enough, aliases, imports and doc lines follow the declarations."""
        lines = tuple(ELIXIR.split("\n")[:21])
        costs = Costs(4.0)
        roomy = Doc(lines=lines, plain=lines, level="medium", budget=10**6, costs=costs)
        kept = (distill_code(roomy) or "").split("\n")
        for line in [
            "  alias Spotter.Transcripts.Message",
            "  import Spotter.Format",
            '  @doc "Renders all messages."',
            '  @moduledoc """',
            "  Renders transcript messages into lines.",
        ]:
            assert line in kept, line
        tight = Doc(lines=lines, plain=lines, level="medium", budget=1, costs=costs)
        assert (distill_code(tight) or "").split("\n") == [
            "defmodule Spotter.Transcripts.Renderer do",
            "  ...",
        ]

    def test_heavy_is_shorter(self) -> None:
        """Heavy keeps less than medium, and both less than the source."""
        for source, path in ((JAVASCRIPT, "app.js"), (ELIXIR, "renderer.ex")):
            medium, heavy = _distill(source, "medium", path), _distill(source, "heavy", path)
            assert len(heavy) <= len(medium) < len(source)
