"""Distill: shorter tool results by deterministic rules that know the content type.

See docs/processors/distill.md. `Distiller` is the processor; `distill_text` is the same
work on a bare string.
"""

from __future__ import annotations

from processors.distill.common import LEVELS, TARGET_RATIOS, Level
from processors.distill.detect import CONTENT_TYPES, ContentType
from processors.distill.distiller import (
    CODE_LIGHT_PRESSURE,
    DEFAULT_MIN_TOKENS,
    PRESSURE_THRESHOLDS,
    Distillate,
    Distiller,
    detect_content_type,
    distill_text,
    distilled_level,
    level_for_pressure,
)

__all__ = [
    "CODE_LIGHT_PRESSURE",
    "CONTENT_TYPES",
    "DEFAULT_MIN_TOKENS",
    "LEVELS",
    "PRESSURE_THRESHOLDS",
    "TARGET_RATIOS",
    "ContentType",
    "Distillate",
    "Distiller",
    "Level",
    "detect_content_type",
    "distill_text",
    "distilled_level",
    "level_for_pressure",
]
