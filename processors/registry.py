"""Finding processors by name: built-ins, registered classes and entry points.

Users make their processors available by name in two ways:

- `register_processor(MyProcessor)` (or `register_processor(MyProcessor, name="mine")`)
  in code;
- an entry point in their package's metadata, group `context_graph.processors`:
  `[project.entry-points."context_graph.processors"] mine = "my_pkg:MyProcessor"`.

The names live in one `ProcessorRegistry` per process (`REGISTRY`, which profiles look
stage names up in); the module-level functions act on it. A test that needs a registry
of its own, with entry points of its choosing, builds a `ProcessorRegistry`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from context_graph.errors import ConfigurationError

__all__ = [
    "ENTRY_POINT_GROUP",
    "REGISTRY",
    "ProcessorRegistry",
    "available_processors",
    "create_processor",
    "get_processor",
    "register_processor",
    "unregister_processor",
]

ENTRY_POINT_GROUP = "context_graph.processors"


def _installed_entry_points(group: str) -> Iterable[EntryPoint]:
    return entry_points(group=group)


class ProcessorRegistry:
    """Processor classes by name; entry points are read once, at the first lookup.

    Args:
        find_entry_points: Returns the entry points of a group (default: the installed
            distributions'); called once, with `ENTRY_POINT_GROUP`.
    """

    def __init__(
        self,
        *,
        find_entry_points: Callable[[str], Iterable[EntryPoint]] = _installed_entry_points,
    ) -> None:
        self._find_entry_points = find_entry_points
        self._lock = threading.Lock()
        self._classes: dict[str, type[Any]] = {}
        self._entry_points_loaded = False

    def register(
        self, cls: type[Any], *, name: str | None = None, replace: bool = False
    ) -> type[Any]:
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
        with self._lock:
            taken = self._classes.get(key)
            if taken is not None and taken is not cls and not replace:
                msg = f"processor name {key!r} is taken by {taken.__qualname__}; pass replace=True"
                raise ConfigurationError(msg)
            self._classes[key] = cls
        return cls

    def unregister(self, name: str) -> None:
        """Forget the processor registered as `name` (no error if there is none)."""
        with self._lock:
            self._classes.pop(name, None)

    def get(self, name: str) -> type[Any]:
        """The processor class registered as `name`.

        Raises:
            ConfigurationError: no processor has that name (the message lists the names).
        """
        self._load_entry_points()
        with self._lock:
            cls = self._classes.get(name)
        if cls is None:
            names = ", ".join(self.names()) or "none"
            msg = f"no processor named {name!r}; available: {names}"
            raise ConfigurationError(msg)
        return cls

    def create(self, name: str, **options: Any) -> Any:
        """Construct the processor registered as `name` with `options`."""
        return self.get(name)(**options)

    def names(self) -> tuple[str, ...]:
        """Every registered name, sorted."""
        self._load_entry_points()
        with self._lock:
            return tuple(sorted(self._classes))

    def _load_entry_points(self) -> None:
        if self._entry_points_loaded:
            return
        for point in self._find_entry_points(ENTRY_POINT_GROUP):
            if point.name in self._classes:  # a class registered in code wins
                continue
            try:
                cls = point.load()
            except Exception as exc:
                msg = f"entry point {point.name!r} ({point.value}) failed to load: {exc}"
                raise ConfigurationError(msg) from exc
            self.register(cls, name=point.name)
        self._entry_points_loaded = True


#: The process-wide registry: the built-ins register here, and profiles look names up here.
REGISTRY = ProcessorRegistry()


def register_processor(
    cls: type[Any], *, name: str | None = None, replace: bool = False
) -> type[Any]:
    """Make `cls` available by name in `REGISTRY` (see `ProcessorRegistry.register`)."""
    return REGISTRY.register(cls, name=name, replace=replace)


def unregister_processor(name: str) -> None:
    """Forget the processor registered in `REGISTRY` as `name` (no error if there is none)."""
    REGISTRY.unregister(name)


def get_processor(name: str) -> type[Any]:
    """The processor class registered in `REGISTRY` as `name` (`ConfigurationError` if none)."""
    return REGISTRY.get(name)


def create_processor(name: str, **options: object) -> Any:
    """Construct the processor registered in `REGISTRY` as `name` with `options`.

    The options are whatever the registered class's constructor takes, so they cannot
    be typed here; the class checks them.
    """
    return REGISTRY.create(name, **options)


def available_processors() -> tuple[str, ...]:
    """Every name registered in `REGISTRY` (built-ins, code, entry points), sorted."""
    return REGISTRY.names()
