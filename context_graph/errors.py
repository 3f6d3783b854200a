"""The one exception hierarchy of context-graph.

```
ContextGraphError
├── IngestError (ValueError)          bad input; carries a SourceLocation
├── GraphError (ValueError)           an edit the graph refuses
│   ├── CycleError                    an edge that would close a cycle
│   ├── DuplicateNodeError            a node id already present
│   └── UnknownNodeError (KeyError)   a node id that is not in the graph
├── InvariantViolation                a proposal that breaks an invariant
├── BudgetExceededError               the budget cannot be met (.budget, .required)
├── ProcessorError                    a processor failed (.processor; raised from the cause)
│   └── SummarizerError               a summarizer's call or answer failed (.summarizer)
├── TokenizerError (LookupError)      an encoding that cannot be loaded offline
├── ConfigurationError (ValueError)   a developer mistake, raised at construction time
├── WrongPackageError (ImportError)   a name of `orchestrator` or `processors` asked of
│                                     `context_graph`; says where it lives
└── StoreError                        a session file that cannot be opened or written (.path)
    ├── StoreLockedError              another store holds the file for writing (.pid)
    ├── StoreFormatError (ValueError) not a session store that this version can read
    ├── StoreCorruptError (ValueError) a journal entry that does not decode or replay (.seq)
    ├── StoreConflictError            another writer moved the session on first (.expected, .found)
    └── StoreUnavailableError         the database server cannot be reached now; retry later
```

Every error that refers to input names the place: the file, the line and the message
index, as far as they are known.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "BudgetExceededError",
    "ConfigurationError",
    "ContextGraphError",
    "CycleError",
    "DuplicateNodeError",
    "GraphError",
    "HookError",
    "IngestError",
    "InvariantViolation",
    "ProcessorError",
    "SourceLocation",
    "StoreConflictError",
    "StoreCorruptError",
    "StoreError",
    "StoreFormatError",
    "StoreLockedError",
    "StoreUnavailableError",
    "SummarizerError",
    "TokenizerError",
    "UnknownNodeError",
    "WrongPackageError",
]


@dataclass(frozen=True, slots=True)
class SourceLocation:
    """Where a piece of input came from.

    Attributes:
        file: The file it was read from, if any.
        line: The 1-based line number in that file (JSONL inputs).
        index: The 0-based index of the message or event within its payload.
        path: A JSON path inside the record (`content[2].tool_use_id`).
    """

    file: str | None = None
    line: int | None = None
    index: int | None = None
    path: str | None = None

    def describe(self) -> str:
        """Return the location as a short human phrase, e.g. `run.jsonl line 14`."""
        parts: list[str] = []
        if self.file is not None:
            parts.append(self.file)
        if self.line is not None:
            parts.append(f"line {self.line}")
        if self.index is not None:
            parts.append(f"message {self.index}")
        if self.path:
            parts.append(self.path)
        return " ".join(parts) if parts else "input"

    def with_path(self, path: str) -> SourceLocation:
        """Return a copy pointing deeper into the same record."""
        if not self.path:
            joined = path
        elif path.startswith("["):
            joined = f"{self.path}{path}"  # an index: `content[0]`, not `content.[0]`
        else:
            joined = f"{self.path}.{path}"
        return SourceLocation(self.file, self.line, self.index, joined)


class ContextGraphError(Exception):
    """Base class of every error raised by context-graph."""


class IngestError(ContextGraphError, ValueError):
    """Input that cannot be ingested; nothing of the batch was applied.

    Attributes:
        location: Where in the input the problem is.
        reason: What is wrong, without the location.
    """

    def __init__(self, reason: str, location: SourceLocation | None = None) -> None:
        self.location = location or SourceLocation()
        self.reason = reason
        super().__init__(f"{self.location.describe()}: {reason}")


class GraphError(ContextGraphError, ValueError):
    """An edit that the graph refuses; the graph is unchanged."""


class CycleError(GraphError):
    """An edge that would close a cycle in the DAG."""


class DuplicateNodeError(GraphError):
    """A node whose id is already in the graph."""


class UnknownNodeError(GraphError, KeyError):
    """A node id that is not in the graph."""

    def __str__(self) -> str:
        # KeyError quotes its argument; a message reads better unquoted.
        return str(self.args[0]) if self.args else ""


class InvariantViolation(ContextGraphError):
    """A proposed edit that would break one of the engine's invariants."""


class BudgetExceededError(ContextGraphError):
    """The rendered request cannot fit the token budget.

    Attributes:
        budget: The budget that was asked for.
        required: The smallest size the engine could reach.
    """

    def __init__(self, budget: int, required: int, detail: str = "") -> None:
        self.budget = budget
        self.required = required
        msg = f"budget of {budget} tokens cannot be met: at least {required} are needed"
        super().__init__(f"{msg} ({detail})" if detail else msg)


class ProcessorError(ContextGraphError):
    """A processor failed; raised from the underlying cause.

    Attributes:
        processor: The name of the processor that failed.
    """

    def __init__(self, processor: str, message: str) -> None:
        self.processor = processor
        super().__init__(f"processor {processor!r}: {message}")


class SummarizerError(ProcessorError):
    """A summarizer's call failed or its answer cannot be used; raised from the cause.

    A `ProcessorError`, so code that catches processor failures catches it too; the
    history summarizer falls back to its extractive brief on it.

    Attributes:
        summarizer: The summarizer's name (`openai:gpt-4o-mini`).
    """

    def __init__(self, summarizer: str, message: str) -> None:
        self.summarizer = summarizer
        super().__init__(summarizer, message)


class HookError(ContextGraphError):
    """A compaction hook (user code the manager calls) raised; raised from its error.

    Attributes:
        stage: `before_compaction` or `after_compaction`.
        hook: The hook's qualified name.
    """

    def __init__(self, stage: str, hook: str, message: str) -> None:
        self.stage = stage
        self.hook = hook
        super().__init__(f"{stage} hook {hook}: {message}")


class TokenizerError(ContextGraphError, LookupError):
    """A tokenizer encoding that is not available offline."""


class ConfigurationError(ContextGraphError, ValueError):
    """A developer mistake in how the library is set up, raised at construction time."""


class StoreError(ContextGraphError):
    """A session file that cannot be opened, read or written.

    Attributes:
        path: The session file.
    """

    def __init__(self, path: str, message: str) -> None:
        self.path = path
        super().__init__(f"{path}: {message}")


class StoreLockedError(StoreError):
    """Another open store (in this process or another) holds the session file for writing.

    Attributes:
        pid: The id of the process holding it, when it could be read.
        holder: Where the holder was opened, when it is a store of this very process.
    """

    def __init__(self, path: str, pid: int | None, *, holder: str | None = None) -> None:
        self.pid = pid
        self.holder = holder
        if holder is not None:
            message = (
                f"the session is already open for writing in this process (a store opened "
                f"at {holder}, not closed yet), and a second writer would fork it; close "
                "that one first (`close()` on its manager, its `ContextHistory` or its "
                "store), or keep using its manager"
            )
        else:
            who = f"process {pid}" if pid is not None else "another process"
            message = (
                f"the session is open for writing in {who}; close it there first. "
                "To read it meanwhile, open it with "
                "`orchestrator.persistence.open_store(path, read_only=True)`"
            )
        super().__init__(path, message)


class StoreFormatError(StoreError, ValueError):
    """A file that is not a session store this version of context-graph can read."""


class StoreCorruptError(StoreError, ValueError):
    """A session store whose journal does not decode or does not replay; nothing restored.

    Attributes:
        seq: The journal entry at fault, when one is.
    """

    def __init__(self, path: str, message: str, *, seq: int | None = None) -> None:
        self.seq = seq
        super().__init__(path, message if seq is None else f"journal entry {seq}: {message}")


class StoreConflictError(StoreError):
    """Another writer moved the shared session on first; nothing of this write was kept.

    Raised for an append made from an older view of the session's log (refresh, then
    retry), and for a compaction whose lease was taken over by another worker.

    Attributes:
        expected: The log position (or fencing token) this writer wrote from.
        found: The one the store holds.
    """

    def __init__(self, path: str, message: str, *, expected: int, found: int) -> None:
        self.expected = expected
        self.found = found
        super().__init__(path, message)


class StoreUnavailableError(StoreError):
    """The database server cannot be reached now (down, restarting, connection dropped).

    Nothing half-written is left behind: a write either landed whole or not at all.
    """


class WrongPackageError(ContextGraphError, ImportError):
    """A name of another package asked of `context_graph`; says the import that works.

    `from context_graph import ContextManager` raises it. An `ImportError`, not an
    `AttributeError`: `from ... import` replaces an `AttributeError` by its own message,
    which would not say where the name lives.
    """
