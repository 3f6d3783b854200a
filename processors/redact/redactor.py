"""`SecretRedactor`: a processor that proposes redacted copies of nodes holding secrets."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar

from context_graph.errors import ConfigurationError
from context_graph.graph.content import ContentPart, ThinkingPart
from context_graph.graph.nodes import SIGNED_SECRETS, Node, ToolCallNode
from processors.base import ProcessorContext, Proposal, Scope, replace_each, replacement_for
from processors.markers import REDACTED
from processors.redact.fields import (
    field_texts,
    native_text,
    part_texts,
    redact_fields,
    redact_native,
    redact_part,
    signed_texts,
)
from processors.redact.rules import SECRET_TYPES
from processors.redact.scan import (
    DEFAULT_ENTROPY_THRESHOLD,
    DEFAULT_MIN_LENGTH,
    SecretFinding,
    find_secrets,
    redact_text,
)

__all__ = ["SIGNED_SECRETS", "SecretRedactor", "strip_signed_secrets"]

# `SIGNED_SECRETS` (from context_graph.graph.nodes) is the meta key of a node whose signed thinking
# holds secrets: `{type: count}`. The block cannot be redacted (its signature covers it), so
# summarizers are given the node without its signed thinking (`strip_signed_secrets`), and
# renders report the count (`RenderResult.signed_secrets`).


class SecretRedactor:
    """Replaces credentials in any node's text by typed placeholders.

    Every text a model or a summarizer reads is scanned: text parts, unsigned thinking,
    documents (plain text, or base64 that decodes to text such as JSON) and their
    titles, image and document addresses, file paths, sub-agent ids and tool-call
    arguments. Signed thinking must go back byte for byte: a secret there is counted
    in the node's `meta["signed_secrets"]` and the proposal's note, and
    `strip_signed_secrets` keeps the block from summarizers. A node without secrets
    gets no edit. Pinned nodes are redacted too (`include_pinned`): this is a safety
    edit, not a compaction. It is the built-in `Redactor`: as a pipeline stage it also
    screens every new node before each render (`screens_new_nodes`).

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
    scope: ClassVar[Scope] = "outputs"
    # A stage alone would redact only when a compaction runs; a secret in a later turn
    # would reach the request. Declared, the session screens every new node with it.
    screens_new_nodes: ClassVar[bool] = True

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
        self._known: Mapping[str, str] = MappingProxyType({})

    def knowing(self, known: Mapping[str, str]) -> SecretRedactor:
        """A copy that also redacts `known` secrets (text -> type) wherever they appear.

        For secrets found earlier in a session (`secrets`): a password read from a
        `.env` file and repeated in a later turn, where nothing around it says what it
        is, is redacted there too.
        """
        copy = SecretRedactor(
            types=self.types,
            entropy_threshold=self.entropy_threshold,
            min_length=self.min_length,
            include_pinned=self.include_pinned,
        )
        copy._known = MappingProxyType(dict(known))
        return copy

    def redact(
        self, text: str, *, known: Mapping[str, str] | None = None
    ) -> tuple[str, tuple[SecretFinding, ...]]:
        """`redact_text` with this redactor's options (`known`: secrets found elsewhere)."""
        return redact_text(
            text,
            types=self.types,
            entropy_threshold=self.entropy_threshold,
            min_length=self.min_length,
            known=known,
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
        run = _Run(dict(self._known))
        self._scan(nodes, run)
        return replace_each(
            self.name,
            ctx,
            ((node, self._redact_node(node, run)) for node in nodes),
            note=lambda edits, _before, _after: run.note(edits),
            # A placeholder can be longer than a short password: redaction may grow.
            shrink_only=False,
            purpose="safety",
        )

    def secrets(self, targets: Sequence[Node]) -> dict[str, str]:
        """The secrets this redactor finds in `targets`: each secret's text -> its type.

        What `propose` would hide, found the same way (JSON texts also by their decoded
        strings, signed thinking too), for redacting other texts made from these nodes
        (`redact_text(..., known=...)`): a report or a log line that quotes them.
        """
        run = _Run()
        self._scan([n for n in targets if self.include_pinned or not n.pinned], run)
        return run.known

    def _scan(self, nodes: Sequence[Node], run: _Run) -> None:
        """First pass over `nodes`: which texts hold secrets, and the secrets themselves."""
        for node in nodes:
            for text in _texts(node):
                self._collect(text, run)
                # The model reads a JSON text's strings decoded, escapes undone.
                for value in _strings(_loads(text)):
                    self._collect(value, run)
        for node in nodes:  # after the rest: a secret seen elsewhere is found here too
            for text in signed_texts(node):
                self._collect_signed(text, run)

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

    def _collect_signed(self, text: str, run: _Run) -> None:
        """Count the secrets of a signed thinking block; remember them for other texts."""
        findings = find_secrets(
            text,
            types=self.types,
            entropy_threshold=self.entropy_threshold,
            min_length=self.min_length,
            known=run.known,
        )
        if findings:
            run.signed[text] = Counter(f.type for f in findings)
        for finding in findings:
            run.known.setdefault(text[slice(*finding.span)], finding.type)

    def _redact_node(self, node: Node, run: _Run) -> Node | None:
        counted = run.found.copy()

        def redact(text: str) -> str:
            return self._redact(text, run)

        def redact_body(text: str) -> str:
            return self._redact_json(text, run)

        content: list[ContentPart] = [
            redact_part(part, redact, redact_body) for part in node.content
        ]
        changed = any(new is not old for new, old in zip(content, node.content, strict=True))
        updates: dict[str, Any] = dict(redact_fields(node, redact))
        if isinstance(node, ToolCallNode):
            arguments = self._redact_json(node.arguments, run)
            if arguments != node.arguments:
                updates["arguments"] = arguments
        summary = native_text(node)
        if summary is not None:
            # Redacted with a run of its own: the artifact's summary is usually the node's
            # text as well, whose secrets are counted already.
            trial = _Run(run.known, run.dirty)
            native = redact_native(node, lambda text: self._redact_json(text, trial))
            if native is not None:
                updates["native"] = native
                if summary not in {t for part in node.content for t in part_texts(part)}:
                    run.found.update(trial.found)
        meta = dict(node.meta)
        redacted = changed or bool(updates)
        if redacted:
            meta[REDACTED] = dict(sorted((run.found - counted).items()))
        signed = _signed_in(node, run)
        if signed:
            meta[SIGNED_SECRETS] = dict(sorted(signed.items()))
        if not redacted and meta == dict(node.meta):
            return None  # nothing to hide, nothing new to report (already marked)
        run.redacted_nodes += redacted
        run.signed_nodes += bool(signed)
        updates["meta"] = meta
        return replacement_for(node, content, **updates)

    def _redact_json(self, text: str, run: _Run) -> str:
        """Redact a text as it is; JSON whose shape that breaks, or that hides a secret, by value.

        Raw text keeps tool-call arguments and JSON outputs byte for byte around each
        placeholder. But a secret that spans several JSON strings would take their
        quotes with it, and one next to an escape (a quote or a slash escaped by a
        backslash) is not in the raw text as such: then each string (keys too) is
        redacted as the model reads it, decoded, and the JSON is written again.
        """
        trial = _Run(run.known, run.dirty)
        redacted = self._redact(text, trial)
        original = _loads(text)
        if original is _NOT_JSON:
            run.found.update(trial.found)
            return redacted
        after = _loads(redacted)
        if _blank(after) == _blank(original) and not any(
            secret in value for value in _strings(after) for secret in run.known
        ):
            run.found.update(trial.found)
            return redacted
        indent = 2 if "\n" in text.strip() else None  # a pretty-printed output stays so
        return json.dumps(self._redact_value(original, run), ensure_ascii=False, indent=indent)

    def _redact_value(self, value: Any, run: _Run) -> Any:
        if isinstance(value, str):
            return self._redact(value, run)
        if isinstance(value, list):
            return [self._redact_value(v, run) for v in value]
        if isinstance(value, dict):
            out: dict[str, Any] = {}
            for key, item in value.items():
                name = self._redact(key, run)
                # Two secret keys may redact alike: number the later ones, lose none.
                base, n = name, 1
                while name in out:
                    n += 1
                    name = f"{base} ({n})"
                out[name] = self._redact_value(item, run)
            return out
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
    signed: dict[str, Counter[str]] = field(default_factory=dict)
    """Signed thinking text -> the types of the secrets it holds."""
    redacted_nodes: int = 0
    signed_nodes: int = 0

    def note(self, edits: int) -> str:
        """The proposal's note: counts by type, never a secret."""
        if not edits:
            return "no secrets found"
        notes = []
        if self.redacted_nodes:
            kinds = ", ".join(f"{n} {kind}" for kind, n in sorted(self.found.items()))
            notes.append(
                f"redacted {self.found.total()} secret(s) in {self.redacted_nodes} node(s): {kinds}"
            )
        if self.signed_nodes:
            left = sum(c.total() for c in self.signed.values())
            notes.append(
                f"{left} secret(s) left in signed thinking in {self.signed_nodes} node(s) "
                "(a signature covers it: sent back unchanged, kept out of summaries)"
            )
        return "; ".join(notes)


def _texts(node: Node) -> Iterator[str]:
    """Every text of a node the redactor may change (signed thinking is not one)."""
    for part in node.content:
        yield from part_texts(part)
    yield from field_texts(node).values()
    if isinstance(node, ToolCallNode):
        yield node.arguments
    native = native_text(node)
    if native is not None:
        yield native


def _signed_in(node: Node, run: _Run) -> Counter[str]:
    found: Counter[str] = Counter()
    for text in signed_texts(node):
        found.update(run.signed.get(text, Counter()))
    return found


def strip_signed_secrets(nodes: Sequence[Node]) -> list[Node]:
    """The nodes as a summarizer may read them: no signed thinking that holds a secret.

    The redactor marks such nodes (`meta["signed_secrets"]`); their signed thinking
    blocks are left out of the copies, every other node is passed through as it is.
    """
    return [_without_signed(node) if SIGNED_SECRETS in node.meta else node for node in nodes]


def _without_signed(node: Node) -> Node:
    content = [
        p for p in node.content if not (isinstance(p, ThinkingPart) and p.signature is not None)
    ]
    data = node.model_dump()
    data["content"] = [p.model_dump() for p in content]
    return type(node).model_validate(data)


_NOT_JSON = object()


def _loads(text: str) -> Any:
    """The JSON value of `text`, or `_NOT_JSON` (also for a bare number or word)."""
    if text.lstrip()[:1] not in ("{", "[", '"'):
        return _NOT_JSON  # most texts: no parse attempt
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return _NOT_JSON


def _strings(value: Any) -> Iterator[str]:
    """Every string in a JSON value, object keys included."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _strings(item)


def _blank(value: Any) -> Any:
    if isinstance(value, str):
        return ""
    if isinstance(value, list):
        return [_blank(v) for v in value]
    if isinstance(value, dict):
        return {k: _blank(v) for k, v in value.items()}
    return value


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
