"""The fleet figures: `hdbench fleet` writes plots/fleet_plot.json (docs/fleet.md), this draws it.

- one dot plot per graded figure (family + label): every node's value on every GPU as a dot, sorted
  by value (the x axis is the rank), with the band each was graded against (its peers' or the
  set's), the dots coloured by grade. The FAIL and WARN dots are named ("hostname GPU n"): on the
  axis, where the fleet is small enough to name every dot, else beside the dots with a leader line;
- one heatmap of the nodes that matter: every FAIL node (those whose figures FAIL first, worst
  first), then every WARN node, then the PASS nodes nearest their tolerance, HEATMAP_ROWS in all;
  the figure says how many nodes it left out, and their grades. One column per graded figure; each
  cell is that node's worst GPU on that figure (named in the cell), as the distance from its band's
  centre in the direction that is worse, in units of the line's own tolerance (fleet.json's
  `better` and `tolerance`): 1 is the tolerance, so a FAIL cell reads 1 or more, and a host line
  (pageable, 50 %) is weighed by its own tolerance, not by a pinned copy's 3 %. A column per GPU
  would be 128 columns at 8 GPUs, each a pixel wide; the dot plots show every GPU. Each row says at
  its right why the node FAILs or WARNs: its worst line, or its `reason` where no cell can show it
  ("no check.json: the run did not finish", a health line); a fleet with no graded figure at all
  (no node finished) still gets the heatmap, each row with its reason.

fleet_plot.json holds only what the figures draw, in columns (a thousand nodes x 8 GPUs is about
7 MB, where fleet.json is 65 MB):

    {"fleet_plot_version": 2,
     "nodes": {"name": [...], "hostname": [...], "grade": [...],         worst first, as fleet's
               "reason": [...]},                                       unplotted_reason(); "" for none
     "figures": [{"family", "figure", "unit",                            sorted by family, figure
                  "node": [index into nodes], "gpu": ["GPU 0", ...],     one entry per dot
                  "grade", "value", "low", "high", "centre": [...],
                  "rules": [{"better", "tolerance", "host_bound"}],      each distinct rule once
                  "rule": [index into rules]}]}                         one entry per dot

A fleet.json (older hdbench, or drawn apart) is read too and reduced to the same columns; a
version-1 fleet_plot.json (no rules) draws its heatmap uncoloured, saying so. Nothing is re-graded
here: the grades are fleet's, and the distance is the decision's worse_by (decision.hpp) over the
line's tolerance. Only the rows shown are drawn, one Figure is reused for the dot plots and the
drawing is numpy throughout, so the figures of a thousand nodes take a second or two of CPU.
"""
from __future__ import annotations

import json
import multiprocessing
import os
import re
from pathlib import Path

import matplotlib
import matplotlib.transforms

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.cm import ScalarMappable  # noqa: E402
from matplotlib.collections import LineCollection, PatchCollection  # noqa: E402
from matplotlib.colors import Normalize  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402
from matplotlib.transforms import Bbox  # noqa: E402
import numpy as np  # noqa: E402

GRADE_COLOURS = {"FAIL": "#c0392b", "WARN": "#e67e22", "PASS": "#2e86c1", "INFO": "#95a5a6"}
GRADE_RANK = {"FAIL": 0, "WARN": 1, "PASS": 2, "INFO": 3}  # fleet's order: worst first
MAX_LABELS = 12  # outliers named per dot plot: more would cover the dots
NAMES_ON_AXIS = 40  # a dot plot of this many dots or fewer names every dot on its x axis
HEATMAP_ROWS = 40  # the nodes a heatmap shows: readable names and cells
SCORE_LIMIT = 2.0  # the heatmap's colours end at +-2 tolerances
RASTERIZE_ABOVE = 1000  # dots drawn as one image in vector formats (svg, pdf) above this many
BAND_COLUMNS = 1200  # the band drawn in at most this many steps: more than the plot's pixels
# A dot plot's layout, in inches (fixed: no layout pass per figure): the plot, the title above it,
# under it the axis with its ranks, or with the dots' names (as tall as the longest).
DOTS_WIDTH, DOTS_PLOT_H, DOTS_TOP_H, DOTS_RANKS_H = 9.0, 3.3, 0.62, 0.62
NAME_CHAR_W = 0.06  # inches per character of a 7 pt name (bold where it is a FAIL or WARN), rotated or not
NO_CELL = "#e5e7e9"  # a figure the node did not measure, or one no tolerance weighs


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


def rule_of(line: dict) -> dict:
    """The rule that judged a fleet.json line, as fleet_plot.json lists it (hdbench fleet writes the same)."""
    return {"better": line.get("better"), "tolerance": line.get("tolerance"), "host_bound": bool(line.get("host_bound"))}


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
                "node": [], "gpu": [], "grade": [], "value": [], "low": [], "high": [], "centre": [],
                "rules": [], "rule": []})
            entry["node"].append(i)
            entry["gpu"].append(gpu_text(line["gpus"]))
            entry["grade"].append(line["grade"])
            entry["value"].append(line["value"])
            for key in ("low", "high", "centre"):
                entry[key].append(band[key])
            rule = rule_of(line)
            if rule not in entry["rules"]:
                entry["rules"].append(rule)
            entry["rule"].append(entry["rules"].index(rule))
    return {"fleet_plot_version": 2, "reduced_from": "fleet.json", "nodes": nodes,
            "figures": [figures[k] for k in sorted(figures)]}


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


_PARAMETERS = re.compile(r"(.*?) \(((?:\w+=[^=]*?)(?: \w+=[^=]*?)*)\)")
_PARAMETER = re.compile(r"(\w+)=(.*?)(?= \w+=|$)")


def short_labels(figures: list[dict]) -> list[str]:
    """Each figure's label, readable in a column or a title: a generic label "collective algbw
    (api=all_reduce dtype=float ... size_bytes=4 GiB)" (a gated row, named by its parameters) keeps
    its name, the values of the parameters that tell it from the family's other figures of that
    name, its size, and src->dst ("bandwidth 0→1 1 GiB"); a declared check's label ("pinned h2d
    1 GiB") stays as it is."""
    parsed = []
    for entry in figures:
        match = _PARAMETERS.fullmatch(entry["figure"])
        parsed.append((match.group(1), dict(_PARAMETER.findall(match.group(2)))) if match else (entry["figure"], None))
    labels = []
    for entry, (head, params) in zip(figures, parsed):
        if params is None:
            labels.append(head)
            continue
        others = [p for e, (h, p) in zip(figures, parsed) if p is not None and h == head and e["family"] == entry["family"]]
        words = [head]
        if "src" in params and "dst" in params:
            words.append(f"{params['src']}→{params['dst']}")
        words += [v for k, v in params.items() if k not in ("src", "dst", "size_bytes") and len({o.get(k) for o in others}) > 1]
        if "size_bytes" in params:
            words.append(params["size_bytes"])
        labels.append(" ".join(words))
    return labels


def percent_text(fraction: float) -> str:
    return f"{100 * fraction:+.1f} %".replace("-", "−")


def tolerance_text(rule: dict) -> str:
    tolerance = rule.get("tolerance")
    text = f"{100 * tolerance:g} %" if isinstance(tolerance, (int, float)) else "no tolerance"
    return text + (", host" if rule.get("host_bound") else "")


def tolerances_worse(entry: dict) -> np.ndarray:
    """Each dot's distance from its band's centre in the direction that is worse, in units of its
    own tolerance: worse_by (decision.hpp: 1 - v/c when higher is better, v/c - 1 when lower is)
    over the tolerance. 1 is the tolerance: a FAIL is outside its band and beyond it, so it reads 1
    or more; < 0 is better than the centre. NaN where no tolerance or no direction weighs it (a
    neutral figure, an older fleet_plot.json without rules)."""
    value = np.asarray(entry["value"], dtype=float)
    centre = np.asarray(entry["centre"], dtype=float)
    rules, which = entry.get("rules"), entry.get("rule")
    if not rules or which is None:
        return np.full(len(value), np.nan)
    sign = np.array([{"higher": -1.0, "lower": 1.0}.get(r.get("better"), np.nan) for r in rules])
    tolerance = np.array([r["tolerance"] if isinstance(r.get("tolerance"), (int, float)) and r["tolerance"] > 0
                          else np.nan for r in rules])
    which = np.asarray(which, dtype=int)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(centre > 0, sign[which] * (value / centre - 1) / tolerance[which], np.nan)


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
    """`fig`'s axes with the last figure's artists and data limits gone, its fonts kept (a fifth of
    the time of a new Axes per figure); a new Axes on a new Figure."""
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


def dot_name(data: dict, node: int, gpu: str) -> str:
    """ "gpu02 GPU 0": the node's name (its hostname, with its run directory where hostnames repeat)."""
    return f"{data['nodes']['name'][node]} {gpu}"


def named_outliers(c: dict) -> np.ndarray:
    """The dots to name (indices into the sorted columns): the FAIL ones, then the WARN ones, each
    the farthest from their centre first, MAX_LABELS at most."""
    with np.errstate(divide="ignore", invalid="ignore"):
        from_centre = np.where(c["centre"] > 0, c["value"] / c["centre"] - 1, 0.0)
    outliers = np.flatnonzero((c["grade"] == "FAIL") | (c["grade"] == "WARN"))
    outliers = outliers[np.lexsort((-np.abs(from_centre[outliers]), c["grade"][outliers] != "FAIL"))]
    return outliers[:MAX_LABELS]


def _spread(desired: list[float], gap: float, low: float, high: float) -> list[float]:
    """Positions near `desired` (sorted ascending) at least `gap` apart, within [low, high]."""
    placed = []
    for y in desired:
        placed.append(max(y, placed[-1] + gap) if placed else y)
    overflow = placed[-1] - high if placed else 0
    if overflow > 0:
        placed = [y - overflow for y in placed]
    if placed and placed[0] < low:  # too many for the room: evenly from the bottom
        placed = [low + j * (high - low) / max(1, len(placed) - 1) for j in range(len(placed))]
    return placed


def _name_beside(ax, data: dict, entry: dict, c: dict, chosen: np.ndarray) -> None:
    """Names the chosen dots beside them: those under their centre in a column right of them, those
    above in a column left of them (where the sorted curve leaves room), each joined to its dot by a
    line (texts and one LineCollection: an annotation with an arrow costs five times as much)."""
    (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
    leaders, colours = [], []
    for under in (True, False):
        group = sorted((i for i in chosen if (c["value"][i] < c["centre"][i]) == under), key=lambda i: c["value"][i])
        if not group:
            continue
        xs = [(i - x0) / (x1 - x0) for i in group]
        column = min(0.97, max(xs) + 0.06) if under else max(0.03, min(xs) - 0.06)
        ys = _spread([(c["value"][i] - y0) / (y1 - y0) for i in group], 0.045, 0.04, 0.97)
        names = dot_names(data, entry, c["node"][group], c["gpu"][group])
        for name, i, x, y in zip(names, group, xs, ys):
            colour = GRADE_COLOURS[c["grade"][i]]
            ax.text(column + (0.004 if under else -0.004), y, name, transform=ax.transAxes, fontsize=7, color=colour,
                    va="center", ha="left" if under else "right", zorder=10)
            leaders.append([(x, (c["value"][i] - y0) / (y1 - y0)), (column, y)])
            colours.append(colour)
    if leaders:
        ax.add_collection(LineCollection(leaders, colors=colours, linewidths=0.6, transform=ax.transAxes, zorder=9,
                                         label="_leaders"))


def _band_columns(c: dict, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The band and centre to draw: each dot's own, or above BAND_COLUMNS dots (several to a pixel)
    per run of neighbouring dots the lowest low and the highest high (no dot's band drawn narrower
    than it was) and the mean centre. Returns x edges, low, high, centre at each edge."""
    if n <= BAND_COLUMNS:
        edges = np.arange(n + 1)
    else:
        edges = np.linspace(0, n, BAND_COLUMNS + 1).round().astype(int)
    starts = edges[:-1]
    low = np.minimum.reduceat(c["low"], starts)
    high = np.maximum.reduceat(c["high"], starts)
    centre = np.add.reduceat(c["centre"], starts) / np.diff(edges)
    # the last value again at the right edge: a step drawn "post" ends there
    return edges - 0.5, np.append(low, low[-1]), np.append(high, high[-1]), np.append(centre, centre[-1])


def dot_names(data: dict, entry: dict, nodes: np.ndarray, gpus: np.ndarray) -> list[str]:
    """The names of dots: "gpu02 GPU 3"; the node's name alone where each node has one GPU, the same."""
    if len(set(entry["gpu"])) == 1:
        return [data["nodes"]["name"][i] for i in nodes]
    return [dot_name(data, i, g) for i, g in zip(nodes, gpus)]


def dots_size(data: dict, entry: dict) -> tuple[float, float]:
    """The dot plot's size in inches: taller where the axis names every dot (as its longest name)."""
    n = len(entry["value"])
    if n > NAMES_ON_AXIS:
        return DOTS_WIDTH, DOTS_TOP_H + DOTS_PLOT_H + DOTS_RANKS_H
    longest = max((len(t) for t in dot_names(data, entry, np.asarray(entry["node"], dtype=int),
                                                np.asarray(entry["gpu"], dtype=object))), default=0)
    return DOTS_WIDTH, DOTS_TOP_H + DOTS_PLOT_H + 0.6 + NAME_CHAR_W * longest


def draw_dots(fig, data: dict, entry: dict, label: str | None = None):
    """Draws one figure's dots into `fig` (what it showed before removed; resized to dots_size) and
    returns its axes."""
    width, height = dots_size(data, entry)
    fig.set_size_inches(width, height)
    fig.subplots_adjust(left=0.75 / width, right=1 - 0.15 / width, top=1 - DOTS_TOP_H / height,
                        bottom=1 - (DOTS_TOP_H + DOTS_PLOT_H) / height)
    ax = _emptied_axes(fig)
    c = _columns(entry)
    n = len(c["value"])
    x = np.arange(n)
    raster = n > RASTERIZE_ABOVE
    band_x, low, high, centre = _band_columns(c, n)
    ax.fill_between(band_x, low, high, step="post", color="#aed6f1", alpha=0.6, lw=0,
                    label="band each dot was graded against", rasterized=raster)
    ax.plot(band_x, centre, drawstyle="steps-post", color="#5d6d7e", lw=0.8, label="centre", rasterized=raster)
    size = 10 if n > 200 else 22
    handles = {}
    for z, grade in enumerate(("INFO", "PASS", "WARN", "FAIL")):  # the outliers drawn last, on top
        mask = c["grade"] == grade
        count = int(mask.sum())
        if count:
            handles[grade] = ax.scatter(x[mask], c["value"][mask], s=size if grade in ("INFO", "PASS") else 2 * size,
                                        color=GRADE_COLOURS[grade], lw=0, label=f"{grade} ({count})", zorder=3 + z,
                                        rasterized=raster)
    chosen = named_outliers(c)
    nodes = len(set(entry["node"]))
    ax.set_xlim(-0.5 - 0.01 * n, n - 0.5 + 0.01 * n)
    if n <= NAMES_ON_AXIS:  # every dot named under it, the FAIL and WARN ones in their colour
        ax.set_xticks(x)
        ticks = ax.set_xticklabels(dot_names(data, entry, c["node"], c["gpu"]), rotation=90, fontsize=7)
        for tick, grade in zip(ticks, c["grade"]):  # every tick: the Axes and its ticks are reused
            named = grade in ("FAIL", "WARN")
            tick.set_color(GRADE_COLOURS[grade] if named else "black")
            tick.set_fontweight("bold" if named else "normal")
        one = f", each node's {entry['gpu'][0]}" if len(set(entry["gpu"])) == 1 else ""
        ax.set_xlabel(f"the fleet's {n} GPUs ({nodes} nodes{one}), sorted by value")
    else:
        ranks = sorted({1, *(int(t) for t in MaxNLocator(nbins=8, integer=True).tick_values(1, n) if 1 <= t <= n)})
        ranks = [r for r in ranks if r == 1 or r > 0.04 * n]  # 1 and the round ranks, apart
        ax.set_xticks([r - 1 for r in ranks])
        for tick in ax.set_xticklabels([f"{r:,}" for r in ranks], fontsize=8, rotation=0):
            tick.set_color("black")  # the ticks are reused: a name of the figure before was coloured
            tick.set_fontweight("normal")
        ax.set_xlabel(f"rank by value among the fleet's {n:,} GPUs ({nodes:,} nodes): 1 is the lowest")
        ax.autoscale_view()
        _name_beside(ax, data, entry, c, chosen)
    not_named = int(((c["grade"] == "FAIL") | (c["grade"] == "WARN")).sum()) - len(chosen)
    if not_named > 0 and n > NAMES_ON_AXIS:
        ax.text(0.99, 0.02, f"{not_named} more FAIL/WARN dots not named (fleet.txt lists them)", transform=ax.transAxes,
                fontsize=7, ha="right", va="bottom", color="0.3")
    # A FAIL inside its band failed its link's rate (hdbench fleet keeps a worse grade against the
    # peak: peers cannot see what every node shares); the figure says so, or the dot looks wrong.
    below_peak = int(((c["grade"] == "FAIL") & (c["value"] >= c["low"]) & (c["value"] <= c["high"])).sum())
    if below_peak:
        ax.text(0.01, 0.02, f"{below_peak} FAIL inside the band: below the link's rate (fleet.txt says by how much)",
                transform=ax.transAxes, fontsize=7, ha="left", va="bottom", color=GRADE_COLOURS["FAIL"])
    fails, warns = (int((c["grade"] == g).sum()) for g in ("FAIL", "WARN"))
    lo, hi = float(c["value"].min()), float(c["value"].max())
    spread = 100 * (hi / lo - 1) if lo > 0 else float("nan")
    title = label or entry["figure"]
    ax.set_title(f"{entry['family']} {title}: {n:,} GPUs, {fails} FAIL, {warns} WARN; the whole fleet spans {spread:.1f} %",
                 fontsize=10, pad=12 if title != entry["figure"] else 6)
    if title != entry["figure"]:  # the label in full, under the title
        ax.text(0.5, 1.012, entry["figure"], transform=ax.transAxes, ha="center", va="bottom", fontsize=7, color="0.4")
    ax.set_ylabel(entry["unit"])
    legend = [h for h in ax.get_legend_handles_labels()[0] if h not in handles.values()]
    legend += [handles[g] for g in GRADE_COLOURS if g in handles]
    # "best" weighs every dot: at thousands of dots the upper left, empty as the dots rise, is as good
    ax.legend(handles=legend, fontsize=7, loc="best" if n <= RASTERIZE_ABOVE else "upper left")
    return ax


def node_cells(data: dict) -> dict:
    """Every node x figure: the node's worst GPU on the figure, the line with the worst grade and,
    among those, the most tolerances worse. Returns the figures (sorted), their short labels and
    rules, and node x figure arrays: `score` (tolerances worse; NaN none), `percent` (from the
    centre, a fraction), `tolerance` (the line's), `grade` ("" for no line), `gpu`, `others` (the
    node's other lines of the figure that are not PASS: its other GPUs)."""
    figures = sorted(data["figures"], key=lambda e: (e["family"], e["figure"]))
    shape = (len(data["nodes"]["name"]), len(figures))
    cells = {"figures": figures, "labels": short_labels(figures), "rules": [e.get("rules") or [] for e in figures],
             "score": np.full(shape, np.nan), "percent": np.full(shape, np.nan), "tolerance": np.full(shape, np.nan),
             "grade": np.full(shape, "", dtype=object), "gpu": np.full(shape, "", dtype=object),
             "others": np.zeros(shape, dtype=int)}
    for j, entry in enumerate(figures):
        node = np.asarray(entry["node"], dtype=int)
        if not len(node):
            continue
        score = tolerances_worse(entry)
        grade = np.asarray(entry["grade"], dtype=object)
        rank = np.array([GRADE_RANK.get(g, 4) for g in grade])
        order = np.lexsort((-np.nan_to_num(score, nan=-np.inf), rank, node))  # per node: worst grade, most worse
        first = order[np.unique(node[order], return_index=True)[1]]
        rows = node[first]
        value = np.asarray(entry["value"], dtype=float)[first]
        centre = np.asarray(entry["centre"], dtype=float)[first]
        cells["score"][rows, j] = score[first]
        with np.errstate(divide="ignore", invalid="ignore"):
            cells["percent"][rows, j] = np.where(centre > 0, value / centre - 1, np.nan)
        if entry.get("rules") and entry.get("rule") is not None:
            tolerances = np.array([r["tolerance"] if isinstance(r.get("tolerance"), (int, float)) else np.nan
                                   for r in entry["rules"]])
            cells["tolerance"][rows, j] = tolerances[np.asarray(entry["rule"], dtype=int)[first]]
        cells["grade"][rows, j] = grade[first]
        cells["gpu"][rows, j] = np.asarray(entry["gpu"], dtype=object)[first]
        bad = rank <= 1
        np.add.at(cells["others"], (node[bad], j), 1)
        cells["others"][rows, j] -= bad[first]
    return cells


def heatmap_rows(data: dict, cells: dict) -> list[int]:
    """The nodes the heatmap shows, in order: FAIL (those with a FAIL cell first, most tolerances
    worse first; then those failing on a health line or as a whole, in fleet's order), WARN, then
    PASS, each most tolerances worse first; HEATMAP_ROWS at most."""
    grades = data["nodes"]["grade"]
    score = cells["score"]
    has = ~np.isnan(score).all(axis=1) if score.shape[1] else np.zeros(len(grades), dtype=bool)
    worst = np.full(len(grades), -np.inf)
    if has.any():
        worst[has] = np.nanmax(score[has], axis=1)
    fail_cell = (cells["grade"] == "FAIL").any(axis=1) if score.shape[1] else np.zeros(len(grades), dtype=bool)
    rank = np.array([GRADE_RANK.get(g, 4) for g in grades])
    by_worst = np.where(fail_cell | (rank > 0), -worst, 0)  # a FAIL without a FAIL cell: fleet's order
    order = np.lexsort((np.arange(len(grades)), by_worst, ~fail_cell, rank))
    return [int(i) for i in order[:HEATMAP_ROWS]]


def why_text(data: dict, cells: dict, i: int) -> str:
    """A row's words at its right: its worst cell that is not PASS ("FAIL GPU 3 pinned h2d 1 GiB
    −5.2 %, 1.7 × its 3 %"), and its reason where no cell shows why (fleet_plot.json nodes.reason,
    first where it is the worse); for a node with neither, its cell nearest its tolerance ("nearest:
    ...")."""
    reasons = data["nodes"].get("reason") or []  # a fleet_plot.json of an older hdbench has none
    reason = reasons[i] if i < len(reasons) else ""
    grades, score = cells["grade"][i], cells["score"][i]
    ranked = [j for j in np.lexsort((-np.nan_to_num(score, nan=-np.inf), [GRADE_RANK.get(g, 4) for g in grades]))
              if grades[j]]
    bad = [j for j in ranked if grades[j] in ("FAIL", "WARN")]

    def describe(j: int) -> str:
        text = f"{cells['gpu'][i, j]} {cells['labels'][j]} {percent_text(cells['percent'][i, j])}"
        if not np.isnan(score[j]):
            text += f", {score[j]:.1f} × its {100 * cells['tolerance'][i, j]:g} %"
            if grades[j] == "PASS" and score[j] >= 1:
                text += " (inside its band)"
            if grades[j] == "FAIL" and score[j] < 1:
                text += " (inside its band: below the link's rate)"
        return text

    parts = []
    if bad:
        more = len(bad) - 1 + int(cells["others"][i].sum())
        parts.append(f"{grades[bad[0]]} {describe(bad[0])}" + (f" (+{more} more)" if more else ""))
    if reason:
        parts.insert(1 if bad and grades[bad[0]] == "FAIL" else 0, reason)
    if not parts and ranked:
        parts.append(f"nearest: {describe(ranked[0])}")
    return "; ".join(parts)


def left_out_text(data: dict, rows: list[int]) -> str:
    """The nodes the heatmap leaves out, counted by grade: "960 more nodes not shown, all PASS"."""
    grades = data["nodes"]["grade"]
    shown = set(rows)
    left = [grades[i] for i in range(len(grades)) if i not in shown]
    if not left:
        return f"All {len(grades):,} nodes shown."
    counts = {g: left.count(g) for g in GRADE_RANK if g in left}
    what = "all PASS" if set(counts) <= {"PASS"} else ", ".join(f"{v:,} {g}" for g, v in counts.items())
    return f"{len(left):,} more nodes not shown, {what} (fleet.txt lists every node)."


# The heatmap's layout, in inches: row names | cells | colour bar | the rows' words (WHY_CHARS at most)
CELL_W, BAR_W, WHY_W, WHY_CHARS = 0.62, 1.25, 4.6, 92
CELL_H, TOP_H, BOTTOM_H = 0.24, 2.55, 0.8


def row_labels(data: dict, rows: list[int]) -> list[str]:
    return [f"{data['nodes']['name'][i]} {data['nodes']['grade'][i]}" for i in rows]


def heatmap_size(labels: list[str], columns: int) -> tuple[float, float]:
    """Inches, from the row labels shown (their longest sets the names' room) and the columns."""
    names = names_width(labels)
    if not columns:
        return max(DOTS_WIDTH, names + WHY_W + 0.3), 0.7 + CELL_H * len(labels) + BOTTOM_H
    return names + CELL_W * columns + BAR_W + WHY_W, TOP_H + CELL_H * len(labels) + BOTTOM_H


def names_width(labels: list[str]) -> float:
    return 0.3 + NAME_CHAR_W * max((len(t) for t in labels), default=0)


def _tolerances_text(rules: list[dict]) -> str:
    return " / ".join(dict.fromkeys(tolerance_text(r) for r in rules)) if rules else "no tolerance"


def _clipped(text: str, chars: int) -> str:
    return text if len(text) <= chars else text[:chars - 1] + "…"


def _row_names(ax, data: dict, rows: list[int], labels: list[str]) -> None:
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_yticks(range(len(rows)))
    for tick, i in zip(ax.set_yticklabels(labels, fontsize=7), rows):
        tick.set_color(GRADE_COLOURS.get(data["nodes"]["grade"][i], "black"))
    ax.tick_params(axis="y", length=0)


def draw_heatmap(data: dict):
    """The heatmap as a new Figure, or None for a fleet of no nodes."""
    names, grades = data["nodes"]["name"], data["nodes"]["grade"]
    if not names:
        return None
    cells = node_cells(data)
    rows = heatmap_rows(data, cells)
    labels = row_labels(data, rows)
    if not (cells["grade"] != "").any():
        return draw_ungraded_heatmap(data, cells, rows, labels)
    score = cells["score"][rows]
    columns = score.shape[1]
    width, height = heatmap_size(labels, columns)
    left = width - WHY_W - BAR_W - CELL_W * columns
    fig = plt.figure(figsize=(width, height))
    ax = fig.add_axes((left / width, BOTTOM_H / height, CELL_W * columns / width, CELL_H * len(rows) / height))
    fails, warns = grades.count("FAIL"), grades.count("WARN")
    failing = ", ".join(names[i] for i in rows if grades[i] == "FAIL")
    fig.suptitle(f"{fails} of {len(names):,} nodes FAIL, {warns} WARN" +
                 (f": {failing}" if fails and len(failing) < 150 else ""), fontsize=11, y=1 - 0.12 / height, va="top")
    fig.text(0.5, 1 - 0.42 / height, "Each cell: the node's worst GPU on that figure, how much worse than its band's centre, "
             "in the figure's tolerances (in brackets): a FAIL is 1 or more", ha="center", va="top", fontsize=8.5,
             color="0.2")
    colours = ScalarMappable(Normalize(vmin=-SCORE_LIMIT, vmax=SCORE_LIMIT), plt.get_cmap("RdBu_r"))
    rgba = colours.to_rgba(np.clip(np.nan_to_num(score), -SCORE_LIMIT, SCORE_LIMIT), bytes=True)
    rgba[np.isnan(score)] = [int(NO_CELL[k:k + 2], 16) for k in (1, 3, 5)] + [255]
    ax.imshow(rgba, aspect="auto", interpolation="nearest", extent=(-0.5, columns - 0.5, len(rows) - 0.5, -0.5))
    _row_names(ax, data, rows, labels)
    # every cell that is not PASS framed in its grade's colour, with its value (its % from the
    # centre where no tolerance weighs it) and, in a fleet of several GPUs per node, the GPU that set it
    several = any(len(set(e["gpu"])) > 1 for e in cells["figures"])
    frames, edges = [], []
    for r, i in enumerate(rows):
        for j in range(columns):
            grade = cells["grade"][i, j]
            if grade not in ("FAIL", "WARN"):
                continue
            frames.append(Rectangle((j - 0.45, r - 0.42), 0.9, 0.84))
            edges.append(GRADE_COLOURS[grade])
            weighed = not np.isnan(score[r, j])
            text = f"{score[r, j]:.1f}" if weighed else f"{100 * cells['percent'][i, j]:+.0f} %".replace("-", "−")
            if several:
                text += " " + cells["gpu"][i, j].replace("GPU ", "g")
            ax.text(j, r, text, ha="center", va="center", fontsize=6.5,
                    color="white" if weighed and abs(score[r, j]) > 1.3 else "black", gid=f"cell {r} {j}")
    if frames:
        ax.add_collection(PatchCollection(frames, facecolor="none", edgecolor=edges, linewidth=1.5))
    families = [e["family"] for e in cells["figures"]]
    for j in range(1, columns):  # the families apart
        if families[j] != families[j - 1]:
            ax.axvline(j - 0.5, color="white", lw=3)
    ax.xaxis.tick_top()
    ax.set_xticks(range(columns))
    ax.set_xticklabels([f"{f}: {label} ({_tolerances_text(r)})" for f, label, r in zip(families, cells["labels"], cells["rules"])],
                       rotation=35, ha="left", rotation_mode="anchor", fontsize=7)
    ax.tick_params(axis="x", length=0, pad=4)
    bar = fig.add_axes(((left + CELL_W * columns + 0.12) / width, BOTTOM_H / height, 0.15 / width,
                        CELL_H * len(rows) / height))
    cb = fig.colorbar(colours, cax=bar, extend="both")
    cb.set_ticks([-2, -1, 0, 1, 2])
    cb.ax.set_yticklabels(["−2 better", "−1", "0 centre", "1 tolerance", "2 worse"], fontsize=6.5)
    # Short: a label longer than a few rows' bar runs off the figure and across the column names.
    cb.set_label("tolerances worse", fontsize=7)
    words = matplotlib.transforms.blended_transform_factory(fig.transFigure, ax.transData)
    for r, i in enumerate(rows):
        ax.text((width - WHY_W + 0.05) / width, r, _clipped(why_text(data, cells, i), WHY_CHARS), transform=words,
                fontsize=6.5, va="center", ha="left",
                color={"FAIL": GRADE_COLOURS["FAIL"], "WARN": "#a04000"}.get(grades[i], "0.4"), clip_on=False,
                gid=f"why {r}")
    notes = [left_out_text(data, rows)]
    if several:
        notes.append("A framed cell is not PASS (FAIL red, WARN orange): its tolerances and the GPU that set it "
                     "(g3: GPU 3); the dot plots show every GPU.")
    if ((cells["grade"][rows] == "PASS") & (score >= 1)).any():
        notes.append("A PASS cell at 1 or more is inside its band: the fleet's spread on that figure is wider than "
                     "its tolerance.")
    if ((cells["grade"][rows] == "FAIL") & (score < 1)).any():
        notes.append("A FAIL cell under 1 is inside its band: it FAILs against its link's rate, which its peers "
                     "cannot see when they share the fault (fleet.txt says by how much).")
    if (np.isnan(score) & (cells["grade"][rows] != "")).any():
        notes.append("Grey: not measured, or no tolerance and direction to weigh it (its % from the centre is written "
                     "in a framed cell).")
    for k, note in enumerate(notes):
        fig.text(0.01, (BOTTOM_H - 0.25 - 0.17 * k) / height, note, fontsize=8 if k == 0 else 7,
                 color="black" if k == 0 else "0.3", va="top", gid="left out" if k == 0 else "note")
    return fig


def draw_ungraded_heatmap(data: dict, cells: dict, rows: list[int], labels: list[str]):
    """The heatmap of a fleet with no graded figure (no node finished its check): nothing to colour,
    so each node is a row, named with its grade, with its reason across it."""
    names, grades = data["nodes"]["name"], data["nodes"]["grade"]
    width, height = heatmap_size(labels, 0)
    left = names_width(labels)
    fig = plt.figure(figsize=(width, height))
    ax = fig.add_axes((left / width, BOTTOM_H / height, (width - left - 0.2) / width, CELL_H * len(rows) / height))
    ax.set_xlim(0, 1)
    ax.set_xticks([])
    _row_names(ax, data, rows, labels)
    fig.suptitle(f"{len(names)} nodes, none with a graded figure to colour: {grades.count('FAIL')} node(s) FAIL, "
                 f"each row says why", fontsize=10, y=1 - 0.12 / height, va="top")
    for r, i in enumerate(rows):
        ax.text(0.01, r, _clipped(why_text(data, cells, i), WHY_CHARS), fontsize=7, color="0.15", va="center",
                ha="left", clip_on=True, gid=f"why {r}")
    fig.text(0.01, (BOTTOM_H - 0.25) / height, left_out_text(data, rows), fontsize=8, va="top", gid="left out")
    return fig


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
        _JOB["fig"] = plt.figure()
    entry = data["figures"][task]
    draw_dots(_JOB["fig"], data, entry, _JOB["labels"][task])
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
    tasks = [-1] + list(range(len(data["figures"])))  # the heatmap first
    points = sum(len(e["value"]) for e in data["figures"])
    if jobs is None:
        jobs = min(2, _cpus()) if points > 5000 else 1
    _JOB.clear()
    _JOB.update(data=data, out=out, formats=formats, dpi=dpi, labels=short_labels(data["figures"]))
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
