"""The house look of every figure: colours and line styles, the byte-size axis, reference lines,
median-and-band curves, a pyplot-free figure, the legend below the axes, and the title band."""
from __future__ import annotations

import math
import textwrap
from typing import Any, Callable, Iterable, Mapping, Sequence

from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure as MplFigure
from matplotlib.legend import Legend
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

from .formatting import SUBTITLE_SEPARATOR, format_bytes
from .results_csv import Row
from .selection import by_size


# Colours (Okabe-Ito, colour-blind safe): one per host memory kind, the same in every figure.
HOST_KIND_COLORS = {
    "pinned": "#0072B2", "pageable": "#E69F00", "mapped": "#009E73",
    "registered": "#CC79A7", "write_combined": "#56B4E9", "device": "#D55E00",
}
FALLBACK_COLORS = ("#000000", "#999999", "#F0E442", "#882255")
# Line style and marker per API: solid = async, dashed = sync, dash-dot = SM kernel.
API_STYLES = {"async": ("-", "o"), "sync": ("--", "s"), "kernel": ("-.", "^")}
REFERENCE_LINE = {"color": "0.35", "linestyle": (0, (1, 2)), "linewidth": 1.6}


def host_color(host_kind: str | None) -> str:
    """The house colour of a host memory kind; unknown kinds get a stable fallback."""
    host_kind = host_kind or ""
    if host_kind in HOST_KIND_COLORS:
        return HOST_KIND_COLORS[host_kind]
    return FALLBACK_COLORS[sum(map(ord, host_kind)) % len(FALLBACK_COLORS)]


def api_style(api: str | None) -> tuple[str | tuple, str]:
    """(linestyle, marker) of an API; unknown APIs are dotted with diamonds."""
    return API_STYLES.get(api, (":", "D"))


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


def subtitle_lines(fig: MplFigure, subtitle: str, size: float) -> list[str]:
    """The run identity on as few lines as fit the figure's width, broken between its parts: a
    narrow figure of a verdict run would otherwise cut it off at both edges."""
    renderer = fig.canvas.get_renderer()

    def fits(line: str) -> bool:
        probe = fig.text(0, 0, line, fontsize=size)
        width = probe.get_window_extent(renderer).width
        probe.remove()
        return width <= 0.98 * fig.bbox.width

    lines: list[str] = []
    for part in subtitle.split(SUBTITLE_SEPARATOR):
        if lines and fits(lines[-1] + SUBTITLE_SEPARATOR + part):
            lines[-1] += SUBTITLE_SEPARATOR + part
        else:
            lines.append(part)
    return lines


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
    identity_size = 8.5  # pt
    identity = subtitle_lines(fig, subtitle, identity_size)
    band = 0.16 + 0.25 * len(lines) + 0.26 + 0.14 * (len(identity) - 1)
    fig.text(0.5, 1 - 0.1 / height, "\n".join(lines), ha="center", va="top",
             fontsize=size, fontweight="bold")
    fig.text(0.5, 1 - (0.12 + 0.25 * len(lines)) / height, "\n".join(identity), ha="center", va="top",
             fontsize=identity_size, color="0.35")
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


def texts_outside(fig: MplFigure) -> list[str]:
    """The figure's own texts (the title, the run identity, notes) that run past its edges as
    drawn: what a reader of the PNG would see cut off."""
    renderer = fig.canvas.get_renderer()
    box = fig.bbox
    outside = []
    for text in fig.texts:
        if not text.get_visible() or not text.get_text().strip():
            continue
        extent = text.get_window_extent(renderer)
        if extent.x0 < box.x0 - 1 or extent.x1 > box.x1 + 1 or extent.y0 < box.y0 - 1 or extent.y1 > box.y1 + 1:
            outside.append(text.get_text())
    return outside
