"""Every Python block of README.md and docs/ runs as written.

Each ```python block (but the SDK quickstarts', which tests/test_quickstarts.py runs
against a scripted model) runs unchanged in a fresh namespace, in a temporary working
directory, offline (a connection anywhere but the loopback is refused); its SDK clients
read their base URL and key from the environment, which points them at the local fake
servers of tests/conftest.py. The line right before a fence may hold one marker:

- `<!-- fragment: <reason> -->`: the block is not run, it only has to parse; the reason
  is required and shown in the test id.
- `<!-- continues -->`: the block runs in the namespace of the page's previous Python
  block (the test runs the chain from its start).

A marker applies to a shell block too (a fragment is not run); tests/test_docs_commands.py
checks the `context-graph` commands of the shell blocks.
"""

from __future__ import annotations

import ast
import re
import socket
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

from context_graph.validate.request import validate
from processors.registry import get_processor, unregister_processor

ROOT = Path(__file__).resolve().parents[1]
PAGES = ("README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*.md")))
#: Pages whose one Python block tests/test_quickstarts.py runs, with a scripted model that
#: checks the whole loop (and mypy --strict on the code).
QUICKSTARTS = ("docs/quickstart-openai.md", "docs/quickstart-anthropic.md")

_FENCE = re.compile(r"^```\s*([\w+-]*)\s*$")
_MARKER = re.compile(r"^<!--(.*)-->\s*$")
_MARKER_LIKE = re.compile(r"^\s*<!--\s*(fragment|continues)\b")
_INDENTED_PYTHON = re.compile(r"^\s+```\s*python\s*$")


@dataclass(frozen=True)
class Block:
    """One fenced code block of a page."""

    page: str
    language: str
    index: int
    """1-based, among the page's blocks of this language."""
    line: int
    """The line of the opening fence."""
    code: str
    fragment: str | None = None
    """The reason given by a `<!-- fragment: ... -->` marker."""
    continues: bool = False

    @property
    def key(self) -> tuple[str, int]:
        return self.page, self.index

    @property
    def id(self) -> str:
        name = f"{self.page}:{self.language}{self.index}@L{self.line}"
        return f"{name} fragment: {self.fragment}" if self.fragment else name


def extract(text: str, page: str) -> tuple[list[Block], list[str]]:
    """The page's fenced blocks, and every misplaced or malformed marker."""
    lines = text.splitlines()
    blocks: list[Block] = []
    problems: list[str] = []
    counts: dict[str, int] = {}
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if opening is None:
            before_fence = i + 1 < len(lines) and _FENCE.match(lines[i + 1]) is not None
            if _MARKER_LIKE.match(lines[i]) and (lines[i][0].isspace() or not before_fence):
                problems.append(f"{page}:{i + 1}: a marker goes on the line right before a fence")
            if _INDENTED_PYTHON.match(lines[i]):
                problems.append(f"{page}:{i + 1}: an indented python fence is never run")
            i += 1
            continue
        end = next((j for j in range(i + 1, len(lines)) if _FENCE.fullmatch(lines[j])), None)
        if end is None:
            problems.append(f"{page}:{i + 1}: the fence is never closed")
            break
        language = opening.group(1)
        counts[language] = counts.get(language, 0) + 1
        block = Block(page, language, counts[language], i + 1, "\n".join(lines[i + 1 : end]))
        blocks.append(_marked(block, lines[i - 1] if i else "", blocks, problems))
        i = end + 1
    return blocks, problems


def _marked(block: Block, before: str, earlier: list[Block], problems: list[str]) -> Block:
    """`block` with the marker of the line `before` it applied."""
    marker = _MARKER.match(before)
    if marker is None:
        return block
    where = f"{block.page}:{block.line - 1}"
    body = marker.group(1).strip()
    if body == "continues":
        previous = [b for b in earlier if b.language == "python"]
        if block.language != "python" or not previous or previous[-1].fragment:
            problems.append(f"{where}: `continues` needs a python block after a runnable one")
            return block
        return replace(block, continues=True)
    kind, _, reason = body.partition(":")
    if kind.strip() == "fragment" and reason.strip():
        return replace(block, fragment=reason.strip())
    if kind.strip() == "fragment":
        problems.append(f"{where}: a fragment needs its reason: <!-- fragment: <reason> -->")
    else:
        problems.append(f"{where}: unknown marker {before.strip()!r}")
    return block


_EXTRACTED = [extract((ROOT / page).read_text(encoding="utf-8"), page) for page in PAGES]
BLOCKS = [block for blocks, _ in _EXTRACTED for block in blocks]
PROBLEMS = [problem for _, problems in _EXTRACTED for problem in problems]
PYTHON = [b for b in BLOCKS if b.language == "python"]
RUN_HERE = [b for b in PYTHON if b.page not in QUICKSTARTS]


def _chain(block: Block) -> list[Block]:
    """The blocks that run for `block`: back to the last one that does not continue."""
    page = [b for b in PYTHON if b.page == block.page and b.index <= block.index]
    start = max(i for i, b in enumerate(page) if not b.continues)
    return page[start:]


# -- the environment a block runs in ---------------------------------------------------


@dataclass
class Env:
    """What a block's setup and check see."""

    tmp: Path
    openai: Any
    anthropic: Any
    capsys: pytest.CaptureFixture[str]
    cleanups: list[Callable[[], None]] = field(default_factory=list)


@pytest.fixture(name="offline")
def offline_fixture(monkeypatch: pytest.MonkeyPatch) -> None:
    """Refuse every connection that does not stay on this machine."""
    real = socket.socket.connect

    def connect(self: socket.socket, address: Any) -> None:
        host = address[0] if isinstance(address, tuple) else None
        if self.family != socket.AF_UNIX and host not in ("127.0.0.1", "::1", "localhost"):
            msg = f"docs blocks run offline: refused a connection to {address!r}"
            raise OSError(msg)
        real(self, address)

    monkeypatch.setattr(socket.socket, "connect", connect)


@pytest.fixture(name="env")
def env_fixture(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    openai_server: Any,
    anthropic_server: Any,
    offline: None,
) -> Iterator[Env]:
    """A temporary working directory, and SDK clients that reach only the fake servers."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_BASE_URL", f"{openai_server.url}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", anthropic_server.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    env = Env(tmp_path, openai_server, anthropic_server, capsys)
    yield env
    for cleanup in env.cleanups:
        cleanup()


def _run(block: Block, env: Env) -> None:
    """Run the block's chain in one fresh namespace, with its page's checks; parse a fragment."""
    if block.fragment:
        ast.parse(block.code, filename=block.page)
        return
    namespace: dict[str, Any] = {"__name__": "__main__"}
    for part in _chain(block):
        setup, check = SCENARIOS.get(part.key, (None, None))
        if setup is not None:
            setup(env)
        # Blank lines first, so that a traceback names the line of the page.
        code = "\n" * part.line + part.code
        exec(compile(code, str(ROOT / part.page), "exec"), namespace)
        if check is not None:
            check(env, namespace)


class TestPythonBlocks:
    @pytest.mark.parametrize("block", RUN_HERE, ids=[b.id for b in RUN_HERE])
    def test_runs_as_written(self, block: Block, env: Env) -> None:
        """The block runs unchanged (a fragment parses), and its page's checks hold."""
        _run(block, env)

    def test_markers_are_well_formed(self) -> None:
        """Every marker is on the line before a fence, known, and a fragment has a reason."""
        assert PROBLEMS == []

    def test_every_scenario_names_a_block(self) -> None:
        """A page-specific check that names no Python block is stale, not silently unused."""
        keys = {b.key for b in RUN_HERE if not b.fragment}
        assert set(SCENARIOS) <= keys

    def test_quickstarts_are_run_elsewhere_whole(self) -> None:
        """Each SDK quickstart is one unmarked block, which tests/test_quickstarts.py runs."""
        blocks = [b for b in PYTHON if b.page in QUICKSTARTS]
        assert [(b.page, b.index, b.continues, b.fragment) for b in blocks] == [
            (page, 1, False, None) for page in sorted(QUICKSTARTS)
        ]


class TestHarness:
    def test_markers(self) -> None:
        """Markers apply to the next block only; a fragment keeps its reason."""
        text = (
            "```python\nx = 1\n```\n<!-- continues -->\n```python\ny = x\n```\n"
            "<!-- fragment: a signature -->\n```python\ndef f(): ...\n```\n```bash\nls\n```\n"
        )
        blocks, problems = extract(text, "p.md")
        assert problems == []
        assert [(b.language, b.index, b.line) for b in blocks] == [
            ("python", 1, 1),
            ("python", 2, 5),
            ("python", 3, 9),
            ("bash", 1, 12),
        ]
        assert [(b.continues, b.fragment) for b in blocks[:3]] == [
            (False, None),
            (True, None),
            (False, "a signature"),
        ]

    @pytest.mark.parametrize(
        ("text", "problem"),
        [
            ("<!-- fragment -->\n```python\nx\n```\n", "p.md:1: a fragment needs its reason"),
            ("<!-- fragment:  -->\n```python\nx\n```\n", "p.md:1: a fragment needs its reason"),
            ("<!-- continues -->\n```python\nx\n```\n", "p.md:1: `continues` needs"),
            ("<!-- fragments: x -->\n```python\nx\n```\n", "p.md:1: unknown marker"),
            ("<!-- fragment: x -->\n\n```python\nx\n```\n", "p.md:1: a marker goes on"),
            ("- item\n  ```python\n  x\n  ```\n", "p.md:2: an indented python fence"),
            ("```python\nx\n", "p.md:1: the fence is never closed"),
        ],
        ids=[
            "no reason",
            "empty reason",
            "nothing to continue",
            "unknown",
            "gap",
            "indented",
            "open",
        ],
    )
    def test_bad_markers_are_named(self, text: str, problem: str) -> None:
        """A malformed or misplaced marker is reported with its page and line."""
        _, problems = extract(text, "p.md")
        assert len(problems) == 1
        assert problems[0].startswith(problem)

    def test_fragments_parse_and_do_not_run(self, env: Env) -> None:
        """A fragment is parsed, never executed; one that does not parse fails."""
        _run(Block("p.md", "python", 1, 1, "await undefined()", fragment="inside a loop"), env)
        with pytest.raises(SyntaxError):
            _run(Block("p.md", "python", 1, 1, "def f(:", fragment="a signature"), env)

    def test_offline(self, offline: None) -> None:
        """A connection off this machine is refused before anything is sent."""
        with pytest.raises(OSError, match="run offline"), socket.socket() as sock:
            sock.connect(("192.0.2.1", 80))


# -- page-specific setups and checks ---------------------------------------------------

Setup = Callable[[Env], None]
Check = Callable[[Env, dict[str, Any]], None]


def _sent(body: dict[str, Any]) -> dict[str, Any]:
    """The part of a request body the renderer made (no model, tools, options)."""
    return {key: body[key] for key in ("system", "messages") if key in body}


def _one_reply(env: Env) -> None:
    env.anthropic.script({"text": "Done."})


def _check_rendered_request(env: Env, namespace: dict[str, Any]) -> None:
    """The block sent the rendered body, valid, with its own model and max_tokens."""
    body = env.anthropic.requests[-1]
    assert body == {"model": "claude-sonnet-4-6", "max_tokens": 4096, **namespace["result"].payload}
    assert validate(_sent(body), "anthropic") == []


def _valid_readme_request(env: Env, namespace: dict[str, Any]) -> None:
    assert validate(namespace["request"], "anthropic") == []


def _masked_and_valid(env: Env, namespace: dict[str, Any]) -> None:
    assert validate(namespace["result"].payload, "anthropic") == []
    assert env.capsys.readouterr().out.startswith("[output of bash masked: 300 lines")


def _registered_head_keeper(env: Env, namespace: dict[str, Any]) -> None:
    assert namespace["proposal"].tokens_saved > 0
    assert get_processor("head_keeper") is namespace["HeadKeeper"]


SCENARIOS: dict[tuple[str, int], tuple[Setup | None, Check | None]] = {
    ("README.md", 1): (None, _valid_readme_request),
    ("docs/orchestrator.md", 1): (None, _masked_and_valid),
    # The two blocks each make one call (the second continues the first).
    ("docs/rendering.md", 1): (_one_reply, _check_rendered_request),
    ("docs/rendering.md", 2): (_one_reply, _check_rendered_request),
    ("docs/writing-a-processor.md", 1): (
        lambda env: env.cleanups.append(lambda: unregister_processor("head_keeper")),
        _registered_head_keeper,
    ),
}
