"""Figures of the `standin` family (tests/standin_family): the plot module of a family that lives
outside plots/, found through HDBENCH_PLOT_MODULES, as docs/adding-a-family.md describes.

Figures (FIGURES at the end says when each is drawn):
  standin_triad   fake triad bandwidth vs size, one line per access pattern and lane count
"""
from __future__ import annotations

from matplotlib.figure import Figure as MplFigure

from hdbplots.common import (Figure, Need, Scope, axes_handles, figure_legend, finish, new_figure,
                             ordered, plot_band, select, size_axis)

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
    return finish(fig, "The stand-in triad: linear access with 8 lanes is the fastest at every size",
                  scope.subtitle, legend)


FIGURES = [
    Figure("standin_triad", needs=[Need("triad", "triad_bandwidth")], draw=triad_figure),
]
