"""`SecretRedactor`: a processor that proposes redacted copies of nodes holding secrets."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from context_graph.errors import ConfigurationError
from context_graph.nodes import (
    ContentPart,
    DocumentPart,
    Node,
    TextPart,
    ThinkingPart,
    ToolCallNode,
)
from processors.base import ProcessorContext, Proposal, replace_each, replacement_for
from processors.redact._rules import SECRET_TYPES
from processors.redact._scan import (
    DEFAULT_ENTROPY_THRESHOLD,
    DEFAULT_MIN_LENGTH,
    SecretFinding,
    find_secrets,
    redact_text,
)

__all__ = ["SecretRedactor"]


class SecretRedactor:
    """Replaces credentials in any node's text by typed placeholders.

    Text parts, unsigned thinking, plain-text documents and tool-call arguments are
    redacted; signed thinking (it must go back byte for byte), images and opaque
    parts are left alone. A node without secrets gets no edit. Pinned nodes are
    redacted too (`include_pinned`): this is a safety edit, not a compaction.

    Args:
        types: Redact only these types (default: every type in `SECRET_TYPES`).
        entropy_threshold: Bits per character a value in a `key=value` pair needs to
            be flagged by entropy alone.
        min_length: Characters such a value needs.
        include_pinned: Redact pinned nodes as well (default `True`).

    Raises:
        ConfigurationError: an option is out of range, or names an unknown type.
    """

    name = "redact"

    def __init__(
        self,
        *,
        types: Collection[str] | None = None,
        entropy_threshold: float = DEFAULT_ENTROPY_THRESHOLD,
        min_length: int = DEFAULT_MIN_LENGTH,
        include_pinned: bool = True,
    ) -> None:
        self.types = _types(types)
        threshold = entropy_threshold
        if isinstance(threshold, bool) or not isinstance(threshold, int | float):
            msg = f"entropy_threshold must be a number of bits per character, got {threshold!r}"
            raise ConfigurationError(msg)
        if not 0 < threshold <= 8:
            msg = f"entropy_threshold must be in (0, 8] bits per character, got {threshold!r}"
            raise ConfigurationError(msg)
        if isinstance(min_length, bool) or not isinstance(min_length, int) or min_length < 8:
            msg = (
                f"min_length must be an integer >= 8 (shorter values are words), got {min_length!r}"
            )
            raise ConfigurationError(msg)
        if not isinstance(include_pinned, bool):
            msg = f"include_pinned must be True or False, got {include_pinned!r}"
            raise ConfigurationError(msg)
        self.entropy_threshold = float(threshold)
        self.min_length = min_length
        self.include_pinned = include_pinned

    def redact(self, text: str) -> tuple[str, tuple[SecretFinding, ...]]:
        """`redact_text` with this redactor's options."""
        return redact_text(
            text,
            types=self.types,
            entropy_threshold=self.entropy_threshold,
            min_length=self.min_length,
        )

    async def propose(self, targets: Sequence[Node], ctx: ProcessorContext) -> Proposal:
        """Propose a redacted copy of each target that holds a secret.

        A secret found in one target is also redacted where it repeats in another (a
        password from a config file echoed in a log line).

        Args:
            targets: Any nodes.
            ctx: The context (only its token counter is used).

        Returns:
            One `Replace` per node with secrets; an empty proposal when there are none.
            The note counts findings by type and never quotes a secret.
        """
        nodes = list({n.id: n for n in targets if self.include_pinned or not n.pinned}.values())
        run = _Run()
        for node in nodes:
            for text in _texts(node):
                self._collect(text, run)
        kinds = ", ".join(f"{n} {kind}" for kind, n in sorted(run.found.items()))
        return replace_each(
            self.name,
            ctx,
            ((node, self._redact_node(node, run)) for node in nodes),
            note=lambda edits, _before, _after: (
                f"redacted {run.found.total()} secret(s) in {edits} node(s): {kinds}"
                if edits
                else "no secrets found"
            ),
            # A placeholder can be longer than a short password: redaction may grow.
            shrink_only=False,
            purpose="safety",
        )

    def _collect(self, text: str, run: _Run) -> None:
        """First pass: remember which texts hold secrets, and the secrets themselves."""
        findings = find_secrets(
            text,
            types=self.types,
            entropy_threshold=self.entropy_threshold,
            min_length=self.min_length,
        )
        if findings:
            run.dirty.add(text)
        for finding in findings:
            run.known.setdefault(text[slice(*finding.span)], finding.type)

    def _redact_node(self, node: Node, run: _Run) -> Node | None:
        counted = run.found.copy()
        content: list[ContentPart] = []
        changed = False
        for part in node.content:
            new_part = self._redact_part(part, run)
            changed = changed or new_part is not part
            content.append(new_part)
        updates: dict[str, Any] = {}
        if isinstance(node, ToolCallNode):
            arguments = self._redact_arguments(node.arguments, run)
            if arguments != node.arguments:
                updates["arguments"] = arguments
        if not changed and not updates:
            return None
        here = run.found - counted
        updates["meta"] = {**node.meta, "redacted": dict(sorted(here.items()))}
        return replacement_for(node, content, **updates)

    def _redact_part(self, part: ContentPart, run: _Run) -> ContentPart:
        if isinstance(part, TextPart):
            text = self._redact(part.text, run)
            return part if text == part.text else part.model_copy(update={"text": text})
        if isinstance(part, ThinkingPart) and part.signature is None:
            text = self._redact(part.thinking, run)
            return part if text == part.thinking else part.model_copy(update={"thinking": text})
        if isinstance(part, DocumentPart) and part.data and _is_text(part.media_type):
            text = self._redact(part.data, run)
            return part if text == part.data else part.model_copy(update={"data": text})
        return part

    def _redact_arguments(self, arguments: str, run: _Run) -> str:
        """Redact the raw JSON text, unless that changed its shape: then its string values.

        Raw text keeps the arguments byte for byte around each placeholder; a secret
        that spans several JSON strings would take their quotes with it.
        """
        trial = _Run(run.known, run.dirty)
        redacted = self._redact(arguments, trial)
        original = _shape(arguments)
        if redacted == arguments or original is None or _shape(redacted) == original:
            run.found.update(trial.found)
            return redacted
        return json.dumps(self._redact_value(json.loads(arguments), run), ensure_ascii=False)

    def _redact_value(self, value: Any, run: _Run) -> Any:
        if isinstance(value, str):
            self._collect(value, run)
            return self._redact(value, run)
        if isinstance(value, list):
            return [self._redact_value(v, run) for v in value]
        if isinstance(value, dict):
            return {k: self._redact_value(v, run) for k, v in value.items()}
        return value

    def _redact(self, text: str, run: _Run) -> str:
        """Second pass: redact a text that holds a secret, its own or one seen elsewhere."""
        if text not in run.dirty and not any(secret in text for secret in run.known):
            return text
        redacted, findings = redact_text(
            text,
            types=self.types,
            entropy_threshold=self.entropy_threshold,
            min_length=self.min_length,
            known=run.known,
        )
        run.found.update(f.type for f in findings)
        return redacted


@dataclass
class _Run:
    """Per-proposal state (kept off the processor): secrets seen and counts by type."""

    known: dict[str, str] = field(default_factory=dict)
    dirty: set[str] = field(default_factory=set)
    found: Counter[str] = field(default_factory=Counter)


def _texts(node: Node) -> Iterator[str]:
    """Every text of a node the redactor may change."""
    for part in node.content:
        if isinstance(part, TextPart):
            yield part.text
        elif isinstance(part, ThinkingPart) and part.signature is None:
            yield part.thinking
        elif isinstance(part, DocumentPart) and part.data and _is_text(part.media_type):
            yield part.data
    if isinstance(node, ToolCallNode):
        yield node.arguments


def _shape(text: str) -> Any:
    """The JSON value of `text` with every string blanked; `None` when it is not JSON."""
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return _blank(value)


def _blank(value: Any) -> Any:
    if isinstance(value, str):
        return ""
    if isinstance(value, list):
        return [_blank(v) for v in value]
    if isinstance(value, dict):
        return {k: _blank(v) for k, v in value.items()}
    return value


def _is_text(media_type: str | None) -> bool:
    return media_type is not None and media_type.startswith("text/")


def _types(types: Collection[str] | None) -> frozenset[str] | None:
    if types is None:
        return None
    if isinstance(types, str) or not all(isinstance(t, str) for t in types):
        msg = f"types must be a collection of type names (not one string), got {types!r}"
        raise ConfigurationError(msg)
    unknown = sorted(set(types) - set(SECRET_TYPES))
    if unknown or not types:
        msg = f"types must be a non-empty subset of SECRET_TYPES; unknown: {unknown}"
        raise ConfigurationError(msg)
    return frozenset(types)
