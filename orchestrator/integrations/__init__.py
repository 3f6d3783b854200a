"""Framework integrations, each an optional extra imported lazily from its own module."""

__all__: list[str] = []
