"""`python -m benchmarks.format_spread`: where each wire format's name is spoken.

Issue 32 asks for one home per wire format (`context_graph/formats/<folder>/`). This
counts, for each format name, the library files (`context_graph`, `processors`,
`orchestrator`) outside that home and the registry that still mention it, two ways:

- `keys`: the name as a Python string constant (`"responses"`), the way code picks a
  format; these are what the test holds to the allowlist below.
- `words`: the name as a word anywhere in the file, comments and docstrings included
  (`openai_responses` is neither `openai` nor `responses`; case is ignored, so prose
  about "OpenAI" counts for chat's name).

    python -m benchmarks.format_spread              # the counts
    python -m benchmarks.format_spread --files      # and the files, per format
    python -m benchmarks.format_spread --root DIR   # another checkout (e.g. an old commit)
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "ALLOWED",
    "FOLDERS",
    "LIBRARY",
    "REGISTRY",
    "Spread",
    "main",
    "outside_allowlist",
    "spread",
]

ROOT = Path(__file__).resolve().parents[1]

#: The library packages counted (tests, docs and benchmarks may name formats freely).
LIBRARY: tuple[str, ...] = ("context_graph", "processors", "orchestrator")

#: Each format's name and its home folder.
FOLDERS: Mapping[str, str] = {
    "openai": "context_graph/formats/openai_chat/",
    "anthropic": "context_graph/formats/anthropic/",
    "gemini": "context_graph/formats/gemini/",
    "responses": "context_graph/formats/openai_responses/",
}

#: The registry, in its two halves: behaviour and constants.
REGISTRY: frozenset[str] = frozenset(
    {"context_graph/formats/registry.py", "context_graph/formats/wires.py"}
)

#: Files and folders (a trailing `/`) that may name formats outside their homes, and why.
ALLOWED: Mapping[str, str] = {
    # Not wire formats but the places a user or a vendor's program meets them.
    "processors/summarize/": "the summarizer's model clients, one per vendor SDK",
    "context_graph/importers/codex_cli.py": "Codex CLI (OpenAI's agent) records Responses items",
    "context_graph/importers/gemini_cli.py": "Gemini CLI records Gemini contents",
    "context_graph/models.py": "model limits: which vendor serves a model name",
    # Adapters to one vendor's SDK or one framework's provider names, each naming what it speaks.
    "orchestrator/integrations/clients.py": "wrap(): the openai/anthropic SDK packages and methods",
    "orchestrator/integrations/clients_apis.py": "one Api per SDK method, naming its format",
    "orchestrator/integrations/langchain.py": "LangChain's provider packages and use_responses_api",
    "orchestrator/integrations/langchain_messages.py": "LangChain's thinking blocks: not Gemini's",
    "orchestrator/integrations/manager_options.py": "frameworks' provider names -> the format",
    "orchestrator/integrations/openai_agents.py": "the OpenAI Agents SDK speaks Responses only",
    "orchestrator/integrations/pydantic_ai.py": "pydantic-ai's model classes -> the format",
    "orchestrator/integrations/pydantic_ai_thinking.py": "pydantic-ai's ThinkingPart.provider_name",
    "orchestrator/policy/stages.py": "a summarizer's kind names its vendor SDK client, not a wire",
}


@dataclass(frozen=True)
class Spread:
    """The files outside a format's home and the registry that name it."""

    name: str
    keys: tuple[str, ...]
    """Files with the name as a string constant."""
    words: tuple[str, ...]
    """Files with the name as a word anywhere."""


def _library_files(root: Path) -> Iterator[tuple[str, str]]:
    for package in LIBRARY:
        for path in sorted((root / package).rglob("*.py")):
            yield path.relative_to(root).as_posix(), path.read_text(encoding="utf-8")


def _has_key(text: str, name: str) -> bool:
    tree = ast.parse(text)
    return any(isinstance(node, ast.Constant) and node.value == name for node in ast.walk(tree))


def spread(root: Path = ROOT) -> list[Spread]:
    """For each format, the library files outside its home and the registry naming it."""
    files = list(_library_files(root))
    found = []
    for name, home in FOLDERS.items():
        word = re.compile(rf"(?<![A-Za-z0-9_]){name}(?![A-Za-z0-9_])", re.IGNORECASE)
        outside = [(path, text) for path, text in files if not _home(path, home)]
        keys = tuple(path for path, text in outside if _has_key(text, name))
        words = tuple(path for path, text in outside if word.search(text))
        found.append(Spread(name, keys, words))
    return found


def _home(path: str, home: str) -> bool:
    return path.startswith(home) or path in REGISTRY


def _allowed(path: str) -> bool:
    return any(
        path == entry or (entry.endswith("/") and path.startswith(entry)) for entry in ALLOWED
    )


def outside_allowlist(found: Sequence[Spread]) -> dict[str, list[str]]:
    """Per format, the files naming it as a key that neither home nor allowlist covers."""
    return {item.name: [path for path in item.keys if not _allowed(path)] for item in found}


def main(argv: Sequence[str] | None = None) -> int:
    """Print the counts (and with `--files` the files); 1 if a key is outside the allowlist."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.format_spread")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout to count")
    parser.add_argument("--files", action="store_true", help="list the files too")
    args = parser.parse_args(argv)
    found = spread(args.root)
    stray = outside_allowlist(found)
    for item in found:
        line = f"{item.name:10} keys {len(item.keys):3}  words {len(item.words):3}"
        print(f"{line}  keys outside the allowlist {len(stray[item.name])}")
        if args.files:
            for path in item.keys:
                print(f"    {path}{'' if _allowed(path) else '   <- not allowed'}")
    return 1 if any(stray.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
