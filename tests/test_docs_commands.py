"""The `context-graph` commands of the docs' shell blocks exist, and run.

Each `context-graph ...` command of a ```bash block of README.md or docs/ must name an
existing subcommand and existing flags: the CLI's own parser reads it. A block made only
of `context-graph` commands, not marked as a fragment, runs in-process in a temporary
directory, in order, each command exiting 0; there `session.jsonl` is a copy of the
example session bundled with the package.
"""

from __future__ import annotations

import argparse
import re
import shlex
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from context_graph.examples import EXAMPLE_SESSION
from orchestrator.cli import main
from orchestrator.cli.parser import build_parser

ROOT = Path(__file__).resolve().parents[1]
PAGES = ("README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*.md")))

_SHELL_BLOCK = re.compile(
    r"^(?:<!--\s*fragment:(?P<reason>[^\n]*?)-->\n)?```(?:bash|sh|shell|console)\n(?P<code>.*?)^```",
    re.S | re.M,
)


@dataclass(frozen=True)
class Block:
    """One shell block of a page."""

    page: str
    index: int
    line: int
    code: str
    fragment: str | None

    @property
    def id(self) -> str:
        return f"{self.page}:bash{self.index}@L{self.line}"


_OPERATORS = {"&&", "||", ";", "|", "&"}


def _commands(code: str) -> list[list[str]]:
    """The simple commands of a shell block, split at `&&`, `|`, `;`; comments dropped."""
    commands: list[list[str]] = []
    for line in code.replace("\\\n", " ").splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        command: list[str] = []
        for token in lexer:
            if token in _OPERATORS:
                commands.append(command)
                command = []
            else:
                command.append(token)
        commands.append(command)
    return [command for command in commands if command]


def _cli_argv(command: list[str]) -> list[str] | None:
    """The arguments of a `context-graph` command, or `None` for another program."""
    return command[1:] if Path(command[0]).name == "context-graph" else None


def _shell_blocks() -> Iterator[Block]:
    """Every shell block of the pages (tests/test_docs_blocks.py checks their markers)."""
    for page in PAGES:
        text = (ROOT / page).read_text(encoding="utf-8")
        for index, match in enumerate(_SHELL_BLOCK.finditer(text), start=1):
            line = text.count("\n", 0, match.start("code"))
            reason = (match.group("reason") or "").strip() or None
            yield Block(page, index, line, match.group("code"), reason)


CLI = [b for b in _shell_blocks() if any(_cli_argv(c) is not None for c in _commands(b.code))]


def _flags(parser: argparse.ArgumentParser) -> set[str]:
    # argparse has no public index of a parser's flags or subcommands.
    return set(parser._option_string_actions)


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _check_argv(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """Fail unless the CLI has `argv`'s subcommand and flags, and `argv` parses."""
    parser, shown = build_parser(argv), " ".join(["context-graph", *argv])
    known = _flags(parser)
    if argv and not argv[0].startswith("-"):
        commands = _subcommands(parser)
        assert argv[0] in commands, f"`{shown}`: no subcommand {argv[0]!r} in {sorted(commands)}"
        known |= _flags(commands[argv[0]])
        # A subcommand of its own (`store copy`): its flags count too.
        nested = _subcommands(commands[argv[0]])
        if len(argv) > 1 and argv[1] in nested:
            known |= _flags(nested[argv[1]])
    for token in argv:
        flag = token.split("=", 1)[0]
        assert not token.startswith("-") or flag in known, f"`{shown}`: the CLI has no flag {flag}"
    try:
        parser.parse_args(argv)
    except SystemExit as exit:
        error = capsys.readouterr().err.strip().splitlines()[-1:]
        assert exit.code == 0, f"`{shown}` does not parse: {error}"


class TestShellBlocks:
    @pytest.mark.parametrize("block", CLI, ids=[b.id for b in CLI])
    def test_cli_commands_exist(self, block: Block, capsys: pytest.CaptureFixture[str]) -> None:
        """Every `context-graph` command of the block parses with the CLI's own parser."""
        for command in _commands(block.code):
            argv = _cli_argv(command)
            if argv is not None:
                _check_argv(argv, capsys)

    @pytest.mark.parametrize(
        "block",
        [
            b
            for b in CLI
            if not b.fragment and all(_cli_argv(c) is not None for c in _commands(b.code))
        ],
        ids=lambda b: b.id,
    )
    def test_cli_block_runs(
        self,
        block: Block,
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        """A block of CLI commands runs in order, each exiting 0, on the example session."""
        monkeypatch.chdir(tmp_path)
        shutil.copy(EXAMPLE_SESSION, tmp_path / "session.jsonl")
        argvs = [_cli_argv(command) or [] for command in _commands(block.code)]
        for argv in argvs:
            _check_argv(argv, capsys)
        for argv in argvs:
            try:
                code = main(argv)
            except SystemExit as exit:  # argparse's own actions: --version, --help
                code = exit.code
            assert code == 0, (
                f"`context-graph {' '.join(argv)}` exited {code}: {capsys.readouterr().err}"
            )

    def test_commands_are_split(self) -> None:
        """Chained commands, comments and quoting are read the way a shell reads them."""
        code = "python3 -m venv .venv && .venv/bin/pip install '.[openai]'  # setup\n"
        code += ".venv/bin/context-graph inspect | head -1\n"
        assert _commands(code) == [
            ["python3", "-m", "venv", ".venv"],
            [".venv/bin/pip", "install", ".[openai]"],
            [".venv/bin/context-graph", "inspect"],
            ["head", "-1"],
        ]

    @pytest.mark.parametrize(
        ("argv", "wrong"),
        [
            (["summarize", "session.jsonl"], "no subcommand 'summarize'"),
            (["render", "--budgett", "8000"], "no flag --budgett"),
            (["render", "--format", "cohere"], "does not parse"),
        ],
        ids=["subcommand", "flag", "value"],
    )
    def test_missing_commands_fail(
        self, argv: list[str], wrong: str, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """An unknown subcommand, flag or value fails the check, named."""
        with pytest.raises(AssertionError, match=wrong):
            _check_argv(argv, capsys)
