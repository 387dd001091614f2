"""What a family module declares it draws, and the plan of a run's files.

A module declares `FIGURES = [Figure(...)]`; `plan()` turns the declarations and the run's rows
into the list of files the run must produce, which plot_run draws and the tests compare.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from matplotlib.figure import Figure as MplFigure

from .json_values import as_dict
from .results_csv import Row
from .run import GpuInfo, Run


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
    tiers = as_dict(meta.get("tiers"))
    classes = tiers.get("classes") if isinstance(tiers.get("classes"), list) else []
    chosen = frozenset(c["representative"] for c in map(as_dict, classes)
                       if isinstance(c.get("representative"), int) and not isinstance(c.get("representative"), bool))
    return None if every_gpu or not chosen else chosen


def check_figures(module_name: str, figures: object) -> list[Figure]:
    """A module's FIGURES as a list, or a ValueError saying what is wrong with it."""
    if not isinstance(figures, (list, tuple)) or not all(isinstance(f, Figure) for f in figures):
        raise ValueError(f"plot module {module_name}: FIGURES must be a list of hdbplots.figures.Figure")
    names = [f.name for f in figures]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValueError(f"plot module {module_name}: figure names declared twice: {', '.join(repeated)}")
    for f in figures:
        if not f.needs or not callable(f.draw):
            raise ValueError(f"plot module {module_name}: figure {f.name} needs at least one Need and a draw function")
    return list(figures)


def per_device_name(name: str, device: int | None, several: bool) -> str:
    """'copy_bandwidth_h2d' + '_gpu1' when several devices have the figure; a single-GPU run keeps
    the plain name so its figures stay comparable with older runs and references."""
    return f"{name}_gpu{device}" if several and device is not None else name
