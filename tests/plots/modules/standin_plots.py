"""Plot module of the smoke test's stand-in family (tests/plots/smoke_test.py `discovery`).

It lives outside plots/hdbplots and is found through HDBENCH_PLOT_MODULES, as a family kept in
tests/ would bring its own: it imports hdbplots.figures and hdbplots.drawing by their full names
and declares FIGURES.
"""
from __future__ import annotations

import sys

from hdbplots.drawing import finish, new_figure
from hdbplots.figures import Figure, Need, Scope


def probe_figure(scope: Scope):
    rows = [r for r in scope.rows if r.metric == "speed" and r.statistic == "median"]
    kinds = ", ".join(f"{name} {type(rows[0][name]).__name__}" for name in ("knob", "label"))
    print(f"standin_plots: {kinds}", file=sys.stderr)  # the smoke test reads the column types here
    fig, (ax,) = new_figure()
    points = sorted((r["knob"], r.value) for r in rows)
    ax.plot([k for k, _ in points], [v for _, v in points], marker="o")
    ax.set_xlabel("knob")
    ax.set_ylabel("speed (GB/s)")
    return finish(fig, f"The stand-in's speed grows with the knob: {points[-1][1]:g} GB/s at {points[-1][0]}",
                  scope.subtitle)


FIGURES = [Figure("standin_probe", needs=[Need("probe", "speed")], draw=probe_figure)]
