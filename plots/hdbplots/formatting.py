"""Numbers, sizes, durations and API names as a figure's reader reads them."""
from __future__ import annotations

import math

# Between the parts of a run's identity, a figure's subtitle: finish() breaks the line only there.
SUBTITLE_SEPARATOR = "  ·  "

# The call a reader would write for each `api` value of results.csv.
API_LABELS = {"async": "cudaMemcpyAsync", "sync": "cudaMemcpy", "kernel": "SM kernel"}


def format_number(value: float, digits: int = 3) -> str:
    """At most `digits` significant digits, never scientific notation, no trailing zeros."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    decimals = max(0, digits - 1 - int(math.floor(math.log10(abs(value)))))
    text = f"{value:.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def format_bytes(size: float) -> str:
    """Binary size label: 1024 → '1 KiB', 3 << 20 → '3 MiB' (data stays in bytes)."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(size) >= scale:
            return f"{format_number(size / scale)} {unit}"
    return f"{format_number(size)} B"


def format_time_us(value_us: float) -> str:
    """A duration given in µs, in the unit a reader expects (µs, ms or s)."""
    if value_us >= 1e6:
        return f"{format_number(value_us / 1e6)} s"
    if value_us >= 1e3:
        return f"{format_number(value_us / 1e3)} ms"
    return f"{format_number(value_us)} µs"


def api_label(api: str | None) -> str:
    """'async' → 'cudaMemcpyAsync': the call a reader would write."""
    return API_LABELS.get(api, api or "?")


def line_label(host_kind: str | None, api: str | None, detail: str = "") -> str:
    """'pinned · cudaMemcpyAsync' — what a curve is, in the reader's words (detail in brackets)."""
    label = f"{host_kind or '?'} · {api_label(api)}"
    return f"{label} ({detail})" if detail else label
