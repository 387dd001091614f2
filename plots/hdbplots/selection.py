"""Picking, grouping and ordering rows (results.csv's Row, or any records) for a figure."""
from __future__ import annotations

from typing import Any, Callable, Iterable, Sequence

from .results_csv import Row


def select(rows: Iterable[Row], **criteria: object) -> list[Row]:
    """Rows whose named columns equal the given values, e.g. select(rows, case="alloc", streams=2);
    None selects rows that leave the column empty."""
    return [r for r in rows if all(r.get(k) == v for k, v in criteria.items())]


def by_size(rows: Iterable[Row], metric: str, statistic: str) -> dict[int, float]:
    """size_bytes → value for one metric and statistic."""
    return {r["size_bytes"]: r.value for r in rows
            if r.metric == metric and r.statistic == statistic
            and r.get("size_bytes") is not None and r.value is not None}


def devices_in(rows: Iterable[Row]) -> list[int]:
    """The `device` values of the rows, in index order."""
    return sorted({r.device for r in rows if r.device is not None})


def group(rows: Iterable[Any], key: Callable[[Any], tuple]) -> dict[tuple, list[Any]]:
    """Rows grouped by key, groups in first-seen order."""
    groups: dict[tuple, list[Any]] = {}
    for row in rows:
        groups.setdefault(key(row), []).append(row)
    return groups


def ordered(values: Iterable[Any], preferred: Sequence[Any]) -> list[Any]:
    """Distinct values (None dropped), the preferred ones first in that order, the rest sorted
    (numbers before text)."""
    distinct = {v for v in values if v is not None}
    rest = sorted(distinct - set(preferred), key=lambda v: (isinstance(v, str), v if isinstance(v, str) else float(v)))
    return [v for v in preferred if v in distinct] + rest
