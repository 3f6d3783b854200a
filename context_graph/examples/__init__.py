"""A real Claude Code session bundled for trying the library without data of one's own.

`EXAMPLE_SESSION` is the main session file; its sub-agent transcripts are in
`example_session/subagents/`. See this package's `README.md` for where it comes from.

```python
from context_graph.examples import EXAMPLE_SESSION
from context_graph.importers import load_graph
graph = load_graph(EXAMPLE_SESSION)
```
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["EXAMPLE_SESSION"]

#: The bundled Claude Code session (JSONL); its sub-agents load with it.
EXAMPLE_SESSION: Path = Path(__file__).resolve().parent / "example_session.jsonl"
