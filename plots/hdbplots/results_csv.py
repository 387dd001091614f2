"""results.csv (schema 3, docs/csv-schema.md) read into typed rows.

A row is generic: every column by name (`row["chunks"]`, `row.get("regime")`), typed from the
families' declarations that the harness copies into meta.json (`families.<name>.schema.parameters`),
so no module parses the CSV or a packed string itself. The core columns with their types and the
statistics are meta.json's too (`results_csv`: CoreColumns), as the harness records them: no list
of columns is kept in Python. Only the csv module is used: CI has no pandas.
"""
from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

from .declarations import FamilyDeclaration, checkout_schema, declared_parameters


SCHEMA_VERSION = "3"
# What the harness writes in a text field that does not apply (docs/csv-schema.md): pandas would
# read an empty text field as NaN and load the column with node-dependent dtypes.
NOT_APPLICABLE = "-"
COLUMN_TYPES = ("int", "float", "text")
_INT_TEXT = re.compile(r"-?[0-9]+")


class InputError(Exception):
    """The run directory cannot be read as schema 3; plot_run prints the message and exits 2."""


@dataclass(frozen=True)
class CoreColumns:
    """results.csv's core columns and statistics, as the harness that wrote the run lists them
    (meta.json `results_csv`, what `hdbench schema-doc --json` prints: the C++ constants its CSV
    writer uses). No list of them is written in Python. `leading` stand before the parameter
    columns and `trailing` after them, in file order; `types` gives each one's 'int', 'float' or
    'text'; `statistics` are the `statistic` values the harness reads and writes (min and max rows
    are derived here too: with_spread). Which columns are parameters is never decided here:
    parameter_columns() takes them from the families' declarations and calls every other column core."""
    leading: tuple[str, ...]
    trailing: tuple[str, ...]
    types: Mapping[str, str]
    statistics: tuple[str, ...]
    # Core columns added within schema 3 (`later_columns`): a file written before them lacks them.
    later: tuple[str, ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        return self.leading + self.trailing

    def kind(self, name: str) -> str:
        """'int', 'float' or 'text' of a core column (text for a name it does not list)."""
        return self.types.get(name, "text")

    @classmethod
    def from_record(cls, record: object) -> "CoreColumns":
        """From meta.json's `results_csv` (or `hdbench schema-doc --json`); ValueError when it is
        not that object."""
        if not isinstance(record, Mapping):
            raise ValueError("not a JSON object")
        parts: dict[str, tuple[str, ...]] = {}
        types: dict[str, str] = {}
        for part in ("leading_columns", "trailing_columns"):
            columns = record.get(part)
            if not isinstance(columns, list) or not columns:
                raise ValueError(f"{part} is not a list of columns")
            for column in columns:
                name, kind = (column.get("name"), column.get("type")) if isinstance(column, Mapping) else (None, None)
                if not isinstance(name, str) or kind not in COLUMN_TYPES:
                    raise ValueError(f"{part}: {column!r} is not a name with a type among {', '.join(COLUMN_TYPES)}")
                types[name] = kind
            parts[part] = tuple(c["name"] for c in columns)
        statistics = record.get("statistics")
        if not isinstance(statistics, list) or not all(isinstance(s, str) for s in statistics):
            raise ValueError("statistics is not a list of names")
        later = record.get("later_columns", [])
        if not isinstance(later, list) or not all(isinstance(c, str) and c in types for c in later):
            raise ValueError("later_columns is not a list of its core columns")
        return cls(parts["leading_columns"], parts["trailing_columns"], types, tuple(statistics), tuple(later))


def core_columns(meta: Mapping[str, Any], directory: Path) -> CoreColumns:
    """The run's core columns from its meta.json (`results_csv`), or an InputError that says how to
    get them: the harness records them in every meta.json it writes and gives an older run them
    before it plots one (`hdbench plot`)."""
    path = directory / "meta.json"
    if "results_csv" not in meta:
        state = "has no results_csv" if path.is_file() else "not found, so no results_csv"
        raise InputError(f"{path}: {state} (results.csv's core columns, which hdbench records there; an older "
                         f"run lacks them): draw it with `hdbench plot {directory}`, which records them first")
    try:
        return CoreColumns.from_record(meta["results_csv"])
    except ValueError as error:
        raise InputError(f"{path}: results_csv is malformed: {error}") from None


class Row:
    """One results.csv row with every column by name, typed.

    `row["chunks"]` is the column's value (KeyError for a column the CSV does not have, so a
    misspelt name fails loudly); `row.get("regime")` is None (or the default) when the column is
    absent or the cell empty. Parameter columns (`params`: the ones the families declare, see
    parameter_columns()) hold an int (declared `int`, or all digits when undeclared), a str, or
    None when the case does not set them. The core columns are also
    attributes: family, case, metric, unit, better, headline, traffic, statistic, status,
    reason, gpu_uuid ('' when empty), device, gpus, sample_index (int or None), value (float or None).
    """
    __slots__ = ("_index", "_values", "_params")

    def __init__(self, index: Mapping[str, int], values: Sequence[Any], params: Iterable[str]) -> None:
        self._index = index
        self._values = tuple(values)
        self._params = frozenset(params)  # the parameter columns

    @classmethod
    def of(cls, columns: CoreColumns, **fields: Any) -> "Row":
        """A row from keyword fields (tests); the core columns of `columns` left out are empty,
        every other field is a parameter."""
        values = {c: (None if columns.kind(c) != "text" else "") for c in columns.names}
        values.update(status="ok")
        values.update(fields)
        names = list(values)
        return cls({n: i for i, n in enumerate(names)}, [values[n] for n in names],
                   [n for n in names if n not in columns.types])

    def __getitem__(self, name: str) -> Any:
        try:
            return self._values[self._index[name]]
        except KeyError:
            raise KeyError(f"results.csv has no column {name!r}") from None

    def get(self, name: str, default: Any = None) -> Any:
        position = self._index.get(name)
        value = self._values[position] if position is not None else None
        return default if value is None or value == "" else value

    def __contains__(self, name: object) -> bool:
        return name in self._index

    def columns(self) -> list[str]:
        return list(self._index)

    def params(self) -> dict[str, Any]:
        """The parameters this row sets (parameter columns with a value), in column order."""
        return {n: self._values[i] for n, i in self._index.items()
                if n in self._params and self._values[i] not in (None, "")}

    def replace(self, **changes: Any) -> "Row":
        """A copy with some columns changed (every name must be a column of the row)."""
        values = list(self._values)
        for name, value in changes.items():
            values[self._index[name]] = value
        return Row(self._index, values, self._params)

    def key(self, *leave_out: str) -> tuple:
        """Every value but the named columns: what identifies a row's case and metric."""
        skip = {self._index[n] for n in leave_out if n in self._index}
        return tuple(v for i, v in enumerate(self._values) if i not in skip)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Row) and dict(self.items()) == dict(other.items())

    def __hash__(self) -> int:
        return hash(self._values)

    def items(self) -> Iterator[tuple[str, Any]]:
        return ((n, self._values[i]) for n, i in self._index.items())

    def __repr__(self) -> str:
        shown = {n: v for n, v in self.items() if v not in (None, "")}
        return f"Row({shown})"

    family = property(lambda self: self["family"])
    case = property(lambda self: self["case"])
    device = property(lambda self: self["device"])
    gpus = property(lambda self: self["gpus"])
    gpu_uuid = property(lambda self: self["gpu_uuid"])
    metric = property(lambda self: self["metric"])
    unit = property(lambda self: self["unit"])
    better = property(lambda self: self["better"])
    headline = property(lambda self: self["headline"])
    traffic = property(lambda self: self["traffic"])
    statistic = property(lambda self: self["statistic"])
    sample_index = property(lambda self: self["sample_index"])
    value = property(lambda self: self["value"])
    status = property(lambda self: self["status"])
    reason = property(lambda self: self["reason"])


def parameter_columns(header: Sequence[str], declarations: Mapping[str, FamilyDeclaration], core: CoreColumns
                      ) -> tuple[dict[str, str | None], list[str]]:
    """The parameter columns of a results.csv header with their declared types, and warnings.

    A column is a parameter when one of the run's families declares it (its declaration in
    meta.json, families.<f>.schema.parameters); every other column is core. Two exceptions, each
    said in a warning: a column the run's declarations lack but this checkout's schema.json of one
    of its families declares is that parameter (a CSV rewritten after its meta.json: the h200-x2
    reference's `launch`); while a family of the run declares nothing at all, a column no
    declaration names may be its parameter and is read as one (typed by its values). A column that is
    neither (nor one of `core`, the run's results_csv) is read as text.
    """
    params = {c: t for c, t in declared_parameters(d.schema for d in declarations.values()).items()
              if c not in core.types}
    others = [c for c in header if c not in params and c not in core.types]
    warnings = []
    if others:
        checkout = declared_parameters(s for s in (checkout_schema(f) for f in declarations) if s)
        known = [c for c in others if c in checkout]
        if known:
            warnings.append(f"results.csv column(s) {', '.join(known)} not declared in meta.json; this "
                            f"checkout's schema.json declares them: read as parameters")
            params.update({c: checkout[c] for c in known})
        others = [c for c in others if c not in checkout]
    undeclared = sorted(f for f, d in declarations.items() if not d.schema.get("parameters"))
    if others and undeclared:
        warnings.append(f"family {', '.join(undeclared)} declares no parameters: column(s) {', '.join(others)} "
                        f"read as its parameters, typed by their values")
        params.update({c: None for c in others})
    elif others:
        warnings.append(f"results.csv column(s) {', '.join(others)}: neither a parameter the run's families "
                        f"declare nor a core column meta.json's results_csv lists; read as text")
    return {c: params[c] for c in header if c in params}, warnings


def read_csv(path: Path) -> tuple[list[str], list[list[str]]]:
    """Header and records of results.csv; refuse any schema but 3, naming the first bad line.

    The version is checked before the columns: an older file lacks columns, and its version
    helps its owner more than "missing columns".
    """
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle)
        header = [h.strip() for h in next(reader, None) or []]
        records = list(reader)
    if "schema_version" not in header:
        raise InputError(f"{path}: not an hdbench results.csv (no schema_version column)")
    version_at = header.index("schema_version")
    for line, record in enumerate(records, start=2):
        version = record[version_at].strip() if version_at < len(record) else ""
        if version != SCHEMA_VERSION:
            raise InputError(schema_message(path, version, line))
    return header, records


def parse_rows(path: Path, header: Sequence[str], records: Sequence[Sequence[str]],
               params: Mapping[str, str | None], core: CoreColumns) -> tuple[str, list[Row]]:
    """The run id and the typed rows of the CSV (a malformed number names its line); `params`:
    the parameter columns and their declared types (parameter_columns())."""
    kinds = column_kinds(header, records, params, core)
    index = {name: i for i, name in enumerate(header)}
    rows = []
    for line, record in enumerate(records, start=2):
        if len(record) != len(header):
            raise InputError(f"{path}:{line}: {len(record)} fields, the header has {len(header)}")
        rows.append(Row(index, [typed(path, line, name, kinds[name], text.strip(), name not in params)
                                for name, text in zip(header, record)], params))
    run_id = next((r["run_id"] for r in rows if r["run_id"]), "")
    return run_id, rows


def column_kinds(header: Sequence[str], records: Sequence[Sequence[str]],
                 params: Mapping[str, str | None], core: CoreColumns) -> dict[str, str]:
    """'int', 'float' or 'text' per column: parameters by their declaration ('int' when it gives
    no type and every value the column holds is all digits), core columns by `core`'s types, any
    other column text."""
    kinds = {}
    for position, name in enumerate(header):
        if name in params:
            kind = params[name]
            if kind is None:
                values = [r[position].strip() for r in records
                          if position < len(r) and r[position].strip() not in ("", NOT_APPLICABLE)]
                kind = "int" if values and all(_INT_TEXT.fullmatch(v) for v in values) else "text"
            kinds[name] = kind
        else:
            kinds[name] = core.kind(name)
    return kinds


def typed(path: Path, line: int, column: str, kind: str, text: str, core: bool = False) -> Any:
    """One cell as its column's type: '' or the writer's NOT_APPLICABLE → None (parameters, numbers)
    or '' (core text)."""
    if not text or text == NOT_APPLICABLE:
        return "" if kind == "text" and core else None
    if kind == "text":
        return text
    try:
        return int(text) if kind == "int" else float(text)
    except ValueError:
        raise InputError(f"{path}:{line}: column {column} is not {'an integer' if kind == 'int' else 'a number'}: "
                         f"{text!r}") from None


def with_spread(rows: list[Row]) -> list[Row]:
    """The rows plus `min` and `max` rows derived from each case's `sample` rows (schema 3 keeps
    only samples, medians and fits; figures draw the min–max band of the repetitions)."""
    groups: dict[tuple, list[Row]] = {}
    stored: set[tuple] = set()
    for row in rows:
        if row.status != "ok" or row.value is None or not math.isfinite(row.value):
            continue
        if row.statistic == "sample":
            groups.setdefault(row.key("statistic", "sample_index", "value"), []).append(row)
        elif row.statistic in ("min", "max"):
            stored.add(row.key("sample_index", "value"))
    derived = []
    for samples in groups.values():
        first = samples[0]
        values = [r.value for r in samples]
        for statistic, value in (("min", min(values)), ("max", max(values))):
            row = first.replace(statistic=statistic, sample_index=None, value=value)
            if row.key("sample_index", "value") not in stored:
                derived.append(row)
    return rows + derived


def schema_message(path: Path, version: str, line: int) -> str:
    """Why a CSV is refused, and for an older run how to make it readable again (one line)."""
    text = (f"{path}: schema_version {version or '(empty)'} on line {line}; "
            f"this plotter reads schema_version {SCHEMA_VERSION} only")
    if version.isdigit() and int(version) < 2:
        return text + f" (rebuild it from raw/ with `hdbench collect {path.parent}`)"
    return text
