"""Tolerant readers of JSON values (meta.json, harness/suite.json): a missing or mistyped field
is unknown (None, {}), never an exception, as an older or partial meta.json must still draw."""
from __future__ import annotations

import math


def as_dict(value: object) -> dict:
    return value if isinstance(value, dict) else {}


def as_text(value: object) -> str | None:
    return str(value) if value not in (None, "") else None


def positive(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return number if number > 0 and math.isfinite(number) else None
