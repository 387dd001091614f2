"""Where the numbers a figure's title states come from (plots/figures.json's `claims`)."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from .results_csv import Row


def claim(text: str, value: float, cites: Sequence[Mapping[str, Any]], formula: str = "a") -> dict:
    """One number a title states, and where it comes from, for plots/figures.json: `text` as it
    stands in the title ("7.7"), the value it rounds, and the results.csv rows it is computed
    from (`cites`: each a dict of column → value naming exactly one row, e.g. {"family": "copy",
    "case": "bandwidth", "direction": "h2d", "metric": "bandwidth", "statistic": "median", ...};
    or {"const": 63.0, "source": "PCIe Gen5 x16 from meta.json"} for a limit from meta.json).
    `formula` combines them (a, b, c, … in order; + − × ÷ only). tests/plots/figure_list_test.py
    looks every cited row up in the run's results.csv, recomputes the formula and fails when the
    title's text is not that number rounded."""
    return {"text": text, "value": float(value), "cites": [dict(c) for c in cites], "formula": formula}


def cite(row: Row, **extra: Any) -> dict[str, Any]:
    """The columns that name one results.csv row (family, case, device, its parameters, metric,
    statistic): what a claim cites."""
    named = {"family": row.family, "case": row.case, "metric": row.metric, "statistic": row.statistic}
    if row.device is not None:
        named["device"] = row.device
    named.update(row.params())
    named.update(extra)
    return named
