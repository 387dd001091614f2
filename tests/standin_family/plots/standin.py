"""Figures of the `standin` family (tests/standin_family): the plot module of a family that lives
outside plots/, found through HDBENCH_PLOT_MODULES, as docs/adding-a-family.md describes.

Figures (FIGURES at the end says when each is drawn):
  standin_triad   host triad bandwidth vs size, one line per access pattern and lane count; the
                  title gives each access pattern's best median at the largest size
"""
from __future__ import annotations

from matplotlib.figure import Figure as MplFigure

from hdbplots.claims import cite, claim
from hdbplots.drawing import axes_handles, figure_legend, finish, new_figure, plot_band, size_axis
from hdbplots.figures import Figure, Need, Scope
from hdbplots.results_csv import Row
from hdbplots.selection import ordered, select

LINE_STYLES = {"linear": "-", "strided": "--"}
LANE_COLORS = {4: "#0072B2", 8: "#D55E00"}


def triad_figure(scope: Scope) -> MplFigure | None:
    rows = [r for r in scope.rows if r.case == "triad"]
    if not any(r.metric == "triad_bandwidth" and r.statistic == "median" for r in rows):
        return None
    fig, (ax,) = new_figure()
    for access in ordered((r.get("access") for r in rows), list(LINE_STYLES)):
        for lanes in ordered((r.get("lanes") for r in rows), list(LANE_COLORS)):
            curve = select(rows, access=access, lanes=lanes)
            plot_band(ax, curve, "triad_bandwidth", color=LANE_COLORS.get(lanes, "0.3"),
                      linestyle=LINE_STYLES.get(access, ":"), marker="o", label=f"{access}, {lanes} lanes")
    size_axis(ax, [r["size_bytes"] for r in rows], label="output array (bytes)")
    ax.set_ylabel("triad bandwidth (GB/s, output bytes)")
    ax.set_ylim(bottom=0)
    handles, labels = axes_handles([ax])
    legend = figure_legend(fig, handles, labels)
    text, claims = triad_lesson(rows)
    return finish(fig, text, scope.subtitle, legend, claims)


def triad_lesson(rows: list[Row]) -> tuple[str, list[dict]]:
    """Each access pattern's fastest median at the largest size, as the title states them."""
    medians = [r for r in rows if r.metric == "triad_bandwidth" and r.statistic == "median" and r.value is not None]
    largest = max(r["size_bytes"] for r in medians)
    parts, claims = [], []
    for access in ordered((r.get("access") for r in medians), list(LINE_STYLES)):
        at_largest = [r for r in medians if r.get("access") == access and r["size_bytes"] == largest]
        if not at_largest:
            continue
        best = max(at_largest, key=lambda r: r.value)
        number = f"{best.value:.3g}"
        parts.append(f"{access} {number} GB/s ({best.get('lanes')} lanes)")
        claims.append(claim(number, best.value, [cite(best)]))
    return f"The stand-in triad over host memory at {array_size(largest)} per array: " + ", ".join(parts), claims


def array_size(size: int) -> str:
    """4194304 -> "4 MiB", 65536 -> "64 KiB", 1000 -> "1000 B"."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size} B"

FIGURES = [
    Figure("standin_triad", needs=[Need("triad", "triad_bandwidth")], draw=triad_figure),
]
