"""Reversible shortening of long URL query strings.

Search results, signed links and tracking URLs carry query strings of hundreds of
characters that cost tokens and mean nothing to a model. `shorten_urls` replaces each
long query string by a short tag (`?~3fa2b9c1`), deterministic in the query, and returns
the mapping back; `restore_urls` puts the originals back into whatever the model
answered: a string, or dicts, lists, tuples and pydantic models holding strings.

```python
short, mapping = shorten_urls(text)
answer = restore_urls(model_output, mapping)
```
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from functools import cached_property, partial
from types import MappingProxyType
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from context_graph.errors import ConfigurationError
from context_graph.graph.content import TextPart
from context_graph.graph.nodes import Node
from processors.base import ProcessorContext, Proposal, replace_each, replacement_for
from processors.registry import register_processor

__all__ = ["TAG_PREFIX", "URL_MAP_KEY", "UrlShortener", "restore_urls", "shorten_urls"]

#: Every tag starts with this (`?~` then hex); `~` right after `?` is rare in real URLs.
TAG_PREFIX = "?~"
#: The key under which `UrlShortener` keeps a replacement's mapping in `meta`.
URL_MAP_KEY = "url_map"

_URL = re.compile(r"https?://[^\s<>\"'`{}|\\^]+")
_TRAILING = ".,;:!?'\")]}"
_TAG_LENGTHS = (8, 12, 16, 32)
_T = TypeVar("_T")


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
        tags = {query: TAG_PREFIX + _digest(query)[:length] for query in queries}
        if len(set(tags.values())) < len(tags) or any(tag in text for tag in tags.values()):
            continue
        shortened = _URL.sub(partial(_shorten_match, tags=tags), text)
        mapping = {tag: query for query, tag in tags.items() if tag in shortened}
        if restore_urls(shortened, mapping) == text:
            return shortened, mapping
    return text, {}


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


def restore_urls(value: _T, mapping: Mapping[str, str]) -> _T:
    """Put the original query strings back wherever a tag of `mapping` appears in `value`.

    Strings are rewritten; dicts (keys and values), lists, tuples (named ones too) and
    pydantic models (as new, validated models) are rebuilt around rewritten contents;
    anything else is returned as it is. Unchanged parts are returned as the same objects.
    """
    if not mapping:
        return value
    pattern = re.compile("|".join(re.escape(tag) for tag in sorted(mapping, key=len, reverse=True)))
    restored: _T = _Restorer(pattern, mapping).restore(value)
    return restored


class _Restorer:
    def __init__(self, pattern: re.Pattern[str], mapping: Mapping[str, str]) -> None:
        self._pattern = pattern
        self._mapping = mapping
        self._active: set[int] = set()  # containers being walked: a cycle is left alone

    def restore(self, value: Any) -> Any:
        if isinstance(value, str):
            return self._pattern.sub(lambda match: self._mapping[match.group(0)], value)
        if not isinstance(value, BaseModel | Mapping | list | tuple) or id(value) in self._active:
            return value
        self._active.add(id(value))
        try:
            return self._rebuild(value)
        finally:
            self._active.discard(id(value))

    def _rebuild(self, value: Any) -> Any:
        if isinstance(value, BaseModel):
            return self._model(value)
        if isinstance(value, Mapping):
            items = [(self.restore(k), self.restore(v)) for k, v in value.items()]
            if all(a is k and b is v for (a, b), (k, v) in zip(items, value.items(), strict=True)):
                return value
            rebuilt = dict(items)
            return MappingProxyType(rebuilt) if isinstance(value, MappingProxyType) else rebuilt
        new = [self.restore(item) for item in value]
        if all(a is b for a, b in zip(new, value, strict=True)):
            return value
        if isinstance(value, list):
            return new
        return type(value)(*new) if hasattr(value, "_fields") else tuple(new)

    def _model(self, model: BaseModel) -> BaseModel:
        fields = {name: getattr(model, name) for name in type(model).model_fields}
        fields.update(model.model_extra or {})
        updates = {}
        for name, old in fields.items():
            new = self.restore(old)
            if new is not old:
                updates[name] = new
        if not updates:
            return model
        values = {**fields, **updates}
        chosen = model.model_fields_set | set(updates)
        data = {_input_key(model, name): values[name] for name in chosen if name in values}
        try:
            return type(model).model_validate(data)
        except ValidationError:
            return _copy_without_cache(model, updates)


def _input_key(model: BaseModel, name: str) -> str:
    """The key validation reads a field from: its alias when it has one."""
    info = type(model).model_fields.get(name)
    if info is None:
        return name  # an extra field
    if isinstance(info.validation_alias, str):
        return info.validation_alias
    return info.alias or name


def _copy_without_cache(model: BaseModel, updates: dict[str, Any]) -> BaseModel:
    """`model_copy` keeps cached properties computed from the old values: drop them."""
    copied = model.model_copy(update=updates)
    for klass in type(model).__mro__:
        for name, attribute in vars(klass).items():
            if isinstance(attribute, cached_property):
                copied.__dict__.pop(name, None)
    return copied


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
