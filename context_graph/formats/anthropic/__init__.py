"""Anthropic Messages: `wire` (constants), `render`, `validate`, `read`, `replies`.

Imports nothing, so that the constants can be read without the renderer (see
`context_graph.formats.wires`).
"""

__all__: list[str] = []
