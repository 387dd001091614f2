"""Shared plumbing for hdbench plots: load a run, pick rows, format sizes, peaks, finish figures.

Every family module draws from the same tidy results.csv (docs/csv-schema.md) and meta.json.
Keeping parsing, units, theoretical peaks and the house figure layout here lets a family module
be only about its lesson. Only the csv module and numpy are used: CI has no pandas.
"""
from __future__ import annotations

import csv
import json
import math
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.legend import Legend
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

SCHEMA_VERSION = "2"
REQUIRED_COLUMNS = ("schema_version", "run_id", "family", "case", "direction", "host_kind",
                    "api", "size_bytes", "device", "gpu_uuid", "metric", "unit", "statistic", "value",
                    "status")
STATISTICS_ORDER = ("sample", "median", "mean", "min", "max", "stddev", "cv", "fit")

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

# PCIe: transfer rate per lane (GT/s) and line-code efficiency per generation.
PCIE_GT_PER_S = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0, 6: 64.0}


class InputError(Exception):
    """The run directory cannot be read as schema 2; plot_run prints the message and exits 2."""


@dataclass(frozen=True)
class Row:
    """One results.csv row, typed; empty fields become '' (text) or None (numbers)."""
    family: str
    case: str
    direction: str
    host_kind: str
    api: str
    size_bytes: int | None
    streams: int | None
    extra: str
    metric: str
    unit: str
    statistic: str
    value: float | None
    status: str
    reason: str
    device: str = ""    # CUDA index, or "0,1" for a case spanning GPUs
    gpu_uuid: str = ""  # the matching UUID(s), same order

    @property
    def devices(self) -> list[str]:
        """The CUDA indices the row ran on: [] when unknown, several for a case spanning GPUs."""
        return split_list(self.device)

    @property
    def line_key(self) -> tuple[str, str, str]:
        """What distinguishes one curve from another inside a direction."""
        return (self.host_kind, self.api, self.extra)


@dataclass(frozen=True)
class GpuInfo:
    """One GPU of meta.json's node.gpus; every field but the index may be unknown (None)."""
    index: int | None = None
    name: str | None = None
    uuid: str | None = None
    pcie_gen: int | None = None
    pcie_width: int | None = None
    hbm_peak_gbps: float | None = None

    @property
    def link(self) -> str | None:
        """'PCIe Gen5 x16', or None when meta.json does not say."""
        return f"PCIe Gen{self.pcie_gen} x{self.pcie_width}" if self.pcie_gen and self.pcie_width else None

    @property
    def pcie_peak_gbps(self) -> float | None:
        """One direction's theoretical rate of this GPU's own link (see pcie_peak_gbps())."""
        return pcie_peak_gbps(self.pcie_gen, self.pcie_width)

    def describe(self) -> str:
        """'NVIDIA H200, PCIe Gen5 x16': what the card is and how it reaches the host."""
        return ", ".join(p for p in (self.name or "unknown GPU", self.link) if p)


@dataclass(frozen=True)
class NodeInfo:
    """The few meta.json facts plots need; every field may be unknown (None).

    gpu_name, pcie_* and hbm_peak_gbps describe the first GPU listed (what schema 1 plots used);
    `gpus` holds every GPU of the node, for figures about one device or about all of them.
    """
    gpu_name: str | None = None
    pcie_gen: int | None = None
    pcie_width: int | None = None
    hbm_peak_gbps: float | None = None
    driver: str | None = None
    cuda_runtime: str | None = None
    gpus: tuple[GpuInfo, ...] = ()


@dataclass(frozen=True)
class Run:
    """One run directory: its rows and node facts."""
    directory: Path
    run_id: str
    node: NodeInfo
    rows: tuple[Row, ...]

    def families(self) -> list[str]:
        """Families in CSV order, each once."""
        return list(dict.fromkeys(r.family for r in self.rows if r.family))

    def ok_rows(self, family: str) -> list[Row]:
        """Measured/derived rows of one family; skipped and failed rows never reach a plot."""
        return [r for r in self.rows if r.family == family and r.status == "ok"
                and r.value is not None and math.isfinite(r.value)]

    def not_ok_rows(self) -> list[Row]:
        return [r for r in self.rows if r.status != "ok"]

    def subtitle(self) -> str:
        """The node's GPUs and links, software identity and run id, so a saved PNG is
        self-describing: '2 × NVIDIA H200, PCIe Gen5 x16 each  ·  driver …  ·  run …'."""
        return self._identity(describe_gpus(self.node.gpus) if self.node.gpus
                              else GpuInfo(name=self.node.gpu_name, pcie_gen=self.node.pcie_gen,
                                           pcie_width=self.node.pcie_width).describe())

    def device_subtitle(self, device: str | int, uuid: str = "") -> str:
        """The subtitle of a figure about one GPU: 'GPU 1: NVIDIA H200, PCIe Gen5 x16  ·  …'."""
        gpu = self.gpu_info(device, uuid)
        name = gpu.describe() if gpu else "unknown GPU"
        return self._identity(f"GPU {device}: {name}" if str(device) != "" else name)

    def gpu_info(self, device: str | int, uuid: str = "") -> GpuInfo | None:
        """meta.json's record of the GPU a row ran on: by UUID (exact even when CUDA and
        nvidia-smi number the cards differently), else by index; "" means the first GPU."""
        if uuid:
            for gpu in self.node.gpus:
                if gpu.uuid == uuid:
                    return gpu
        if str(device) == "":
            return self.node.gpus[0] if self.node.gpus else None
        for gpu in self.node.gpus:
            if gpu.index is not None and str(gpu.index) == str(device).strip():
                return gpu
        return None

    def pcie_peak(self, device: str | int, uuid: str = "") -> float | None:
        """One direction's PCIe peak of the GPU a row ran on (GB/s), None when unknown."""
        gpu = self.gpu_info(device, uuid)
        return gpu.pcie_peak_gbps if gpu else None

    def row_gpus(self, row: Row) -> list[GpuInfo | None]:
        """The GPU record of every device of a row, in the row's order (None where unknown)."""
        uuids = split_list(row.gpu_uuid)
        return [self.gpu_info(d, uuids[i] if i < len(uuids) else "") for i, d in enumerate(row.devices)]

    def _identity(self, gpus: str) -> str:
        parts = [gpus]
        if self.node.driver:
            parts.append(f"driver {self.node.driver}")
        if self.node.cuda_runtime:
            parts.append(f"CUDA {self.node.cuda_runtime}")
        parts.append(f"run {self.run_id}")
        return "  ·  ".join(parts)


@dataclass(frozen=True)
class FigureJob:
    """A named figure and the function that draws it (None: nothing to draw after all)."""
    name: str
    draw: Callable[[], Figure | None]


# ---------------------------------------------------------------- loading

def load_run(directory: Path) -> tuple[Run, list[str]]:
    """Read DIR/results.csv (required) and DIR/meta.json (optional); return the run and warnings."""
    csv_path = directory / "results.csv"
    if not csv_path.is_file():
        raise InputError(f"{csv_path}: no such file (is {directory} a run directory?)")
    run_id, rows = load_rows(csv_path)
    meta, warnings = load_meta(directory / "meta.json")
    run_id = run_id or str(meta.get("run_id") or directory.name)
    return Run(directory, run_id, node_info(meta), tuple(rows)), warnings


def load_rows(path: Path) -> tuple[str, list[Row]]:
    """Parse results.csv; refuse any schema but 2 and any malformed number, naming the line.

    The version is checked before the columns: a schema 1 file lacks `device`, and "rebuild it"
    helps its owner more than "missing columns".
    """
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        columns = reader.fieldnames or []
        missing = [c for c in REQUIRED_COLUMNS if c not in columns]
        if "schema_version" in missing:
            raise InputError(f"{path}: not an hdbench results.csv (missing columns: {', '.join(missing)})")
        run_id = ""
        rows = []
        for line, record in enumerate(reader, start=2):
            version = (record["schema_version"] or "").strip()
            if version != SCHEMA_VERSION:
                raise InputError(schema_message(path, version, line))
            if missing:
                raise InputError(f"{path}: not an hdbench results.csv (missing columns: {', '.join(missing)})")
            run_id = run_id or record["run_id"]
            rows.append(parse_row(record, path, line))
        if not rows and missing:
            raise InputError(f"{path}: not an hdbench results.csv (missing columns: {', '.join(missing)})")
    return run_id, rows


def schema_message(path: Path, version: str, line: int) -> str:
    """Why a CSV is refused, and for an older run how to make it readable again."""
    text = f"{path}: schema_version {version or '(empty)'} on line {line}; this plotter reads schema_version {SCHEMA_VERSION} only"
    if version.isdigit() and int(version) < int(SCHEMA_VERSION):
        return text + f" (rebuild it from raw/ with `hdbench collect {path.parent}`)"
    return text


def parse_row(record: dict[str, str | None], path: Path, line: int) -> Row:
    """Turn one csv.DictReader record into a Row; optional columns may be absent."""
    def text(column: str) -> str:
        return (record.get(column) or "").strip()

    def number(column: str, kind: Callable[[str], float | int]) -> float | int | None:
        field = text(column)
        if not field:
            return None
        try:
            return kind(field)
        except ValueError:
            raise InputError(f"{path}:{line}: column {column} is not a number: {field!r}") from None

    return Row(family=text("family"), case=text("case"), direction=text("direction"),
               host_kind=text("host_kind"), api=text("api"),
               size_bytes=number("size_bytes", int), streams=number("streams", int),
               extra=text("extra"), metric=text("metric"), unit=text("unit"),
               statistic=text("statistic"), value=number("value", float),
               status=text("status") or "ok", reason=text("reason"),
               device=",".join(split_list(text("device"))), gpu_uuid=",".join(split_list(text("gpu_uuid"))))


def load_meta(path: Path) -> tuple[dict, list[str]]:
    """meta.json is optional: a missing or broken one only loses the GPU name and peak lines."""
    if not path.is_file():
        return {}, [f"{path}: not found; plotting without GPU name and theoretical peaks"]
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        return {}, [f"{path}: unreadable ({error}); plotting without it"]
    if not isinstance(meta, dict):
        return {}, [f"{path}: not a JSON object; plotting without it"]
    return meta, []


def node_info(meta: dict) -> NodeInfo:
    """Every GPU's name, PCIe link and HBM peak (the first one also flat, as before); tolerate
    any missing level."""
    node = _dict(meta.get("node"))
    records = [_dict(g) for g in node.get("gpus")] if isinstance(node.get("gpus"), list) else []
    gpus = tuple(parse_gpu(g, position) for position, g in enumerate(records))
    first = gpus[0] if gpus else GpuInfo()
    return NodeInfo(gpu_name=first.name, pcie_gen=first.pcie_gen, pcie_width=first.pcie_width,
                    hbm_peak_gbps=first.hbm_peak_gbps,
                    driver=_text(node.get("driver_release"))
                    or (_text(records[0].get("driver_release")) if records else None),
                    cuda_runtime=_text(node.get("cuda_runtime")), gpus=gpus)


def parse_gpu(gpu: dict, position: int) -> GpuInfo:
    """One node.gpus record; without an "index" the list position stands in for it."""
    pcie = _dict(gpu.get("pcie"))
    # The maximum is the link's capability; an idle link often trains down, so "current" is a fallback.
    gen = _positive(pcie.get("gen_max")) or _positive(pcie.get("gen_current"))
    width = _positive(pcie.get("width_max")) or _positive(pcie.get("width_current"))
    index = gpu.get("index")
    return GpuInfo(index=index if isinstance(index, int) and not isinstance(index, bool) else position,
                   name=_text(gpu.get("name")), uuid=_text(gpu.get("uuid")),
                   pcie_gen=int(gen) if gen else None, pcie_width=int(width) if width else None,
                   hbm_peak_gbps=_positive(gpu.get("hbm_peak_GBps")))


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
    """'0, 1' → ['0', '1']: the device and gpu_uuid columns of a case spanning GPUs."""
    return [part.strip() for part in text.split(",") if part.strip()]


def _dict(value: object) -> dict:
    return value if isinstance(value, dict) else {}


def _text(value: object) -> str | None:
    return str(value) if value not in (None, "") else None


def _positive(value: object) -> float | None:
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return number if number > 0 and math.isfinite(number) else None


# ---------------------------------------------------------------- peaks

def pcie_peak_gbps(gen: int | None, width: int | None) -> float | None:
    """One direction's payload-free link rate: GT/s × lanes × line-code efficiency ÷ 8 bits.

    Gen1/2 use 8b/10b, Gen3+ 128b/130b: Gen5 x16 → 63.0 GB/s. The same formula as the harness's
    report (harness/src/peaks.cpp), so a plot and the report quote one peak. (Gen6's FLIT mode
    has a different overhead; the line is then an approximation.) Real copies reach ~85–90 %:
    TLP headers and flow control cost the rest.
    """
    if not gen or not width or gen not in PCIE_GT_PER_S:
        return None
    efficiency = 8 / 10 if gen <= 2 else 128 / 130
    return PCIE_GT_PER_S[gen] * width * efficiency / 8


# ---------------------------------------------------------------- selecting rows

def select(rows: Iterable[Row], **criteria: object) -> list[Row]:
    """Rows whose named fields equal the given values, e.g. select(rows, case="alloc")."""
    return [r for r in rows if all(getattr(r, k) == v for k, v in criteria.items())]


def by_size(rows: Iterable[Row], metric: str, statistic: str) -> dict[int, float]:
    """size_bytes → value for one metric and statistic."""
    return {r.size_bytes: r.value for r in rows
            if r.metric == metric and r.statistic == statistic
            and r.size_bytes is not None and r.value is not None}


def devices_in(rows: Iterable[Row], spanning: bool = False) -> list[str]:
    """The `device` values of the rows, in index order: the GPUs a family measured one at a time
    (a figure each), or with spanning=True only the multi-GPU values such as '0,1'."""
    values = {r.device for r in rows if r.device and (len(r.devices) > 1) == spanning}
    return sorted(values, key=lambda d: [int(p) if p.isdigit() else -1 for p in split_list(d)] + [d])


def per_device_name(name: str, device: str, several: bool) -> str:
    """'copy_bandwidth_h2d' + '_gpu1' when the run measured several GPUs; a single-GPU run keeps
    the plain name so its figures stay comparable with older runs and references."""
    return f"{name}_gpu{device.replace(',', '_')}" if several and device else name


def group(rows: Iterable[Any], key: Callable[[Any], tuple]) -> dict[tuple, list[Any]]:
    """Rows grouped by key, groups in first-seen order."""
    groups: dict[tuple, list[Row]] = {}
    for row in rows:
        groups.setdefault(key(row), []).append(row)
    return groups


def ordered(values: Iterable[str], preferred: Sequence[str]) -> list[str]:
    """Distinct values, the preferred ones first in that order, the rest alphabetically."""
    distinct = set(values)
    return [v for v in preferred if v in distinct] + sorted(distinct - set(preferred))


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


def api_label(api: str) -> str:
    """'async' → 'cudaMemcpyAsync': the call a reader would write."""
    return API_LABELS.get(api, api or "?")


def line_label(host_kind: str, api: str, extra: str = "") -> str:
    """'pinned · cudaMemcpyAsync' — what a curve is, in the reader's words."""
    label = f"{host_kind or '?'} · {api_label(api)}"
    return f"{label} ({extra})" if extra else label


def host_color(host_kind: str) -> str:
    """The house colour of a host memory kind; unknown kinds get a stable fallback."""
    if host_kind in HOST_KIND_COLORS:
        return HOST_KIND_COLORS[host_kind]
    return FALLBACK_COLORS[sum(map(ord, host_kind)) % len(FALLBACK_COLORS)]


def api_style(api: str) -> tuple[str | tuple, str]:
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
               sharey: bool = False) -> tuple[Figure, list[Axes]]:
    """A pyplot-free figure (no global figure registry) with `ncols` side-by-side axes.

    The Agg canvas is attached explicitly so layout code can measure text before saving.
    """
    fig = Figure(figsize=(width, height))
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


def figure_legend(fig: Figure, handles: Sequence, labels: Sequence[str], title: str | None = None,
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


def finish(fig: Figure, lesson: str, subtitle: str, legend: Legend | None = None) -> Figure:
    """Title band on top (the lesson, bold and wrapped, then the run identity), the figure
    legend's band at the bottom, and a tight layout of the axes in between."""
    width, height = fig.get_size_inches()
    bottom = 0.0
    if legend is not None:
        legend_height = legend.get_window_extent(fig.canvas.get_renderer()).height / fig.dpi
        bottom = (legend_height + 0.1) / height
    lines = textwrap.wrap(lesson, width=max(40, int(width * 8.2)))
    band = 0.16 + 0.25 * len(lines) + 0.26
    fig.text(0.5, 1 - 0.1 / height, "\n".join(lines), ha="center", va="top",
             fontsize=12.5, fontweight="bold")
    fig.text(0.5, 1 - (0.12 + 0.25 * len(lines)) / height, subtitle, ha="center", va="top",
             fontsize=8.5, color="0.35")
    fig.tight_layout(rect=(0, bottom, 1, 1 - band / height))
    return fig
