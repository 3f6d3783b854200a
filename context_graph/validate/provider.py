"""`ProviderValidator`: one provider's rules on a request body.

Each format has one, in its folder under `context_graph.formats`, and
`context_graph.formats.registry` maps every format to its validator.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, TypeAlias, runtime_checkable

from context_graph.formats.wires import FormatName
from context_graph.validate.common import Collector

__all__ = ["ProviderValidator", "ValidationFormat"]

#: A wire format's name (`context_graph.formats.wires.FormatName`).
ValidationFormat: TypeAlias = FormatName


@runtime_checkable
class ProviderValidator(Protocol):
    """The documented rules of one provider's request body, checked offline.

    Contract: `check` adds to `out` every rule the payload breaks (codes from `rules`
    or `COMMON_RULES`, each with a message naming the place and the fix) and never
    raises on the payload, whatever its shape; it holds no state, so one instance
    serves every call.
    """

    @property
    def format(self) -> ValidationFormat:
        """The format's name, its key in the registry."""

    @property
    def rules(self) -> Mapping[str, str]:
        """The rule codes only this format reports, each with a one-line description."""

    def check(self, payload: Any, out: Collector) -> None:
        """Add every violation of `payload` to `out`."""

    def clues(self, body: dict[Any, Any]) -> list[str]:
        """What in the JSON object `body` only this format uses, as phrases for a message.

        First found first; a sign seen twice may be listed twice.
        """

    def mixes(self, body: dict[Any, Any]) -> bool:
        """Whether `body`, though it shows this format's clues, holds another's conversation.

        A body whose clues are this format's alone is then told as no format.
        """

    def leans(self, body: dict[Any, Any]) -> bool:
        """Whether `body`, showing no format's clues, still points to this format.

        A field only this format requires, though others accept it too; a body that leans
        to one format alone is told as that format.
        """
