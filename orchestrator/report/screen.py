"""`OutputScreen`: what leaves the engine for a person is redacted as a request is.

A request is redacted node by node (`redact_secrets`), but a person also reads what the
engine writes about a session: the HTML replay report (which shows the original behind
every compacted piece, taken from the pristine record), `replay --report` JSON, `inspect`
and every line the command-line tool prints. All of it goes through one `OutputScreen`.
With redaction on, each text passes through `redact_text` with the session's redactor
options and every secret that redactor found in the session's nodes (`learn`), so a
password found in a `.env` file is hidden where a log line repeats it too; off, every
text passes unchanged, byte for byte.

```python
screen = OutputScreen(manager.redactor)
screen.learn(manager.raw)
print(screen.text(line))
path.write_text(screen.json_text(report.model_dump_json(indent=2)))
```
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from context_graph.graph.nodes import Node
from processors.base import Redactor
from processors.redact import SecretFinding

__all__ = ["OutputScreen"]

#: Characters of a known secret's start that, cut short by an ellipsis, still count as it.
_SHORTEST_CUT = 8
_ELLIPSES = ("\u2026", "...")


class OutputScreen:
    """Redacts every text, JSON value or JSON document a person is given.

    Args:
        redactor: The session's redactor (its options and types); `None` turns the
            screen off.
    """

    def __init__(self, redactor: Redactor | None = None) -> None:
        self._redactor = redactor
        self._known: dict[str, str] = {}
        self._learned: set[str] = set()

    @property
    def on(self) -> bool:
        """Whether anything is redacted."""
        return self._redactor is not None

    @property
    def redactor(self) -> Redactor | None:
        """The redactor whose options the screen uses; `None` when it is off."""
        return self._redactor

    def learn(self, nodes: Iterable[Node]) -> None:
        """Remember the secrets the redactor finds in `nodes` (those not seen before).

        A secret found by its context (`password=...`) is then redacted wherever a text
        repeats it without that context.
        """
        if self._redactor is None:
            return
        new = [node for node in nodes if node.id not in self._learned]
        self._learned.update(node.id for node in new)
        for secret, kind in self._redactor.secrets(new).items():
            self._known.setdefault(secret, kind)

    def learn_value(self, value: Any) -> None:
        """Remember the secrets in every string of a JSON value (a request body)."""
        redactor = self._redactor
        if redactor is None:
            return
        for text in _strings(value):
            for finding in redactor.redact(text)[1]:
                self._known.setdefault(text[slice(*finding.span)], finding.type)

    def text(self, text: str) -> str:
        """`text` with every secret replaced by its placeholder."""
        redactor = self._redactor
        if redactor is None or not text:
            return text
        return self._cut_short(redactor.redact(text, known=self._known)[0])

    def _cut_short(self, text: str) -> str:
        """`text` without the start of a known secret that a message cut with an ellipsis.

        Messages quote ids and values shortened (`ghp_dA54e0t0beCKQD2I…`): no rule
        finds the secret then, but it is still most of it.
        """
        if not any(mark in text for mark in _ELLIPSES):
            return text
        for secret, kind in self._known.items():
            if len(secret) <= _SHORTEST_CUT:
                continue
            head = secret[:_SHORTEST_CUT]
            start = text.find(head)
            while start != -1:
                end = start + _SHORTEST_CUT
                while end - start < len(secret) and text[end : end + 1] == secret[end - start]:
                    end += 1
                if text.startswith(_ELLIPSES, end):
                    placeholder = SecretFinding(kind, (start, end)).placeholder
                    text = text[:start] + placeholder + text[end:]
                    end = start + len(placeholder)
                start = text.find(head, end)
        return text

    def value(self, value: Any) -> Any:
        """A JSON-like value with every string redacted, object keys too."""
        if self._redactor is None:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list | tuple):
            return [self.value(item) for item in value]
        if isinstance(value, Mapping):
            out: dict[Any, Any] = {}
            for key, item in value.items():
                name = self.text(key) if isinstance(key, str) else key
                base, n = name, 1
                while name in out:  # two keys that redact alike: number them, lose none
                    n += 1
                    name = f"{base} ({n})"
                out[name] = self.value(item)
            return out
        return value

    def json_text(self, text: str, *, indent: int | None = None) -> str:
        """A JSON document with every string redacted, written again only if one changed.

        Redacted string by string, so the document stays valid JSON; unchanged, it is
        returned as it came.
        """
        if self._redactor is None:
            return text
        original = json.loads(text)
        screened = self.value(original)
        if screened == original:
            return text
        trailing = text[len(text.rstrip("\n")) :]
        # An ASCII-only document (`ensure_ascii`, the default of `json.dumps`) stays so.
        written = json.dumps(screened, ensure_ascii=text.isascii(), indent=indent)
        return written + trailing


def _strings(value: Any) -> Iterator[str]:
    """Every string in a JSON value, object keys included."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, Mapping):
        for key, item in value.items():
            if isinstance(key, str):
                yield key
            yield from _strings(item)
