"""The fleet figures: `hdbench fleet` writes plots/fleet_plot.json (docs/fleet.md), this draws it.

- one figure per graded figure (family + label): every node's value on every GPU as a dot, sorted,
  with the band each was graded against (its peers' or the set's), the dots coloured by grade and
  the outliers (WARN and FAIL) labelled by hostname and GPU;
- one heatmap, nodes x figures (each GPU its own column), in % from the centre the figure was
  graded against, clipped at +-10 % so a 5 % fault stands out. A node's row without a cell says
  across it why the node is FAIL or WARN (its `reason`: "no check.json: the run did not finish");
  a fleet with no graded figure at all (no node finished) still gets it, every node a row with
  its reason, and no dot plot.

fleet_plot.json holds only what the figures draw, in columns (a thousand nodes x 8 GPUs is about
6.6 MB, where fleet.json is 65 MB):

    {"fleet_plot_version": 1,
     "nodes": {"name": [...], "hostname": [...], "grade": [...],         worst first, as fleet's
               "reason": [...]},                                       unplotted_reason(); "" for none
     "figures": [{"family", "figure", "unit",                            sorted by family, figure
                  "node": [index into nodes], "gpu": ["GPU 0", ...],     one entry per dot
                  "grade", "value", "low", "high", "centre": [...]}]}

A fleet.json (older hdbench, or drawn apart) is read too and reduced to the same columns. Nothing
is re-graded here. One Figure is reused for the dot plots and the drawing is numpy throughout, so
the figures of a thousand nodes take seconds, not the fleet's memory; a large fleet's figures are
drawn by two processes where two CPUs are free.
"""
from __future__ import annotations

import json
import multiprocessing
import os
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.cm import ScalarMappable  # noqa: E402
from matplotlib.colors import Normalize  # noqa: E402
from matplotlib.transforms import Bbox  # noqa: E402
import numpy as np  # noqa: E402

GRADE_COLOURS = {"FAIL": "#c0392b", "WARN": "#e67e22", "PASS": "#2e86c1", "INFO": "#95a5a6"}
MAX_LABELS = 12  # outliers labelled per figure: more would cover the dots
MAX_ROW_LABELS = 60  # heatmap rows named when the fleet is small; else only the nodes that FAIL or WARN
RASTERIZE_ABOVE = 1000  # dots drawn as one image in vector formats (svg, pdf) above this many
DOTS_SIZE = (9, 4.2)
DOTS_MARGINS = {"left": 0.08, "right": 0.985, "bottom": 0.12, "top": 0.9}  # fixed: no layout pass per figure


def load(path: str | Path) -> dict:
    """fleet_plot.json, or a fleet.json reduced to its columns. ValueError for neither."""
    with open(path) as f:
        data = json.load(f)
    if isinstance(data, dict) and "fleet_plot_version" in data:
        return data
    if isinstance(data, dict) and "fleet_version" in data and "nodes" in data:
        return from_fleet(data)
    raise ValueError("neither a fleet_plot.json nor a fleet.json (hdbench fleet writes them)")


def gpu_text(gpus: list[int]) -> str:
    return "node" if not gpus else "GPU " + ",".join(str(g) for g in gpus)


def from_fleet(fleet: dict) -> dict:
    """fleet.json's nodes and lines reduced to fleet_plot.json's columns (what hdbench fleet writes)."""
    nodes = {"name": [], "hostname": [], "grade": [], "reason": []}
    figures: dict[tuple[str, str], dict] = {}
    for i, node in enumerate(fleet["nodes"]):
        nodes["name"].append(node["name"])
        nodes["hostname"].append(node["hostname"])
        nodes["grade"].append(node["grade"])
        nodes["reason"].append(unplotted_reason(node["lines"]))
        for line in node["lines"]:
            band = band_of(line)
            if band is None:
                continue
            entry = figures.setdefault((line["family"], line["figure"]), {
                "family": line["family"], "figure": line["figure"], "unit": line["unit"],
                "node": [], "gpu": [], "grade": [], "value": [], "low": [], "high": [], "centre": []})
            entry["node"].append(i)
            entry["gpu"].append(gpu_text(line["gpus"]))
            entry["grade"].append(line["grade"])
            entry["value"].append(line["value"])
            for key in ("low", "high", "centre"):
                entry[key].append(band[key])
    return {"fleet_plot_version": 1, "reduced_from": "fleet.json", "nodes": nodes, "figures": [figures[k] for k in sorted(figures)]}


def band_of(line: dict) -> dict | None:
    """The band of a fleet.json line the figures draw (a figure graded against a band: a dot, a
    heatmap cell), or None: the graded line's "expected" (fleet_version 2), or the top-level
    low/high/centre of a fleet_version 1 file."""
    if line.get("family") in ("health", "node") or line.get("value") is None:
        return None
    expected = line.get("expected")
    source = expected if isinstance(expected, dict) else line
    if all(source.get(k) is not None for k in ("low", "high", "centre")):
        return source
    return None


def banded(line: dict) -> bool:
    return band_of(line) is not None


def unplotted_reason(lines: list[dict]) -> str:
    """Why a node is FAIL or WARN where no dot or cell shows it: its worst such line (fleet.json
    lists them worst first) as "GPU 0 health PCIe link: <reason>", or the reason alone for fleet's
    own lines about the node as a whole (family "node": "no check.json: the run did not finish");
    "" when it has none. hdbench fleet writes the same text (fleet_render.cpp fleet_plot_json)."""
    for line in lines:
        if line["grade"] in ("FAIL", "WARN") and not banded(line):
            about = "" if line["family"] == "node" else f"{line['family']} {line['figure']}: "
            return (f"{gpu_text(line['gpus'])} " if line["gpus"] else "") + about + line["reason"]
    return ""


def file_stem(family: str, figure: str) -> str:
    return "fleet_" + re.sub(r"[^a-z0-9]+", "_", f"{family} {figure}".lower()).strip("_")[:80]


def _columns(entry: dict) -> dict:
    """One figure's dots as numpy arrays, sorted by value (stable: equal values keep fleet's order)."""
    value = np.asarray(entry["value"], dtype=float)
    order = np.argsort(value, kind="stable")
    cols = {k: np.asarray(entry[k], dtype=float)[order] for k in ("value", "low", "high", "centre")}
    cols["grade"] = np.asarray(entry["grade"], dtype=object)[order]
    cols["node"] = np.asarray(entry["node"], dtype=int)[order]
    cols["gpu"] = np.asarray(entry["gpu"], dtype=object)[order]
    return cols


def _emptied_axes(fig):
    """`fig`'s axes with the last figure's artists and data limits gone, its ticks and fonts kept
    (a fifth of the time of a new Axes per figure); a new Axes on a new Figure."""
    if not fig.axes:
        return fig.add_subplot()
    ax = fig.axes[0]
    for artist in [*ax.collections, *ax.lines, *ax.texts]:
        artist.remove()
    if ax.get_legend() is not None:
        ax.get_legend().remove()
    ax.dataLim.set_points(Bbox.null().get_points())
    ax.ignore_existing_data_limits = True
    ax.set_autoscale_on(True)
    return ax


def draw_dots(fig, data: dict, entry: dict):
    """Draws one figure's dots into `fig` (what it showed before removed) and returns its axes."""
    ax = _emptied_axes(fig)
    c = _columns(entry)
    n = len(c["value"])
    x = np.arange(n)
    raster = n > RASTERIZE_ABOVE
    ax.fill_between(x, c["low"], c["high"], step="mid", color="#aed6f1", alpha=0.6, lw=0,
                    label="band each dot was graded against", rasterized=raster)
    ax.plot(x, c["centre"], color="#5d6d7e", lw=0.8, label="centre", rasterized=raster)
    size = 10 if n > 200 else 22
    handles = {}
    for z, grade in enumerate(("INFO", "PASS", "WARN", "FAIL")):  # the outliers drawn last, on top
        mask = c["grade"] == grade
        count = int(mask.sum())
        if count:
            handles[grade] = ax.scatter(x[mask], c["value"][mask], s=size, color=GRADE_COLOURS[grade], lw=0,
                                        label=f"{grade} ({count})", zorder=3 + z, rasterized=raster)
    with np.errstate(divide="ignore", invalid="ignore"):
        from_centre = np.where(c["centre"] > 0, c["value"] / c["centre"] - 1, 0.0)
    outliers = np.flatnonzero((c["grade"] == "FAIL") | (c["grade"] == "WARN"))
    # FAIL first, then the farthest from the centre
    outliers = outliers[np.lexsort((-np.abs(from_centre[outliers]), c["grade"][outliers] != "FAIL"))]
    hostnames = data["nodes"]["hostname"]
    lo, hi = float(c["value"].min()), float(c["value"].max())
    near_x, near_y = 0.03 * n, 0.03 * (hi - lo)
    last = None  # (x, value, level) of the label before: labels of neighbouring dots are stacked
    for i in sorted(outliers[:MAX_LABELS]):
        grade = c["grade"][i]
        level = 0
        if last is not None and x[i] - last[0] <= near_x and abs(c["value"][i] - last[1]) <= near_y:
            level = last[2] + 1
        last = (x[i], c["value"][i], level)
        ax.annotate(f"{hostnames[c['node'][i]]} {c['gpu'][i]}", (x[i], c["value"][i]), xytext=(4, 4 + 8 * level),
                    textcoords="offset points", fontsize=7, color=GRADE_COLOURS[grade], zorder=10)
    fails = int((c["grade"] == "FAIL").sum())
    spread = 100 * (hi / lo - 1) if lo > 0 else float("nan")
    ax.set_title(f"{entry['family']} {entry['figure']}: {n} GPUs, {fails} FAIL; the whole fleet spans {spread:.1f} %",
                 fontsize=10, wrap=True)
    ax.set_xlabel("node and GPU, sorted by value")
    ax.set_ylabel(entry["unit"])
    ax.set_xlim(-0.5 - 0.01 * n, n - 0.5 + 0.01 * n)
    legend = [h for h in ax.get_legend_handles_labels()[0] if h not in handles.values()]
    legend += [handles[g] for g in GRADE_COLOURS if g in handles]
    # "best" weighs every dot: at thousands of dots the upper left, empty as the dots rise, is as good
    ax.legend(handles=legend, fontsize=7, loc="best" if n <= RASTERIZE_ABOVE else "upper left")
    fig.subplots_adjust(**DOTS_MARGINS)
    return ax


def heatmap_grid(data: dict) -> tuple[np.ndarray, list[tuple[str, str, str]]]:
    """Nodes (fleet's order) x columns (family, figure, GPU: sorted), in % from the centre; NaN where unmeasured."""
    columns: list[tuple[str, str, str]] = []
    placed = []  # (rows, column indices, % from centre) per figure
    for entry in sorted(data["figures"], key=lambda e: (e["family"], e["figure"])):
        value = np.asarray(entry["value"], dtype=float)
        centre = np.asarray(entry["centre"], dtype=float)
        keep = centre > 0
        if not keep.any():
            continue
        gpus, where = np.unique(np.asarray(entry["gpu"], dtype=object)[keep].astype(str), return_inverse=True)
        placed.append((np.asarray(entry["node"], dtype=int)[keep], len(columns) + where,
                       100 * (value[keep] / centre[keep] - 1)))
        columns += [(entry["family"], entry["figure"], g) for g in gpus]
    grid = np.full((len(data["nodes"]["name"]), len(columns)), np.nan)
    for rows, cols, percent in placed:
        grid[rows, cols] = percent
    return grid, columns


def draw_heatmap(data: dict):
    """The heatmap as a new Figure (its size follows the fleet's), or None for a fleet of no nodes."""
    grid, columns = heatmap_grid(data)
    if not data["nodes"]["name"]:
        return None
    if not columns:
        return draw_ungraded_heatmap(data)
    names, grades = data["nodes"]["name"], data["nodes"]["grade"]
    fig = plt.figure(figsize=heatmap_size(len(names), len(columns)))
    ax = fig.add_subplot()
    # Coloured here, as bytes: imshow would resample the floats to the figure's pixels (at a
    # thousand nodes 4,800 x 4,800 RGBA doubles, 700 MB) where RGBA bytes take an eighth.
    colours = ScalarMappable(Normalize(vmin=-10, vmax=10), plt.get_cmap("RdBu"))
    ax.imshow(colours.to_rgba(np.ma.masked_invalid(grid), bytes=True), aspect="auto", interpolation="nearest")
    fig.colorbar(colours, ax=ax, label="% from centre (clipped at 10)")
    ax.set_xticks(range(len(columns)))
    ax.set_xticklabels([f"{f} {l} {g}"[:60] for f, l, g in columns], rotation=90, fontsize=6)
    named = named_rows(grades)
    write_reasons(ax, data, [i for i in named if np.isnan(grid[i]).all()])
    ax.set_yticks(named)
    ax.set_yticklabels([f"{names[i]} {grades[i]}" for i in named], fontsize=6)
    fails = sum(1 for g in grades if g == "FAIL")
    ax.set_title(f"{len(names)} nodes x {len(columns)} figures, % from the centre each was graded against: "
                 f"{fails} node(s) FAIL (worst first)", fontsize=10)
    fig.tight_layout()  # once: the tick labels' room
    return fig


def draw_ungraded_heatmap(data: dict):
    """The heatmap of a fleet with no graded figure (no node finished its check): nothing to colour,
    so each node is a row, named with its grade, with its reason across it."""
    names, grades = data["nodes"]["name"], data["nodes"]["grade"]
    fig = plt.figure(figsize=heatmap_size(len(names), 0))
    ax = fig.add_subplot()
    ax.set_xlim(0, 1)
    ax.set_ylim(len(names) - 0.5, -0.5)  # the first node on top, as imshow puts it
    ax.set_xticks([])
    named = named_rows(grades)
    write_reasons(ax, data, named)
    ax.set_yticks(named)
    ax.set_yticklabels([f"{names[i]} {grades[i]}" for i in named], fontsize=6)
    fails = sum(1 for g in grades if g == "FAIL")
    ax.set_title(f"{len(names)} nodes, none with a graded figure to colour: {fails} node(s) FAIL (worst first), "
                 f"each row says why", fontsize=10, wrap=True)
    fig.tight_layout()
    return fig


def named_rows(grades: list[str]) -> list[int]:
    """The heatmap rows named: every node of a small fleet, else those that FAIL or WARN (at most
    2 x MAX_ROW_LABELS of them, worst first)."""
    named = [i for i in range(len(grades)) if len(grades) <= MAX_ROW_LABELS or grades[i] in ("FAIL", "WARN")]
    return named[:MAX_ROW_LABELS * 2]


def write_reasons(ax, data: dict, rows: list[int]) -> None:
    """Each row's reason (fleet_plot.json nodes.reason) written across it, clipped at the axes: for
    the rows that have no cell, whose grade the colours cannot explain."""
    reasons = data["nodes"].get("reason") or []  # a fleet_plot.json of an older hdbench has none
    for i in rows:
        if i < len(reasons) and reasons[i]:
            ax.text(0.01, i, reasons[i], transform=ax.get_yaxis_transform(), fontsize=6, color="0.15",
                    va="center", ha="left", clip_on=True)


def heatmap_size(nodes: int, columns: int) -> tuple[float, float]:
    # Without a column the rows hold only their reasons: as wide as a dot plot, so they can be read.
    return min(40.0, 4 + 0.28 * columns) if columns else DOTS_SIZE[0], min(40.0, 2.5 + 0.16 * nodes)


def _save(fig, stem: Path, formats: list[str], dpi: int) -> list[Path]:
    written = []
    for fmt in formats:
        path = stem.with_name(f"{stem.name}.{fmt}")
        fig.savefig(path, dpi=dpi)
        written.append(path)
    return written


_JOB: dict = {}  # what the drawing processes share (forked, not pickled)


def _draw_task(task: int) -> list[Path]:
    """Task -1 is the heatmap, else the dot plot of figures[task]; one Figure per process, reused."""
    data, out, formats, dpi = _JOB["data"], _JOB["out"], _JOB["formats"], _JOB["dpi"]
    if task < 0:
        heatmap = draw_heatmap(data)
        if heatmap is None:
            return []
        try:
            return _save(heatmap, out / "fleet_heatmap", formats, dpi)
        finally:
            plt.close(heatmap)
    if "fig" not in _JOB:
        _JOB["fig"] = plt.figure(figsize=DOTS_SIZE)
    entry = data["figures"][task]
    draw_dots(_JOB["fig"], data, entry)
    return _save(_JOB["fig"], out / file_stem(entry["family"], entry["figure"]), formats, dpi)


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def draw(data: dict, out: Path, formats: list[str], dpi: int, jobs: int | None = None) -> list[Path]:
    """Every figure, on `jobs` processes (default: up to 2 where the CPUs are there and the fleet is
    large); returns the written paths, the dot plots by family and figure, then the heatmap."""
    out.mkdir(parents=True, exist_ok=True)
    data = dict(data, figures=sorted((e for e in data["figures"] if e["value"]), key=lambda e: (e["family"], e["figure"])))
    tasks = [-1] + list(range(len(data["figures"])))  # the heatmap first: it takes longest
    points = sum(len(e["value"]) for e in data["figures"])
    if jobs is None:
        jobs = min(2, _cpus()) if points > 5000 else 1
    _JOB.clear()
    _JOB.update(data=data, out=out, formats=formats, dpi=dpi)
    results: dict[int, list[Path]] = {}
    try:
        if jobs > 1 and "fork" in multiprocessing.get_all_start_methods():
            with multiprocessing.get_context("fork").Pool(jobs) as pool:
                for task, paths in zip(tasks, pool.imap(_draw_task, tasks, chunksize=1)):
                    results[task] = paths
        else:
            for task in tasks:
                results[task] = _draw_task(task)
    finally:
        if "fig" in _JOB:
            plt.close(_JOB["fig"])
        _JOB.clear()
    return [p for task in tasks[1:] + tasks[:1] for p in results[task]]
