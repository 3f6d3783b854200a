"""Every integration on one agent task, with and without it, against a validating fake API.

`python -m benchmarks.integrations` runs the same agent task through LangChain's
`create_agent` (with `ContextMiddleware`), a pydantic-ai `Agent` (with `ContextHistory`,
on `OpenAIChatModel` and on `AnthropicModel`),
the OpenAI Agents SDK's `Runner` (with `ContextSession`) and four SDK loops (OpenAI chat
completions and responses, Anthropic, google-genai, with `manager.wrap(client)`): each
with the integration and without it. The model is a `ProviderServer` on the loopback,
speaking the framework's wire format: it validates every body (our validator and the
SDK's own request types), counts its prompt the provider's way (our count times
`--factor`), and answers a body over the budget with HTTP 400 in the provider's error
shape. The task: `--turns` build logs of about 5,000 tokens, one per request, under a
16,000-token budget, then the answer.

A run stops at its first rejected request, as an agent on the real API does when the SDK
raises the provider's 400; the table says how far each run got. Columns per framework
and mode: requests sent (accepted and rejected), requests rejected, tokens sent by the
provider's count (all of them, and the largest request), and the user's lines of code
for the integration: the lines of the framework's docs page example marked
`# context-graph` (`user_lines`).
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import re
import tokenize
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from benchmarks.integrations_runs import REJECTIONS, RUNNERS, Task
from benchmarks.provider_server import ProviderServer
from context_graph.errors import ConfigurationError

__all__ = ["DOCS", "Row", "main", "measure", "run", "user_lines"]

ROOT = Path(__file__).resolve().parents[1]
#: Where each framework's docs page shows its integration: the page and its section
#: (`None`: the page's first Python block).
DOCS: dict[str, tuple[str, str | None]] = {
    "langchain": ("docs/integrations/langchain.md", "In an agent"),
    "pydantic-ai": ("docs/integrations/pydantic-ai.md", "In an agent"),
    "pydantic-ai anthropic": ("docs/integrations/pydantic-ai.md", "In an agent"),
    "openai-agents": ("docs/integrations/openai-agents.md", None),
    "openai chat": ("docs/integrations/clients.md", "OpenAI Chat Completions"),
    "openai responses": ("docs/integrations/clients.md", "OpenAI Responses"),
    "anthropic": ("docs/integrations/clients.md", "Anthropic"),
    "google-genai": ("docs/integrations/clients.md", "google-genai"),
}
_MARK = re.compile(r"#\s*context-graph\b")
_OURS = ("orchestrator", "context_graph", "processors")


@dataclass(frozen=True)
class Row:
    """One framework in one mode.

    Attributes:
        framework: The framework or managed client.
        wire: The wire format its requests speak.
        mode: `with` or `without` the integration.
        requests: Requests sent, accepted and rejected.
        rejected: Requests the provider rejected (a run stops at the first).
        tokens_sent: The prompt tokens of every request sent, by the provider's count.
        largest: The largest request sent, by the provider's count.
        finished: Whether the model's answer came back (the task was done).
        user_lines: The user's lines of code for the integration (0 without it).
    """

    framework: str
    wire: str
    mode: str
    requests: int
    rejected: int
    tokens_sent: int
    largest: int
    finished: bool
    user_lines: int


def user_lines(page: Path, section: str | None = None) -> int:
    """The lines a docs page's example adds for the integration: those marked `# context-graph`.

    The example is the first Python block of the page's `## section` (`None`: of the page).
    A line counts when a comment on it starts with `context-graph`. An import from the
    library (`orchestrator`, `context_graph`, `processors`) must carry the mark, so a page
    cannot under-count by leaving its imports out.

    Raises:
        ConfigurationError: the section or its Python block is missing, or an import from
            the library is not marked.
    """
    text = page.read_text(encoding="utf-8")
    if section is not None:
        parts = {p.splitlines()[0].strip(): p for p in re.split(r"^## ", text, flags=re.M)[1:]}
        if section not in parts:
            msg = f"{page}: no section `## {section}` (sections: {', '.join(parts) or 'none'})"
            raise ConfigurationError(msg)
        text = parts[section]
    blocks = re.findall(r"^```python\n(.*?)^```", text, re.S | re.M)
    if not blocks:
        msg = f"{page}: no ```python block in {f'section `{section}`' if section else 'the page'}"
        raise ConfigurationError(msg)
    code = blocks[0]
    marked = {
        token.start[0]
        for token in tokenize.generate_tokens(io.StringIO(code).readline)
        if token.type == tokenize.COMMENT and _MARK.match(token.string)
    }
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        if any(name.split(".")[0] in _OURS for name in names) and node.lineno not in marked:
            msg = (
                f"{page}: line {node.lineno} of the example imports from the library without "
                "a `# context-graph` comment; mark every line the integration adds"
            )
            raise ConfigurationError(msg)
    return len(marked)


def measure(framework: str, integrated: bool, task: Task, factor: float = 1.25) -> Row:
    """Run one framework in one mode against a fresh server; its row of the table."""
    wire, runner = RUNNERS[framework]
    respond = task.script(reasoning=wire == "responses")
    server = ProviderServer(wire, respond=respond, limit=task.budget, factor=factor)
    finished = True
    with server:
        try:
            runner(task, server.url, integrated)
        except REJECTIONS:
            if not server.refused:
                raise  # an SDK error the provider did not cause: the benchmark's failure
            finished = False
    sizes = [*server.prompts, *server.refused_prompts]
    page, section = DOCS[framework]
    return Row(
        framework=framework,
        wire=wire,
        mode="with" if integrated else "without",
        requests=len(sizes),
        rejected=len(server.refused),
        tokens_sent=sum(sizes),
        largest=max(sizes, default=0),
        finished=finished,
        user_lines=user_lines(ROOT / page, section) if integrated else 0,
    )


def run(
    task: Task | None = None, factor: float = 1.25, frameworks: Sequence[str] | None = None
) -> list[Row]:
    """Every framework (or those named), without and then with its integration."""
    task = task or Task()
    return [
        measure(framework, integrated, task, factor)
        for framework in frameworks or RUNNERS
        for integrated in (False, True)
    ]


def table(rows: Sequence[Row]) -> str:
    """The rows as a Markdown table."""
    header = (
        "| framework | wire | integration | requests | rejected | tokens sent | largest "
        "| finished | user lines |\n|---|---|---|---:|---:|---:|---:|---|---:|"
    )
    return "\n".join([header, *map(_table_row, rows)])


def _table_row(r: Row) -> str:
    done = "yes" if r.finished else f"no: stopped at request {r.requests}"
    return (
        f"| {r.framework} | {r.wire} | {r.mode} | {r.requests} | {r.rejected} "
        f"| {r.tokens_sent:,} | {r.largest:,} | {done} | {r.user_lines} |"
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Print the comparison as a Markdown table (or JSON)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--turns", type=int, default=30, help="tool outputs the model reads")
    parser.add_argument("--budget", type=int, default=16_000, help="tokens, and the limit")
    parser.add_argument("--factor", type=float, default=1.25, help="the provider's count / ours")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args(argv)
    if args.turns < 1 or args.budget < 1 or args.factor <= 0:
        parser.error("--turns and --budget must be positive, and --factor above 0")
    task = Task(turns=args.turns, budget=args.budget)
    rows = run(task, args.factor)
    if args.json:
        settings = {"turns": task.turns, "budget": task.budget, "factor": args.factor}
        print(json.dumps({**settings, "rows": [asdict(r) for r in rows]}, indent=2))
    else:
        print(
            f"{task.turns} turns, a ~5,000-token tool output each, budget {task.budget:,}, "
            f"provider count = ours x {args.factor}"
        )
        print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
