"""The orchestrator: when and in what order processors run, and the command-line tool."""

from __future__ import annotations

__all__: list[str] = []
