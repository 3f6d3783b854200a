"""One folder per wire format: everything one provider's request format needs.

Each folder (`anthropic`, `openai_chat`, `openai_responses`, `gemini`) holds the format's
renderer (`render`), validator (`validate`), reader of its request bodies (`read`) and
of its SDK's replies (`replies`), and its constants (`wire`: token overheads, tool-call
id rule and any call shape of its own, prompt-cache price). The generic machinery
(`context_graph.render`, `context_graph.validate`, `context_graph.importers`,
`context_graph.graph.sdk_replies`) reaches a format only by its name, through
`context_graph.formats.registry` (behaviour) and `context_graph.formats.wires` (the
constants, which the graph and token layers read without importing any renderer).

This `__init__` imports nothing, so reading the constants stays cheap and acyclic.
"""

__all__: list[str] = []
