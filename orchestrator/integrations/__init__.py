"""Framework integrations, each an optional extra imported lazily from its own module."""
