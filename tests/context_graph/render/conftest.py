"""The `sdk_check` fixture: check a payload against the official SDKs' request types."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from context_graph.validate.sdk_types import sdk_problems

SdkCheck = Callable[[Any, str], list[str]]


@pytest.fixture(name="sdk_check")
def fixture_sdk_check() -> SdkCheck:
    """`sdk_check(payload, format)` lists where a payload breaks the SDK request types."""
    return sdk_problems
