"""context-graph's data layer: build a graph from an agent's events, and count its tokens.

What a user imports to build a graph (`ContextGraph`, the event and node types), the
`TokenCounter` protocol with its tiktoken implementation, and every error. Rendering is
`context_graph.render`, recorded sessions `context_graph.importers`, request checks
`context_graph.validate`, test doubles `context_graph.testing`; docs/api.md lists the public
names by job. Any other name is internal: importable from its own module, free to move.

The manager is not here: `from orchestrator import ContextManager`. Asked for it (or
another name of `orchestrator` or `processors`), this package raises a
`WrongPackageError` that names the import to use.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("context-graph")
except PackageNotFoundError:  # run from a source tree that was never installed
    __version__ = "0+unknown"

from context_graph._elsewhere import elsewhere as _elsewhere
from context_graph.errors import (
    BudgetExceededError,
    ConfigurationError,
    ContextGraphError,
    CycleError,
    DuplicateNodeError,
    GraphError,
    IngestError,
    InvariantViolation,
    ProcessorError,
    SourceLocation,
    StoreConflictError,
    StoreCorruptError,
    StoreError,
    StoreFormatError,
    StoreLockedError,
    StoreUnavailableError,
    SummarizerError,
    TokenizerError,
    UnknownNodeError,
    WrongPackageError,
)
from context_graph.graph.content import (
    ContentPart,
    DocumentPart,
    ImagePart,
    ProviderSignature,
    ReasoningPart,
    RedactedThinkingPart,
    TextPart,
    ThinkingPart,
)
from context_graph.graph.context_graph import ContextGraph
from context_graph.graph.edges import EdgeKind
from context_graph.graph.events import (
    AgentEvent,
    AssistantTurn,
    Compaction,
    FileRead,
    Note,
    SubagentResult,
    SystemPrompt,
    ToolCall,
    ToolResult,
    UserTurn,
    Withdrawal,
)
from context_graph.graph.native import NativeCompaction
from context_graph.graph.node_tokens import NodeTokenCache
from context_graph.graph.nodes import (
    AnswerNode,
    AnyNode,
    AssistantNode,
    FileNode,
    Node,
    NodeKind,
    NoteNode,
    SubagentResultNode,
    SummaryNode,
    SystemNode,
    ToolCallNode,
    ToolResultNode,
    TriggerKind,
    TriggerSpec,
    UserNode,
)
from context_graph.graph.units import Unit
from context_graph.tokens.calibration import Calibrator
from context_graph.tokens.counting import (
    ProviderFormat,
    TiktokenCounter,
    TokenCounter,
    default_counter,
)

__all__ = [
    "AgentEvent",
    "AnswerNode",
    "AnyNode",
    "AssistantNode",
    "AssistantTurn",
    "BudgetExceededError",
    "Calibrator",
    "Compaction",
    "ConfigurationError",
    "ContentPart",
    "ContextGraph",
    "ContextGraphError",
    "CycleError",
    "DocumentPart",
    "DuplicateNodeError",
    "EdgeKind",
    "FileNode",
    "FileRead",
    "GraphError",
    "ImagePart",
    "IngestError",
    "InvariantViolation",
    "NativeCompaction",
    "Node",
    "NodeKind",
    "NodeTokenCache",
    "Note",
    "NoteNode",
    "ProcessorError",
    "ProviderFormat",
    "ProviderSignature",
    "ReasoningPart",
    "RedactedThinkingPart",
    "SourceLocation",
    "StoreConflictError",
    "StoreCorruptError",
    "StoreError",
    "StoreFormatError",
    "StoreLockedError",
    "StoreUnavailableError",
    "SubagentResult",
    "SubagentResultNode",
    "SummarizerError",
    "SummaryNode",
    "SystemNode",
    "SystemPrompt",
    "TextPart",
    "ThinkingPart",
    "TiktokenCounter",
    "TokenCounter",
    "TokenizerError",
    "ToolCall",
    "ToolCallNode",
    "ToolResult",
    "ToolResultNode",
    "TriggerKind",
    "TriggerSpec",
    "Unit",
    "UnknownNodeError",
    "UserNode",
    "UserTurn",
    "Withdrawal",
    "WrongPackageError",
    "default_counter",
]


def __getattr__(name: str) -> object:
    """A name this package does not have; one of another package's says where it is."""
    raise _elsewhere(name)
