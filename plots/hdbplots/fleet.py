"""The fleet figures: `hdbench fleet` writes fleet.json (docs/fleet.md), this draws it.

- one figure per graded figure (family + label): every node's value on every GPU as a dot, sorted,
  with the band each was graded against (its peers' or the set's), the dots coloured by grade and
  the outliers (WARN and FAIL) labelled by hostname and GPU;
- one heatmap, nodes x figures (each GPU its own column), in % from the centre the figure was
  graded against, clipped at +-10 % so a 5 % fault stands out.

Only fleet.json is read; nothing is re-graded here.
"""
from __future__ import annotations

import json
import math
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

GRADE_COLOURS = {"FAIL": "#c0392b", "WARN": "#e67e22", "PASS": "#2e86c1", "INFO": "#95a5a6"}
MAX_LABELS = 12  # outliers labelled per figure: more would cover the dots
MAX_ROW_LABELS = 60  # heatmap rows named when the fleet is small; else only the nodes that FAIL or WARN


def load(path: str | Path) -> dict:
    with open(path) as f:
        return json.load(f)


def _gpu(line: dict) -> str:
    return "node" if not line["gpus"] else "GPU " + ",".join(str(g) for g in line["gpus"])


def graded_figures(fleet: dict) -> dict[tuple[str, str], list[tuple[dict, dict]]]:
    """(family, figure) -> [(node, line)] for every figure line with a value and a band."""
    figures: dict[tuple[str, str], list[tuple[dict, dict]]] = {}
    for node in fleet["nodes"]:
        for line in node["lines"]:
            if line.get("is_figure") and line["value"] is not None and line["low"] is not None:
                figures.setdefault((line["family"], line["figure"]), []).append((node, line))
    return figures


def file_stem(family: str, figure: str) -> str:
    return "fleet_" + re.sub(r"[^a-z0-9]+", "_", f"{family} {figure}".lower()).strip("_")[:80]


def draw_dots(family: str, figure: str, entries: list[tuple[dict, dict]], out: Path, formats: list[str], dpi: int) -> list[Path]:
    entries = sorted(entries, key=lambda e: e[1]["value"])
    x = list(range(len(entries)))
    values = [line["value"] for _, line in entries]
    fig, ax = plt.subplots(figsize=(9, 4.2))
    ax.fill_between(x, [l["low"] for _, l in entries], [l["high"] for _, l in entries], step="mid",
                    color="#aed6f1", alpha=0.6, label="band each dot was graded against")
    ax.plot(x, [l["centre"] for _, l in entries], color="#5d6d7e", lw=0.8, label="centre")
    for grade, colour in GRADE_COLOURS.items():
        pts = [(i, v) for i, ((_, l), v) in enumerate(zip(entries, values)) if l["grade"] == grade]
        if pts:
            ax.scatter([p[0] for p in pts], [p[1] for p in pts], s=10 if len(entries) > 200 else 22, color=colour,
                       label=f"{grade} ({len(pts)})", zorder=3)
    outliers = [(i, node, line) for i, (node, line) in enumerate(entries) if line["grade"] in ("FAIL", "WARN")]
    outliers.sort(key=lambda o: (o[2]["grade"] != "FAIL", -abs(o[2]["from_centre"] or 0)))
    for i, node, line in outliers[:MAX_LABELS]:
        ax.annotate(f"{node['hostname']} {_gpu(line)}", (i, line["value"]), xytext=(4, 6), textcoords="offset points",
                    fontsize=7, color=GRADE_COLOURS[line["grade"]])
    unit = entries[0][1]["unit"]
    fails = sum(1 for _, l in entries if l["grade"] == "FAIL")
    lo, hi = min(values), max(values)
    spread = 100 * (hi / lo - 1) if lo > 0 else float("nan")
    ax.set_title(f"{family} {figure}: {len(entries)} GPUs, {fails} FAIL; the whole fleet spans {spread:.1f} %",
                 fontsize=10, wrap=True)
    ax.set_xlabel("node and GPU, sorted by value")
    ax.set_ylabel(unit)
    ax.legend(fontsize=7, loc="best")
    return _save(fig, out / file_stem(family, figure), formats, dpi)


def _save(fig, stem: Path, formats: list[str], dpi: int) -> list[Path]:
    """Writes the figure once per format beside `stem` and closes it."""
    fig.tight_layout()
    written = []
    for fmt in formats:
        path = stem.with_name(f"{stem.name}.{fmt}")
        fig.savefig(path, dpi=dpi)
        written.append(path)
    plt.close(fig)
    return written


def draw_heatmap(fleet: dict, out: Path, formats: list[str], dpi: int) -> list[Path]:
    columns: list[tuple[str, str, str]] = []
    seen = set()
    for node in fleet["nodes"]:
        for line in node["lines"]:
            key = (line["family"], line["figure"], _gpu(line))
            if line.get("is_figure") and line["from_centre"] is not None and key not in seen:
                seen.add(key)
                columns.append(key)
    if not columns:
        return []
    columns.sort()
    index = {c: j for j, c in enumerate(columns)}
    nodes = fleet["nodes"]
    grid = [[math.nan] * len(columns) for _ in nodes]
    for i, node in enumerate(nodes):
        for line in node["lines"]:
            key = (line["family"], line["figure"], _gpu(line))
            if key in index and line["from_centre"] is not None:
                grid[i][index[key]] = 100 * line["from_centre"]
    height = min(40.0, 2.5 + 0.16 * len(nodes))
    fig, ax = plt.subplots(figsize=(min(40.0, 4 + 0.28 * len(columns)), height))
    image = ax.imshow(grid, aspect="auto", cmap="RdBu", vmin=-10, vmax=10, interpolation="nearest")
    fig.colorbar(image, ax=ax, label="% from centre (clipped at 10)")
    ax.set_xticks(range(len(columns)))
    ax.set_xticklabels([f"{f} {l} {g}"[:60] for f, l, g in columns], rotation=90, fontsize=6)
    named = [(i, n) for i, n in enumerate(nodes) if len(nodes) <= MAX_ROW_LABELS or n["grade"] in ("FAIL", "WARN")]
    ax.set_yticks([i for i, _ in named][:MAX_ROW_LABELS * 2])
    ax.set_yticklabels([f"{n['name']} {n['grade']}" for _, n in named][:MAX_ROW_LABELS * 2], fontsize=6)
    fails = sum(1 for n in nodes if n["fail"] > 0)
    ax.set_title(f"{len(nodes)} nodes x {len(columns)} figures, % from the centre each was graded against: "
                 f"{fails} node(s) FAIL (worst first)", fontsize=10)
    return _save(fig, out / "fleet_heatmap", formats, dpi)


def draw(fleet: dict, out: Path, formats: list[str], dpi: int) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for (family, figure), entries in sorted(graded_figures(fleet).items()):
        written += draw_dots(family, figure, entries, out, formats, dpi)
    written += draw_heatmap(fleet, out, formats, dpi)
    return written
