"""The complete example in docs/writing-a-processor.md runs as written."""

from __future__ import annotations

import re
from pathlib import Path

from processors.registry import get, unregister

DOC = Path(__file__).resolve().parents[2] / "docs" / "writing-a-processor.md"


def test_documented_processor_runs_and_registers() -> None:
    """The example builds a graph, proposes a shorter output and registers by name."""
    block = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)[0]
    namespace: dict[str, object] = {}
    try:
        exec(compile(block, str(DOC), "exec"), namespace)
        proposal = namespace["proposal"]
        assert proposal.tokens_saved > 0  # type: ignore[attr-defined]
        assert get("head_keeper") is namespace["HeadKeeper"]
    finally:
        unregister("head_keeper")
