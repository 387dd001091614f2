"""Shared plumbing for hdbench plots: load a run, declare figures, pick rows, format, finish figures.

Every family module draws from the same tidy results.csv (schema 3, docs/csv-schema.md) and
meta.json. A row is generic: every column by name (`row["chunks"]`, `row.get("regime")`), typed
from the families' declarations that the harness copies into meta.json
(`families.<name>.schema.parameters`), so no module parses the CSV or a packed string itself.
The core columns with their types and the statistics (`results_csv`: CoreColumns) and every link
rate (node.gpus[i].pcie.peak_GBps, nvlink.per_link_GBps) are meta.json's too, as the harness
records them: no list of columns and no rate table is kept in Python.
A module declares what it draws (`FIGURES = [Figure(...)]`); `plan()` turns the declarations and
the rows into the list of files a run must produce, which plot_run draws and the tests compare.
Only the csv module and numpy are used: CI has no pandas.
"""
from __future__ import annotations

import csv
import json
import math
import re
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure as MplFigure
from matplotlib.legend import Legend
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

SCHEMA_VERSION = "3"
# What the harness writes in a text field that does not apply (docs/csv-schema.md): pandas would
# read an empty text field as NaN and load the column with node-dependent dtypes.
NOT_APPLICABLE = "-"
COLUMN_TYPES = ("int", "float", "text")
_INT_TEXT = re.compile(r"-?[0-9]+")

# Colours (Okabe-Ito, colour-blind safe): one per host memory kind, the same in every figure.
HOST_KIND_COLORS = {
    "pinned": "#0072B2", "pageable": "#E69F00", "mapped": "#009E73",
    "registered": "#CC79A7", "write_combined": "#56B4E9", "device": "#D55E00",
}
FALLBACK_COLORS = ("#000000", "#999999", "#F0E442", "#882255")
# Line style and marker per API: solid = async, dashed = sync, dash-dot = SM kernel.
API_STYLES = {"async": ("-", "o"), "sync": ("--", "s"), "kernel": ("-.", "^")}
API_LABELS = {"async": "cudaMemcpyAsync", "sync": "cudaMemcpy", "kernel": "SM kernel"}
REFERENCE_LINE = {"color": "0.35", "linestyle": (0, (1, 2)), "linewidth": 1.6}

class InputError(Exception):
    """The run directory cannot be read as schema 3; plot_run prints the message and exits 2."""


# ---------------------------------------------------------------- core columns

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
        return cls(parts["leading_columns"], parts["trailing_columns"], types, tuple(statistics))


def core_columns(meta: Mapping[str, Any], directory: Path) -> CoreColumns:
    """The run's core columns from its meta.json (`results_csv`), or an InputError that says how to
    get them: the harness records them in every meta.json it writes and gives an older run them
    before it plots one (`hdbench plot`)."""
    path = directory / "meta.json"
    if "results_csv" not in meta:
        state = "has no results_csv" if path.is_file() else "not found, so no results_csv"
        raise InputError(f"{path}: {state} (results.csv's core columns, which hdbench records there; an older "
                         f"run lacks them): draw it with `hdbench plot {directory}`, or add them with "
                         f"`hdbench plot --meta-only {directory}`")
    try:
        return CoreColumns.from_record(meta["results_csv"])
    except ValueError as error:
        raise InputError(f"{path}: results_csv is malformed: {error}") from None


# ---------------------------------------------------------------- rows

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


# ---------------------------------------------------------------- node facts

@dataclass(frozen=True)
class GpuInfo:
    """One GPU of meta.json's node.gpus; every field but the index may be unknown (None)."""
    index: int | None = None
    name: str | None = None
    uuid: str | None = None
    pcie_gen: int | None = None
    pcie_width: int | None = None
    # One direction's rate of this GPU's own PCIe link (GB/s): node.gpus[i].pcie.peak_GBps, which
    # the harness computes from the link (harness/src/peaks.cpp) and records; None when unknown.
    pcie_peak_gbps: float | None = None
    hbm_peak_gbps: float | None = None
    nvlink_links: int | None = None            # node.gpus[i].nvlink.links_active
    nvlink_per_link_gbps: float | None = None  # node.gpus[i].nvlink.per_link_GBps, one direction

    @property
    def link(self) -> str | None:
        """'PCIe Gen5 x16', or None when meta.json does not say."""
        return f"PCIe Gen{self.pcie_gen} x{self.pcie_width}" if self.pcie_gen and self.pcie_width else None

    @property
    def nvlink_gbps(self) -> float | None:
        """This GPU's NVLink rate per direction: active links × the node's per-link rate."""
        if self.nvlink_links and self.nvlink_per_link_gbps:
            return self.nvlink_links * self.nvlink_per_link_gbps
        return None

    def describe(self) -> str:
        """'NVIDIA H200, PCIe Gen5 x16': what the card is and how it reaches the host."""
        return ", ".join(p for p in (self.name or "unknown GPU", self.link) if p)


@dataclass(frozen=True)
class NodeInfo:
    """The few meta.json facts plots need; every field may be unknown (None).

    `gpus` holds every GPU of the node (a figure asks for the GPU it is about, Run.gpu_info, or
    for the GPUs a path crosses, Run.pcie_limit / Run.nvlink_bus_rate: never "the first GPU");
    `topology` is node.topology.
    """
    driver: str | None = None
    cuda_runtime: str | None = None
    gpus: tuple[GpuInfo, ...] = ()
    topology: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Run:
    """One run directory: its rows, its parameter columns, node facts and meta.json."""
    directory: Path
    run_id: str
    node: NodeInfo
    rows: tuple[Row, ...]
    meta: Mapping[str, Any] = field(default_factory=dict)
    param_columns: tuple[str, ...] = ()
    declarations: Mapping[str, "FamilyDeclaration"] = field(default_factory=dict)

    def families(self) -> list[str]:
        """Families in CSV order, each once."""
        return list(dict.fromkeys(r.family for r in self.rows if r.family))

    def ok_rows(self, family: str) -> list[Row]:
        """Measured/derived rows of one family; skipped and failed rows never reach a plot."""
        return [r for r in self.rows if r.family == family and r.status == "ok"
                and r.value is not None and math.isfinite(r.value)]

    def not_ok_rows(self) -> list[Row]:
        return [r for r in self.rows if r.status != "ok"]

    def family_meta(self, family: str) -> Mapping[str, Any]:
        """meta.json's families.<name> record ({} when absent)."""
        families = self.meta.get("families")
        record = families.get(family) if isinstance(families, dict) else None
        return record if isinstance(record, dict) else {}

    def subtitle(self) -> str:
        """The node's GPUs and links, software identity and run id, so a saved PNG is
        self-describing: '2 × NVIDIA H200, PCIe Gen5 x16 each  ·  driver …  ·  run …'."""
        return self._identity(describe_gpus(self.node.gpus) if self.node.gpus else GpuInfo().describe())

    def device_subtitle(self, device: int | str | None, uuid: str = "") -> str:
        """The subtitle of a figure about one GPU: 'GPU 1: NVIDIA H200, PCIe Gen5 x16  ·  …'."""
        gpu = self.gpu_info(device, uuid)
        name = gpu.describe() if gpu else "unknown GPU"
        return self._identity(f"GPU {device}: {name}" if device not in (None, "") else name)

    def gpu_info(self, device: int | str | None, uuid: str = "") -> GpuInfo | None:
        """meta.json's record of the GPU a row ran on: by UUID (exact even when CUDA and
        nvidia-smi number the cards differently), else by index; None/"" means the first GPU."""
        if uuid:
            for gpu in self.node.gpus:
                if gpu.uuid == uuid:
                    return gpu
        if device in (None, ""):
            return self.node.gpus[0] if self.node.gpus else None
        for gpu in self.node.gpus:
            if gpu.index is not None and str(gpu.index) == str(device).strip():
                return gpu
        return None

    def pcie_peak(self, device: int | str | None, uuid: str = "") -> float | None:
        """One direction's PCIe peak of the GPU a row ran on (GB/s), None when unknown."""
        gpu = self.gpu_info(device, uuid)
        return gpu.pcie_peak_gbps if gpu else None

    def row_devices(self, row: Row) -> list[int]:
        """The CUDA indices of every GPU a row spans, in device order: from its UUIDs through
        meta.json when they are known there, else `device`, `device`+1, … (`gpus` of them)."""
        uuids = split_list(row.gpu_uuid)
        count = row.gpus or max(1, len(uuids))
        known = [self.gpu_info(None, u) for u in uuids]
        if len(uuids) == count and all(g is not None and g.uuid == u for g, u in zip(known, uuids)):
            return [g.index for g in known if g is not None and g.index is not None]
        return [] if row.device is None else list(range(row.device, row.device + count))

    def row_gpus(self, row: Row) -> list[GpuInfo | None]:
        """The GPU record of every device of a row, in the row's order (None where unknown)."""
        uuids = split_list(row.gpu_uuid)
        return [self.gpu_info(d, uuids[i] if i < len(uuids) else "") for i, d in enumerate(self.row_devices(row))]

    def pcie_limit(self, gpus: Iterable[GpuInfo | None]) -> tuple[float, GpuInfo] | None:
        """(GB/s, GPU) of the slowest PCIe link of `gpus`, one direction: what a path through the
        host that crosses each of their links can reach (a host-staged pair: the smaller link of
        the two, as the p2p report rates it; a loopback: its GPU's own link). None when a GPU or
        its link rate is unknown. Of equal links the first GPU given is named."""
        chosen = list(gpus)
        if not chosen or any(g is None or g.pcie_peak_gbps is None for g in chosen):
            return None
        slowest = min(chosen, key=lambda g: g.pcie_peak_gbps)  # type: ignore[arg-type,return-value]
        return slowest.pcie_peak_gbps, slowest  # type: ignore[return-value,union-attr]

    def pair_gpus(self, src: int | str | None, dst: int | str | None, uuids: str = "") -> list[GpuInfo | None]:
        """The GPU records of a pair (a loopback: one GPU): by the row's UUIDs when meta.json knows
        them (`gpu_uuid` lists them in device order), else by the src and dst indices."""
        devices = list(dict.fromkeys(d for d in (src, dst) if d not in (None, "")))
        known = [self.gpu_info(None, u) for u in split_list(uuids)]
        if len(known) == len(devices) and all(known):
            return known
        return [self.gpu_info(d) for d in devices]

    def nvlink_bus_rate(self, gpus: Iterable[GpuInfo | None] | None = None) -> tuple[float, GpuInfo] | None:
        """(GB/s, GPU) of the slowest GPU's NVLink per direction (links_active × per_link_GBps of
        meta.json, the harness's `nvlink_bus` class), over `gpus` or every GPU of the node;
        None when meta.json does not give both numbers for every one of them."""
        chosen = [g for g in (self.node.gpus if gpus is None else gpus)]
        if not chosen or any(g is None or g.nvlink_gbps is None for g in chosen):
            return None
        slowest = min(chosen, key=lambda g: g.nvlink_gbps)  # type: ignore[arg-type,return-value]
        return slowest.nvlink_gbps, slowest  # type: ignore[return-value,union-attr]

    def _identity(self, gpus: str) -> str:
        parts = [gpus]
        if self.node.driver:
            parts.append(f"driver {self.node.driver}")
        if self.node.cuda_runtime:
            parts.append(f"CUDA {self.node.cuda_runtime}")
        parts.append(f"run {self.run_id}")
        return "  ·  ".join(parts)


# ---------------------------------------------------------------- figure declarations

@dataclass(frozen=True)
class Need:
    """Rows a figure cannot be drawn without: at least one ok row of this case and metric (and
    statistic, `median` unless said otherwise) whose columns equal `where`'s values (a list or
    tuple = any of them) and hold at least `at_least`'s numbers (e.g. {"ranks": 2}). metric None:
    any metric (the α–β fit's rows, whose names each run's declaration gives)."""
    case: str
    metric: str | None
    where: Mapping[str, Any] = field(default_factory=dict)
    statistic: str = "median"
    at_least: Mapping[str, float] = field(default_factory=dict)

    def matches(self, row: Row) -> bool:
        if row.case != self.case or self.metric not in (None, row.metric) or row.statistic != self.statistic:
            return False
        for name, minimum in self.at_least.items():
            value = row.get(name)
            if not isinstance(value, (int, float)) or value < minimum:
                return False
        for name, wanted in self.where.items():
            value = row.get(name)
            if isinstance(wanted, (list, tuple, set, frozenset)):
                if value not in wanted:
                    return False
            elif value != wanted:
                return False
        return True


@dataclass(frozen=True)
class Scope:
    """What one figure is drawn from: the run, the family's ok rows (only one GPU's for a
    per-device figure) and that GPU (None: the figure is about the run as a whole)."""
    run: Run
    rows: tuple[Row, ...]
    device: int | None = None

    @property
    def uuid(self) -> str:
        return next((r.gpu_uuid for r in self.rows if r.gpu_uuid and (r.gpus or 1) == 1), "")

    @property
    def gpu(self) -> GpuInfo | None:
        return self.run.gpu_info(self.device, self.uuid) if self.device is not None else None

    @property
    def subtitle(self) -> str:
        return self.run.device_subtitle(self.device, self.uuid) if self.device is not None else self.run.subtitle()


@dataclass(frozen=True)
class Figure:
    """One figure a family module draws (its `FIGURES` list holds them, in reading order).

    It is expected for a run exactly when every `needs` entry has a matching ok row (with
    gpus >= `min_gpus` when that is given). `per_device=True`: one figure per device whose rows
    satisfy the needs, drawn from that device's rows and named `<name>_gpu<N>` when more than one
    device qualifies (else `<name>`). `draw(scope)` returns the matplotlib figure; returning None
    for an expected figure is a defect that the figure-list tests report.
    """
    name: str
    needs: Sequence[Need]
    draw: Callable[[Scope], MplFigure | None]
    per_device: bool = False
    min_gpus: int | None = None

    def satisfied(self, rows: Sequence[Row]) -> bool:
        return bool(self.needs) and all(any(n.matches(r) and self._enough_gpus(r) for r in rows) for n in self.needs)

    def _enough_gpus(self, row: Row) -> bool:
        return self.min_gpus is None or (row.gpus or 1) >= self.min_gpus


@dataclass(frozen=True)
class Planned:
    """One file a run must produce: its name (no extension), the declaration and its scope."""
    file_name: str
    family: str
    figure: Figure
    scope: Scope


def plan(run: Run, family: str, figures: Sequence[Figure], every_gpu: bool = False) -> list[Planned]:
    """The figures a family's declarations expect for this run, from the CSV rows, per-device
    ones only for the GPUs figure_devices() picks (`every_gpu`: all of them)."""
    rows = run.ok_rows(family)
    drawn = figure_devices(run.meta, every_gpu)
    planned = []
    for figure in figures:
        if not figure.per_device:
            if figure.satisfied(rows):
                planned.append(Planned(figure.name, family, figure, Scope(run, tuple(rows))))
            continue
        by_device: dict[int | None, list[Row]] = {}
        for row in rows:
            by_device.setdefault(row.device, []).append(row)
        qualifying = [d for d in sorted(by_device, key=lambda d: (d is None, d or 0))
                      if figure.satisfied(by_device[d])]
        for device in qualifying:
            if drawn is not None and device not in drawn:
                continue
            # Named by every qualifying GPU, not the drawn ones: copy_alloc_gpu0 is the same file
            # with --per-gpu-plots or without, and says which GPU it is on a multi-GPU run.
            name = per_device_name(figure.name, device, len(qualifying) > 1)
            planned.append(Planned(name, family, figure, Scope(run, tuple(by_device[device]), device)))
    return planned


def figure_devices(meta: Mapping[str, Any], every_gpu: bool = False) -> frozenset[int] | None:
    """The GPUs that get per-device figures: where the harness sorted the node's GPUs into classes
    of alike GPUs (meta.json `tiers.classes[].representative`), each class's representative, the
    GPU it swept in full; the other GPUs' headline figures stand beside it in the node figures
    (hdbplots.node). None means every GPU: `every_gpu` (plot_run --per-gpu-plots), or a meta.json
    without tiers (a run from before them), or tiers naming no representative."""
    tiers = _dict(meta.get("tiers"))
    classes = tiers.get("classes") if isinstance(tiers.get("classes"), list) else []
    chosen = frozenset(c["representative"] for c in map(_dict, classes)
                       if isinstance(c.get("representative"), int) and not isinstance(c.get("representative"), bool))
    return None if every_gpu or not chosen else chosen


def check_figures(module_name: str, figures: object) -> list[Figure]:
    """A module's FIGURES as a list, or a ValueError saying what is wrong with it."""
    if not isinstance(figures, (list, tuple)) or not all(isinstance(f, Figure) for f in figures):
        raise ValueError(f"plot module {module_name}: FIGURES must be a list of hdbplots.common.Figure")
    names = [f.name for f in figures]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValueError(f"plot module {module_name}: figure names declared twice: {', '.join(repeated)}")
    for f in figures:
        if not f.needs or not callable(f.draw):
            raise ValueError(f"plot module {module_name}: figure {f.name} needs at least one Need and a draw function")
    return list(figures)


# ---------------------------------------------------------------- loading

def load_run(directory: Path) -> tuple[Run, list[str]]:
    """Read DIR/results.csv and DIR/meta.json (which must record results.csv's core columns:
    core_columns()); return the run and warnings."""
    csv_path = directory / "results.csv"
    if not csv_path.is_file():
        raise InputError(f"{csv_path}: no such file (is {directory} a run directory?)")
    meta = load_meta(directory / "meta.json")
    header, records = read_csv(csv_path)
    core = core_columns(meta, directory)
    missing = [c for c in core.names if c not in header]
    if missing:
        raise InputError(f"{csv_path}: not an hdbench results.csv of schema {SCHEMA_VERSION} "
                         f"(missing columns: {', '.join(missing)})")
    family_at = header.index("family")
    families = list(dict.fromkeys(r[family_at].strip() for r in records if family_at < len(r) and r[family_at].strip()))
    declarations, notes = family_declarations(meta, families)
    params, column_notes = parameter_columns(header, declarations, core)
    run_id, rows = parse_rows(csv_path, header, records, params, core)
    run_id = run_id or str(meta.get("run_id") or directory.name)
    statistics = sorted({r.statistic for r in rows if r.statistic and r.statistic not in core.statistics})
    if statistics:
        notes.append(f"results.csv has statistic {', '.join(statistics)}, which meta.json's results_csv "
                     f"does not list")
    return (Run(directory, run_id, node_info(meta), tuple(with_spread(rows)), meta, tuple(params), declarations),
            notes + column_notes)


@dataclass(frozen=True)
class FamilyDeclaration:
    """What a family declares for plots: its plot module's name and its schema (parameters with
    types), from meta.json (`families.<name>.plots`, `.schema`) or, for a run whose meta.json
    lacks them, from this checkout's manifest (harness/suite.json) and bench/<f>/schema.json."""
    family: str
    plots: str | None = None
    schema: Mapping[str, Any] = field(default_factory=dict)
    source: str = "meta.json"

    @property
    def fit_metrics(self) -> dict[str, str]:
        """The α–β fit's rows by role ("beta", "alpha", "n_half") as the schema's "fit" names them;
        {} without a fit. A schema written before "fit" (a committed reference run's) declared only
        "fit_metric", and its rows carry the names the harness gave them then."""
        fit = self.schema.get("fit")
        if isinstance(fit, Mapping):
            return {role: fit[role] for role in ("beta", "alpha", "n_half") if isinstance(fit.get(role), str)}
        if self.schema.get("fit_metric"):
            return {"beta": "fit_bandwidth", "alpha": "fit_latency", "n_half": "fit_n_half"}
        return {}


def manifest_path() -> Path:
    """harness/suite.json of the checkout this plots/ directory belongs to."""
    return Path(__file__).resolve().parents[2] / "harness" / "suite.json"


def family_declarations(meta: Mapping[str, Any], families: Sequence[str]
                        ) -> tuple[dict[str, FamilyDeclaration], list[str]]:
    """Each family's plot module and schema: meta.json first, the checkout's manifest for what
    meta.json does not say (one warning line per family that needed it)."""
    recorded = meta.get("families") if isinstance(meta.get("families"), dict) else {}
    manifest = _manifest_entries()
    found: dict[str, FamilyDeclaration] = {}
    warnings = []
    for family in families:
        record = _dict(recorded.get(family))
        schema = record.get("schema")
        if isinstance(schema, str):
            try:
                schema = json.loads(schema)
            except ValueError:
                schema = None
        plots = _text(record.get("plots"))
        if isinstance(schema, dict) and plots:
            found[family] = FamilyDeclaration(family, plots, schema)
            continue
        entry = manifest.get(family, {})
        schema = schema if isinstance(schema, dict) else checkout_schema(family, manifest)
        plots = plots or _text(entry.get("plots"))
        if entry:
            warnings.append(f"meta.json does not declare family {family} (schema and plot module); "
                            f"using {manifest_path()} and {entry.get('folder')}/schema.json of this checkout")
        found[family] = FamilyDeclaration(family, plots, schema if isinstance(schema, dict) else {},
                                          "meta.json" if not entry else "manifest")
    return found, warnings


def checkout_schema(family: str, manifest: Mapping[str, dict] | None = None) -> dict | None:
    """This checkout's declaration of a family (bench/<folder>/schema.json through harness/suite.json),
    None when the manifest does not list it or the file is unreadable."""
    entry = (manifest if manifest is not None else _manifest_entries()).get(family, {})
    schema = _read_json(manifest_path().parent.parent / str(entry["folder"]) / "schema.json") \
        if entry.get("folder") else None
    return schema if isinstance(schema, dict) else None


def _manifest_entries() -> dict[str, dict]:
    manifest = _read_json(manifest_path())
    entries = manifest.get("families") if isinstance(manifest, dict) else None
    return {e["name"]: e for e in entries or [] if isinstance(e, dict) and isinstance(e.get("name"), str)}


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def declared_parameters(schemas: Iterable[Mapping[str, Any]]) -> dict[str, str | None]:
    """Parameter name → 'int' | 'text' (None: another or no type) from schemas'
    `parameters.<name>.type`, the first schema that declares a name deciding."""
    types: dict[str, str | None] = {}
    for schema in schemas:
        parameters = schema.get("parameters")
        for name, spec in (parameters.items() if isinstance(parameters, dict) else []):
            kind = spec.get("type") if isinstance(spec, dict) else None
            types.setdefault(name, kind if kind in ("int", "text") else None)
    return types


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

    The version is checked before the columns: an older file lacks columns, and "convert it"
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
    if version == "2":
        return text + f" (convert it with `hdbench convert {path.parent}`)"
    if version.isdigit() and int(version) < 2:
        return text + f" (rebuild it from raw/ with `hdbench collect {path.parent}`)"
    return text


def load_meta(path: Path) -> dict:
    """meta.json, {} when there is none (core_columns() then says how to get one); an unreadable
    one is an InputError."""
    if not path.is_file():
        return {}
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise InputError(f"{path}: unreadable ({error})") from None
    if not isinstance(meta, dict):
        raise InputError(f"{path}: not a JSON object")
    return meta


def node_info(meta: Mapping[str, Any]) -> NodeInfo:
    """Every GPU's name, PCIe link, HBM peak and NVLink; tolerate any missing level."""
    node = _dict(meta.get("node"))
    records = [_dict(g) for g in node.get("gpus")] if isinstance(node.get("gpus"), list) else []
    topology = _dict(node.get("topology"))
    gpus = tuple(parse_gpu(g, position) for position, g in enumerate(records))
    return NodeInfo(driver=_text(node.get("driver_release"))
                    or (_text(records[0].get("driver_release")) if records else None),
                    cuda_runtime=_text(node.get("cuda_runtime")), gpus=gpus, topology=topology)


def parse_gpu(gpu: Mapping[str, Any], position: int) -> GpuInfo:
    """One node.gpus record; without an "index" the list position stands in for it. Every rate is
    the one the harness records there (harness/src/traffic.cpp record_link_rates; no rate is
    computed or written in the plot code): one direction's PCIe peak pcie.peak_GBps, from the link's
    maximum generation and width (the current ones when the maximum is missing), and the NVLink
    nvlink.links_active and per_link_GBps (for an older meta.json copied from node.topology.gpus)."""
    pcie = _dict(gpu.get("pcie"))
    # The maximum is the link's capability; an idle link often trains down, so "current" is a fallback.
    gen = _positive(pcie.get("gen_max")) or _positive(pcie.get("gen_current"))
    width = _positive(pcie.get("width_max")) or _positive(pcie.get("width_current"))
    raw_index = gpu.get("index")
    index = raw_index if isinstance(raw_index, int) and not isinstance(raw_index, bool) else position
    nvlink = _dict(gpu.get("nvlink"))
    links = _positive(nvlink.get("links_active"))
    gen, width = (int(gen) if gen else None), (int(width) if width else None)
    return GpuInfo(index=index, name=_text(gpu.get("name")), uuid=_text(gpu.get("uuid")),
                   pcie_gen=gen, pcie_width=width, pcie_peak_gbps=_positive(pcie.get("peak_GBps")),
                   hbm_peak_gbps=_positive(gpu.get("hbm_peak_GBps")),
                   nvlink_links=int(links) if links else None,
                   nvlink_per_link_gbps=_positive(nvlink.get("per_link_GBps")))


def describe_gpus(gpus: Sequence[GpuInfo]) -> str:
    """The node's GPUs in one line: '2 × NVIDIA H200, PCIe Gen5 x16 each' when they are alike,
    else one group per kind: 'GPUs 0–2: NVIDIA H200, PCIe Gen5 x16; GPU 3: NVIDIA H200, PCIe Gen4 x16'."""
    kinds = group(gpus, lambda g: (g.name, g.link))
    if len(kinds) == 1:
        members = next(iter(kinds.values()))
        text = members[0].describe()
        if len(members) == 1:
            return text
        return f"{len(members)} × {text}" + (" each" if members[0].link else "")
    return "; ".join(f"{'GPUs' if len(members) > 1 else 'GPU'} {index_ranges(g.index for g in members)}: "
                     f"{members[0].describe()}" for members in kinds.values())


def index_ranges(indices: Iterable[int | None]) -> str:
    """[0, 1, 2, 5] → '0–2, 5'."""
    known = sorted({i for i in indices if i is not None})
    spans: list[list[int]] = []
    for i in known:
        if spans and i == spans[-1][1] + 1:
            spans[-1][1] = i
        else:
            spans.append([i, i])
    return ", ".join(f"{a}" if a == b else f"{a}–{b}" if b > a + 1 else f"{a}, {b}" for a, b in spans)


def split_list(text: str) -> list[str]:
    """'GPU-a, GPU-b' → ['GPU-a', 'GPU-b']: the gpu_uuid column of a case spanning GPUs."""
    return [part.strip() for part in text.split(",") if part.strip()]


def _dict(value: object) -> dict:
    return value if isinstance(value, dict) else {}


def _text(value: object) -> str | None:
    return str(value) if value not in (None, "") else None


def _positive(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return number if number > 0 and math.isfinite(number) else None


# ---------------------------------------------------------------- selecting rows

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


def per_device_name(name: str, device: int | None, several: bool) -> str:
    """'copy_bandwidth_h2d' + '_gpu1' when several devices have the figure; a single-GPU run keeps
    the plain name so its figures stay comparable with older runs and references."""
    return f"{name}_gpu{device}" if several and device is not None else name


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


# ---------------------------------------------------------------- formatting

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


def host_color(host_kind: str | None) -> str:
    """The house colour of a host memory kind; unknown kinds get a stable fallback."""
    host_kind = host_kind or ""
    if host_kind in HOST_KIND_COLORS:
        return HOST_KIND_COLORS[host_kind]
    return FALLBACK_COLORS[sum(map(ord, host_kind)) % len(FALLBACK_COLORS)]


def api_style(api: str | None) -> tuple[str | tuple, str]:
    """(linestyle, marker) of an API; unknown APIs are dotted with diamonds."""
    return API_STYLES.get(api, (":", "D"))


# ---------------------------------------------------------------- axes and figures

def size_axis(ax: Axes, sizes: Iterable[int], label: str = "transfer size (bytes per copy)",
              max_ticks: int = 11) -> None:
    """Log2 x axis with KiB/MiB/GiB tick labels at powers of two, at most `max_ticks` of them."""
    sizes = [s for s in sizes if s and s > 0]
    ax.set_xscale("log", base=2)
    ax.set_xlabel(label)
    if not sizes:
        return
    low, high = math.floor(math.log2(min(sizes))), math.ceil(math.log2(max(sizes)))
    step = max(1, math.ceil((high - low) / max(1, max_ticks - 1)))
    ax.xaxis.set_major_locator(FixedLocator([2.0 ** e for e in range(low, high + 1, step)]))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _pos: format_bytes(x)))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlim(2.0 ** low / 1.4, 2.0 ** high * 1.4)


def reference_line(ax: Axes, value: float, text: str, **style: object) -> None:
    """A horizontal theoretical limit, labelled on the line itself (no legend entry needed)."""
    ax.axhline(value, **{**REFERENCE_LINE, **style})
    ax.annotate(text, xy=(0.01, value), xycoords=("axes fraction", "data"),
                xytext=(0, 3), textcoords="offset points", fontsize=8.5, color="0.25",
                va="bottom", ha="left")


def plot_band(ax: Axes, rows: Sequence[Row], metric: str, *, color: str, linestyle: object,
              marker: str, label: str, transform: Callable[[int, float], float] | None = None,
              band: bool = True) -> bool:
    """Median line with the min–max band of one curve; False when the metric has no medians."""
    medians = by_size(rows, metric, "median")
    if not medians:
        return False
    convert = transform or (lambda _size, value: value)
    sizes = sorted(medians)
    ax.plot(sizes, [convert(s, medians[s]) for s in sizes], color=color, linestyle=linestyle,
            marker=marker, markersize=4, linewidth=1.6, label=label)
    lows, highs = by_size(rows, metric, "min"), by_size(rows, metric, "max")
    banded = [s for s in sizes if s in lows and s in highs]
    if band and banded:
        ends = [sorted((convert(s, lows[s]), convert(s, highs[s]))) for s in banded]
        ax.fill_between(banded, [e[0] for e in ends], [e[1] for e in ends],
                        color=color, alpha=0.18, linewidth=0)
    return True


def new_figure(ncols: int = 1, width: float = 8.5, height: float = 5.4,
               sharey: bool = False) -> tuple[MplFigure, list[Axes]]:
    """A pyplot-free figure (no global figure registry) with `ncols` side-by-side axes.

    The Agg canvas is attached explicitly so layout code can measure text before saving.
    """
    fig = MplFigure(figsize=(width, height))
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, ncols, squeeze=False, sharey=sharey)[0]
    for ax in axes:
        ax.grid(True, which="major", color="0.88", linewidth=0.8)
        ax.set_axisbelow(True)
        ax.spines["top"].set_visible(False)
        ax.spines["right"].set_visible(False)
    return fig, list(axes)


def axes_handles(axes: Iterable[Axes]) -> tuple[list, list[str]]:
    """Legend handles and labels of several axes, each label once, in drawing order."""
    found: dict[str, object] = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            found.setdefault(label, handle)
    return list(found.values()), list(found)


def figure_legend(fig: MplFigure, handles: Sequence, labels: Sequence[str], title: str | None = None,
                  max_cols: int = 4) -> Legend | None:
    """One legend below all axes, never on top of data: as many columns as the width allows."""
    if not handles:
        return None
    renderer = fig.canvas.get_renderer()
    for ncol in range(min(max_cols, len(handles)), 0, -1):
        legend = fig.legend(handles, labels, loc="lower center", bbox_to_anchor=(0.5, 0.01),
                            ncol=ncol, title=title, title_fontsize=8.5, frameon=False)
        if ncol == 1 or legend.get_window_extent(renderer).width <= 0.97 * fig.bbox.width:
            return legend
        legend.remove()
    return None


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


TITLE_SIZES = (12.5, 11.5, 10.5)  # pt: the largest at which the title fits in two lines


def title_lines(lesson: str, width_inches: float, size: float = TITLE_SIZES[0]) -> list[str]:
    """The title as finish() wraps it at `size` pt: about 8.2 characters per inch at 12.5 pt."""
    return textwrap.wrap(lesson, width=max(40, int(width_inches * 8.2 * TITLE_SIZES[0] / size)))


def title_layout(lesson: str, width_inches: float) -> tuple[float, list[str]]:
    """(size, lines): the largest title size at which the lesson takes two lines (a slide's
    title), else the smallest size and as many lines as it takes."""
    for size in TITLE_SIZES:
        lines = title_lines(lesson, width_inches, size)
        if len(lines) <= 2:
            return size, lines
    return TITLE_SIZES[-1], lines


def finish(fig: MplFigure, lesson: str, subtitle: str, legend: Legend | None = None,
           claims: Sequence[Mapping[str, Any]] | None = None) -> MplFigure:
    """Title band on top (the lesson, bold and wrapped, then the run identity), the figure
    legend's band at the bottom, and a tight layout of the axes in between. `claims` (see
    claim()) say where the title's numbers come from; plot_run writes them to figures.json."""
    width, height = fig.get_size_inches()
    bottom = 0.0
    if legend is not None:
        legend_height = legend.get_window_extent(fig.canvas.get_renderer()).height / fig.dpi
        bottom = (legend_height + 0.1) / height
    fig.set_label(lesson)  # the title plot_run lists in plots/figures.json, unwrapped
    size, lines = title_layout(lesson, width)
    fig.hdb_title_lines = len(lines)  # type: ignore[attr-defined]
    fig.hdb_claims = [dict(c) for c in claims or ()]  # type: ignore[attr-defined]
    band = 0.16 + 0.25 * len(lines) + 0.26
    fig.text(0.5, 1 - 0.1 / height, "\n".join(lines), ha="center", va="top",
             fontsize=size, fontweight="bold")
    fig.text(0.5, 1 - (0.12 + 0.25 * len(lines)) / height, subtitle, ha="center", va="top",
             fontsize=8.5, color="0.35")
    fig.tight_layout(rect=(0, bottom, 1, 1 - band / height))
    return fig


def panel_titles(fig: MplFigure) -> list[str]:
    """Every axes' title (left, centre, right), in axes order: what figures.json lists as `panels`."""
    found = []
    for ax in fig.axes:
        for loc in ("left", "center", "right"):
            text = ax.get_title(loc=loc)
            if text:
                found.append(text)
    return found
