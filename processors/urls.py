"""Reversible shortening of long URL query strings.

Search results, signed links and tracking URLs carry query strings of hundreds of
characters that cost tokens and mean nothing to a model. `shorten_urls` replaces each
long query string by a short tag that keeps the query's start as a hint
(`?q=very+long+quer~3fa2b9c1`), deterministic in the query, and returns the mapping
back; `restore_urls` (from `context_graph.urls`) puts the originals back into whatever
the model answered: a string, or dicts, lists, tuples and pydantic models holding
strings. A `ContextManager` restores every reply it ingests (`add_response`, wrapped
clients) with the map its session's shortened nodes carry.

```python
short, mapping = shorten_urls(text)
answer = restore_urls(model_output, mapping)
```
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from functools import partial
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from context_graph.errors import ConfigurationError
from context_graph.graph.content import TextPart
from context_graph.graph.nodes import Node
from context_graph.urls import URL_MAP_KEY, restore_urls
from processors.base import ProcessorContext, Proposal, Scope, replace_each, replacement_for
from processors.registry import register_processor

__all__ = ["HINT_CHARS", "TAG_MARK", "URL_MAP_KEY", "UrlShortener", "restore_urls", "shorten_urls"]

#: Between a tag's hint and its hex digits: `?q=very+long+quer~3fa2b9c1`.
TAG_MARK = "~"
#: How many characters of the query a tag keeps as a hint to the model.
HINT_CHARS = 16

_URL = re.compile(r"https?://[^\s<>\"'`{}|\\^]+")
_TRAILING = ".,;:!?'\")]}"
_TAG_LENGTHS = (8, 12, 16, 32)


def shorten_urls(text: str, *, min_length: int = 32) -> tuple[str, dict[str, str]]:
    """Replace the long query strings of the URLs in `text` by short tags.

    A query string (from `?` up to `#` or the end of the URL) is replaced only when it is
    at least `min_length` characters and its tag is shorter. Tags are derived from the
    query, lengthened when one would collide with text already present, and the result
    is checked to restore exactly; when it would not, `text` comes back unchanged.

    Returns:
        The shortened text, and the mapping from each tag to the query it stands for.
    """
    queries = _long_queries(text, min_length)
    if not queries:
        return text, {}
    for length in _TAG_LENGTHS:
        tags = {query: _tag(query, length) for query in queries}
        if len(set(tags.values())) < len(tags) or any(tag in text for tag in tags.values()):
            continue
        shortened = _URL.sub(partial(_shorten_match, tags=tags), text)
        mapping = {tag: query for query, tag in tags.items() if tag in shortened}
        if restore_urls(shortened, mapping) == text:
            return shortened, mapping
    return text, {}


def _tag(query: str, length: int) -> str:
    """`?`, the start of the query as a hint to the model, `~`, then `length` hex digits.

    The hint (`?q=very+long+quer~3fa2b9c1`) tells the model what the link was for; the
    digits make the tag exact. The hint is cut so that the tag stays shorter than the query.
    """
    hint = query[1 : 1 + max(0, min(HINT_CHARS, len(query) - length - 3))]
    return f"?{hint}{TAG_MARK}{_digest(query)[:length]}"


def _long_queries(text: str, min_length: int) -> list[str]:
    found: dict[str, None] = {}
    for match in _URL.finditer(text):
        query = _query(_trim(match.group(0)))
        if query is not None and len(query) >= min_length:
            found.setdefault(query)
    return list(found)


def _trim(url: str) -> str:
    """Drop punctuation that ends the sentence rather than the URL."""
    while url and url[-1] in _TRAILING:
        if url[-1] == ")" and url.count("(") >= url.count(")"):
            break
        url = url[:-1]
    return url


def _query(url: str) -> str | None:
    start = url.find("?")
    if start < 0:
        return None
    end = url.find("#", start)
    return url[start : end if end >= 0 else len(url)]


def _shorten_match(match: re.Match[str], tags: Mapping[str, str]) -> str:
    url = match.group(0)
    trimmed = _trim(url)
    query = _query(trimmed)
    tag = tags.get(query) if query is not None else None
    if query is None or tag is None or len(tag) >= len(query):
        return url
    start = trimmed.find("?")
    return trimmed[:start] + tag + trimmed[start + len(query) :] + url[len(trimmed) :]


def _digest(query: str) -> str:
    return hashlib.blake2b(query.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


class _Options(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    min_query_chars: int = Field(32, ge=8)


class UrlShortener:
    """Shortens long URL query strings in node text, reversibly.

    Each replacement keeps its tag-to-query mapping in `meta["url_map"]` so that the
    orchestrator can `restore_urls` the model's answers. Pinned nodes are left alone;
    only text parts change (thinking blocks are sent back byte for byte).

    Args:
        min_query_chars: Shorten query strings of at least this many characters
            (default 32, at least 8).
    """

    name = "shorten_urls"
    scope: ClassVar[Scope] = "outputs"

    def __init__(self, *, min_query_chars: int = 32) -> None:
        try:
            self._options = _Options(min_query_chars=min_query_chars)
        except ValidationError:
            msg = (
                f"UrlShortener: `min_query_chars` must be an integer >= 8, got "
                f"{min_query_chars!r}; pass e.g. min_query_chars=32"
            )
            raise ConfigurationError(msg) from None

    async def propose(self, targets: Sequence[Node], ctx: ProcessorContext) -> Proposal:
        """Propose a copy of every target whose text has long query strings."""
        return replace_each(
            self.name,
            ctx,
            ((node, self._shortened(node)) for node in targets),
            note=lambda edits, _before, _after: (
                f"shortened URL query strings in {edits} of {len(targets)} node(s)"
            ),
        )

    def _shortened(self, node: Node) -> Node | None:
        if node.pinned or not node.text:
            return None
        mapping: dict[str, str] = {}
        parts = []
        for part in node.content:
            if isinstance(part, TextPart):
                text, found = shorten_urls(part.text, min_length=self._options.min_query_chars)
                if any(mapping.get(tag, query) != query for tag, query in found.items()):
                    return None  # two parts disagree on a tag: not reversible as one map
                mapping.update(found)
                part = TextPart(text=text) if found else part
            parts.append(part)
        if not mapping:
            return None
        previous = node.meta.get(URL_MAP_KEY)
        earlier = previous if isinstance(previous, dict) else {}
        if any(earlier.get(tag, query) != query for tag, query in mapping.items()):
            return None  # an earlier map gives one of these tags another meaning
        merged = {**earlier, **mapping}
        return replacement_for(node, parts, meta={**node.meta, URL_MAP_KEY: merged})


register_processor(UrlShortener)
