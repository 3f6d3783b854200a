"""Putting shortened URLs back: the model's answer gets the original query strings.

`processors.urls.UrlShortener` replaces a long query string by a tag (a prefix of the
query as a hint, `~`, a hash) and keeps the tag-to-query map in the replacement's
`meta["url_map"]`. What the model answers may repeat a tag: `restore_urls` puts the
originals back into a string, or into the dicts, lists, tuples and pydantic models
(an SDK's response object) that hold strings, and `url_map` gathers the map from nodes.
This lives in the data layer so that ingesting a reply (`read_response`) can restore.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import cached_property
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ValidationError

if TYPE_CHECKING:
    from context_graph.graph.nodes import Node

__all__ = ["URL_MAP_KEY", "restore_urls", "url_map"]

#: The key under which a shortened node keeps its tag-to-query map in `meta`.
URL_MAP_KEY = "url_map"

_T = TypeVar("_T")


def url_map(nodes: Iterable[Node]) -> dict[str, str]:
    """Every tag-to-query pair the `nodes` carry in `meta["url_map"]`, merged."""
    merged: dict[str, str] = {}
    for node in nodes:
        found = node.meta.get(URL_MAP_KEY)
        if isinstance(found, Mapping):
            merged.update((str(tag), str(query)) for tag, query in found.items())
    return merged


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
