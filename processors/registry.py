"""Finding processors by name: built-ins, registered classes and entry points.

Users make their processors available by name in two ways:

- `register(MyProcessor)` (or `register(MyProcessor, name="mine")`) in code;
- an entry point in their package's metadata, group `context_graph.processors`:
  `[project.entry-points."context_graph.processors"] mine = "my_pkg:MyProcessor"`.
"""

from __future__ import annotations

import threading
from importlib.metadata import entry_points
from typing import Any

from context_graph.errors import ConfigurationError

__all__ = ["ENTRY_POINT_GROUP", "available", "create", "get", "register", "unregister"]

ENTRY_POINT_GROUP = "context_graph.processors"

_lock = threading.Lock()
_registry: dict[str, type[Any]] = {}
_entry_points_loaded = False


def register(cls: type[Any], *, name: str | None = None, replace: bool = False) -> type[Any]:
    """Make `cls` available under `name` (default: its `name` attribute or class name).

    Usable as a decorator. Raises `ConfigurationError` when the name is taken by another
    class (pass `replace=True` to override) or `cls` has no `propose` method.
    """
    if not callable(getattr(cls, "propose", None)):
        msg = f"{cls.__qualname__} has no `propose(targets, ctx)` method: not a processor"
        raise ConfigurationError(msg)
    key = name or getattr(cls, "name", None) or cls.__name__
    if not isinstance(key, str) or not key:
        msg = f"processor name must be a non-empty string, got {key!r}"
        raise ConfigurationError(msg)
    with _lock:
        taken = _registry.get(key)
        if taken is not None and taken is not cls and not replace:
            msg = f"processor name {key!r} is taken by {taken.__qualname__}; pass replace=True"
            raise ConfigurationError(msg)
        _registry[key] = cls
    return cls


def unregister(name: str) -> None:
    """Forget the processor registered as `name` (no error if there is none)."""
    with _lock:
        _registry.pop(name, None)


def _load_entry_points() -> None:
    global _entry_points_loaded
    if _entry_points_loaded:
        return
    for point in entry_points(group=ENTRY_POINT_GROUP):
        if point.name in _registry:
            continue
        try:
            cls = point.load()
        except Exception as exc:
            msg = f"entry point {point.name!r} ({point.value}) failed to load: {exc}"
            raise ConfigurationError(msg) from exc
        register(cls, name=point.name)
    _entry_points_loaded = True


def get(name: str) -> type[Any]:
    """The processor class registered as `name`.

    Raises:
        ConfigurationError: no processor has that name (the message lists the names).
    """
    _load_entry_points()
    with _lock:
        cls = _registry.get(name)
    if cls is None:
        names = ", ".join(available()) or "none"
        msg = f"no processor named {name!r}; available: {names}"
        raise ConfigurationError(msg)
    return cls


def create(name: str, **options: Any) -> Any:
    """Construct the processor registered as `name` with `options`."""
    return get(name)(**options)


def available() -> tuple[str, ...]:
    """Every registered name, sorted."""
    _load_entry_points()
    with _lock:
        return tuple(sorted(_registry))
