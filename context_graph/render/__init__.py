"""Render a context graph into the request body of a provider API, under a token budget.

```python
from context_graph.render import Renderer

result = Renderer(format="anthropic").render(graph, budget=50_000)
client.messages.create(model=..., max_tokens=..., **result.payload)
```

Every render pairs each tool call with exactly one result (a placeholder for a call that
never got one), puts roles in the order the provider requires, and fits the budget by
dropping whole interaction units, or raises `BudgetExceededError`. See
docs/rendering.md for the rules per provider.

Each format is a `ProviderRenderer` (in the format's folder under `context_graph.formats`;
`PROVIDER_RENDERERS` maps the format names to them); the `Renderer` holds the one of its format.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from context_graph.formats.wires import DEFAULT_FORMAT, FORMAT_NAMES
from context_graph.render.fit import marker_text
from context_graph.render.native import ForeignCompaction
from context_graph.render.provider import (
    EMPTY_USER_TEXT,
    LEADING_USER_TEXT,
    AssemblyStats,
    CacheMarking,
    ProviderRenderer,
)
from context_graph.render.renderer import Renderer
from context_graph.render.result import RenderResult, count_payload
from context_graph.render.tools import ToolSpec, read_tools
from context_graph.render.turns import MISSING_RESULT_TEXT, RenderSource, UnitTurns
from context_graph.tokens.counting import ProviderFormat

__all__ = [
    "EMPTY_USER_TEXT",
    "FORMATS",
    "LEADING_USER_TEXT",
    "MISSING_RESULT_TEXT",
    "PROVIDER_RENDERERS",
    "AssemblyStats",
    "CacheMarking",
    "ForeignCompaction",
    "ProviderRenderer",
    "RenderResult",
    "RenderSource",
    "Renderer",
    "ToolSpec",
    "UnitTurns",
    "count_payload",
    "marker_text",
    "read_tools",
    "render_history",
]


#: The formats `Renderer` accepts.
FORMATS: tuple[ProviderFormat, ...] = FORMAT_NAMES


def __getattr__(name: str) -> Any:
    """`PROVIDER_RENDERERS`, read from the registry when first asked.

    Not imported at the top: see `context_graph.formats.registry`.
    """
    if name == "PROVIDER_RENDERERS":
        from context_graph.formats.registry import PROVIDER_RENDERERS

        return PROVIDER_RENDERERS
    msg = f"module {__name__!r} has no attribute {name!r}"
    raise AttributeError(msg)


def render_history(
    source: RenderSource,
    *,
    format: ProviderFormat = DEFAULT_FORMAT,
    budget: int | None = None,
    tools: Sequence[Any] = (),
) -> RenderResult:
    """Render `source` once (a new `Renderer` each call; keep one to reuse its cache)."""
    return Renderer(format=format).render(source, budget=budget, tools=tools)
