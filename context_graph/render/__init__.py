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
"""

from __future__ import annotations

from context_graph.render.fit import marker_text
from context_graph.render.renderer import FORMATS, Renderer, RenderResult, count_payload
from context_graph.render.turns import MISSING_RESULT_TEXT, RenderSource
from context_graph.tokens.counting import ProviderFormat

__all__ = [
    "FORMATS",
    "MISSING_RESULT_TEXT",
    "RenderResult",
    "RenderSource",
    "Renderer",
    "count_payload",
    "marker_text",
    "render_history",
]


def render_history(
    source: RenderSource,
    *,
    format: ProviderFormat = "openai",
    budget: int | None = None,
) -> RenderResult:
    """Render `source` once (a new `Renderer` each call; keep one to reuse its cache)."""
    return Renderer(format=format).render(source, budget=budget)
