"""The README's example code runs as written."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_python_example_runs() -> None:
    """The Python block in the README builds a graph and renders a valid request."""
    from context_graph.validate import validate

    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert blocks
    namespace: dict[str, object] = {}
    exec(compile(blocks[0], str(README), "exec"), namespace)
    request = namespace["request"]
    assert validate(request, "anthropic") == []


def test_readme_opens_with_the_two_commands() -> None:
    """The first block is exactly the two commands: run the CLI, run the tests."""
    first = re.search(r"```bash\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert first is not None
    lines = first.group(1).strip().splitlines()
    assert len(lines) == 2
    assert lines[0].endswith("context-graph inspect")
    assert lines[1].endswith("python -m pytest")
    ci = (README.parent / ".ci" / "run").read_text(encoding="utf-8")
    assert lines[1] in ci
