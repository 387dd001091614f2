"""Figures of the `overlap` family: when streams overlap copies with kernels, and what it is worth.

Figures (FIGURES at the end says when each is drawn; one set per GPU when a run measured several):
  overlap_timeline          Gantt chart of one pass: 1 vs 4 streams × pinned vs pageable, one lane
                            per resource (H2D link, SMs, D2H link; hatched where streams share
                            it), the ideal bound marked
  overlap_speedup           speedup over one stream vs stream count, per regime, with the ideal bound
  overlap_efficiency        overlap efficiency over streams × chunks (heatmap), per regime
  overlap_movement_tax      one kernel call with and without the data movement around it
  overlap_stream_semantics  the same two-stream pipeline under four stream semantics, and a CUDA graph

How the family writes timelines into results.csv (docs/methodology.md): case `timeline`, one case per
chunk (parameters chunk, chunks, regime, host_kind, streams), metrics h2d_start … d2h_end in µs
after the pass's origin event; repetition r of every chunk case is pass r. Chunk i ran on stream
i mod streams.
"""
from __future__ import annotations

import math
from typing import Iterable, Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure as MplFigure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from .drawing import figure_legend, finish, host_color, new_figure
from .claims import cite, claim
from .figures import Figure, Need, Scope
from .formatting import format_bytes, format_number, format_time_us
from .results_csv import Row
from .selection import group, ordered

REGIMES = ("balanced", "compute_heavy", "copy_heavy")
REGIME_NAMES = {"balanced": "balanced (kernel ≈ copy)", "compute_heavy": "compute-heavy (kernel ≈ 4× copy)",
                "copy_heavy": "copy-heavy (kernel ≈ ¼ copy)"}
STAGES = (("h2d", "H2D copy", "#0072B2"), ("kernel", "kernel", "#E69F00"), ("d2h", "D2H copy", "#009E73"))
SEMANTICS = ("nonblocking", "per_thread_default", "legacy_default", "host_sync")
SEMANTICS_NAMES = {"nonblocking": "non-blocking streams", "per_thread_default": "kernel on per-thread\ndefault stream",
                   "legacy_default": "kernel on legacy\ndefault stream", "host_sync": "host sync\nafter each chunk",
                   "graph": "CUDA graph\n(4 streams)", "graph_streams": "stream launches\n(4 streams)"}
TAX_VARIANTS = ("resident", "device_generated", "round_trip", "host_generated")
TAX_NAMES = {"resident": "kernel alone\n(data resident)", "device_generated": "input generated\non the device",
             "round_trip": "H2D + kernel\n+ D2H", "host_generated": "input from a CPU\nloop + H2D"}
TAX_COLORS = {"resident": "#E69F00", "device_generated": "#D55E00", "round_trip": "#0072B2",
              "host_generated": "#56B4E9"}
IDEAL_STYLE = {"color": "#CC0000", "linestyle": (0, (4, 2)), "linewidth": 1.6}
LANE_NAMES = ("H2D: the one\nhost→GPU link", "kernels: the SMs", "D2H: the one\nGPU→host link")
TIMELINE_METRICS = tuple(f"{stage}_{edge}" for stage, _, _ in STAGES for edge in ("start", "end"))
# format_time_us's units, as multiples of the µs a row holds: a claim divides by them.
TIME_SCALES = {"µs": 1, "ms": 1e3, "s": 1e6}


# ---------------------------------------------------------------- reading rows

def median_of(rows: Iterable[Row], metric: str) -> float | None:
    row = median_row(rows, metric)
    return row.value if row else None


def median_row(rows: Iterable[Row], metric: str) -> Row | None:
    for r in rows:
        if r.metric == metric and r.statistic == "median":
            return r
    return None


def time_claim(value_row: Row) -> tuple[str, dict]:
    """A duration as a title shows it (format_time_us) and the claim of its number."""
    shown = format_time_us(value_row.value)
    number, unit = shown.split()
    extra = {"sample_index": value_row.sample_index} if value_row.statistic == "sample" else {}
    return shown, claim(number, value_row.value / TIME_SCALES[unit], [cite(value_row, **extra)],
                        f"a/{TIME_SCALES[unit]:g}")


def ratio_claim(text: str, value: float, numerator: Row, denominator: Row) -> dict:
    """The claim of a title's ratio of two rows (each a sample row with its index, or a median)."""
    rows = [cite(r, **({"sample_index": r.sample_index} if r.statistic == "sample" else {})) for r in (numerator, denominator)]
    return claim(text, value, rows, "a/b")


def stat_of(rows: Iterable[Row], metric: str, statistic: str) -> float | None:
    for r in rows:
        if r.metric == metric and r.statistic == statistic:
            return r.value
    return None


def sweep(rows: Sequence[Row], metric: str) -> dict[tuple[str, str, int, int], list[Row]]:
    """(regime, host kind, streams, chunks) → rows of the stream sweep that carry `metric`."""
    groups = group((r for r in rows if r.case == "pipeline" and r.get("api") == "nonblocking"),
                   lambda r: (r.get("regime"), r.get("host_kind"), r.get("streams") or 0, r.get("chunks") or 0))
    return {k: v for k, v in groups.items() if median_of(v, metric) is not None}


def best_over_chunks(rows: Sequence[Row], metric: str) -> dict[tuple[str, str, int], tuple[int, list[Row]]]:
    """(regime, host kind, streams) → (chunks, rows) of the chunk count with the best median."""
    best: dict[tuple[str, str, int], tuple[int, list[Row]]] = {}
    for (regime, host, streams, chunks), config in sweep(rows, metric).items():
        key = (regime, host, streams)
        if key not in best or median_of(config, metric) > median_of(best[key][1], metric):
            best[key] = (chunks, config)
    return best


# ---------------------------------------------------------------- timeline (Gantt)

def timeline_configs(rows: Sequence[Row]) -> dict[tuple[str, int], dict[int, list[Row]]]:
    """(host kind, streams) → chunk index → that chunk case's rows."""
    configs: dict[tuple[str, int], dict[int, list[Row]]] = {}
    for r in rows:
        chunk = r.get("chunk")
        if r.case == "timeline" and chunk is not None and r.get("streams"):
            configs.setdefault((r.get("host_kind"), r.get("streams")), {}).setdefault(chunk, []).append(r)
    return configs


def samples(rows: Sequence[Row], metric: str) -> list[float]:
    """A metric's sample values in repetition order (by sample_index)."""
    found = [r for r in rows if r.metric == metric and r.statistic == "sample"]
    return [r.value for r in sorted(found, key=lambda r: r.sample_index if r.sample_index is not None else -1)]


def one_pass(chunks: dict[int, list[Row]]) -> tuple[dict[int, dict[str, float]], Row | None, str]:
    """Every chunk's six times from one real pass — the repetition with the median pass time —
    plus the row of that pass time and a note. Without sample rows, each time's median (medians
    keep each chunk's order: H2D end ≤ kernel start … holds in every repetition, so in the medians)."""
    first = chunks[min(chunks)]
    totals = sorted((r for r in first if r.metric == "pipeline_time" and r.statistic == "sample"),
                    key=lambda r: r.sample_index if r.sample_index is not None else -1)
    metrics = TIMELINE_METRICS
    complete = totals and all(len(samples(c, m)) == len(totals) for c in chunks.values() for m in metrics)
    if complete:
        pick = sorted(range(len(totals)), key=lambda i: totals[i].value)[(len(totals) - 1) // 2]
        times = {i: {m: samples(c, m)[pick] for m in metrics} for i, c in chunks.items()}
        return times, totals[pick], f"pass {pick + 1} of {len(totals)}, the median"
    times = {i: {m: median_of(c, m) or 0.0 for m in metrics} for i, c in chunks.items()}
    return times, median_row(first, "pipeline_time"), "medians of every time"


def timeline_figure(scope: Scope) -> MplFigure | None:
    """1 vs 4 streams (columns) × pinned vs pageable (rows): one lane per resource (H2D link, SMs, D2H link)."""
    rows = scope.rows
    configs = timeline_configs(rows)
    hosts = ordered((h for h, _ in configs), ("pinned", "pageable"))
    stream_counts = sorted({s for _, s in configs})
    fig = MplFigure(figsize=(13.5, 2.2 + 2.1 * len(hosts)))
    FigureCanvasAgg(fig)
    axes = fig.subplots(len(hosts), len(stream_counts), squeeze=False)
    summary: dict[tuple[str, int], tuple[Row, Row | None]] = {}
    for row_index, host in enumerate(hosts):
        longest = 0.0
        for col, streams in enumerate(stream_counts):
            ax = axes[row_index][col]
            chunks = configs.get((host, streams))
            if not chunks:
                ax.set_visible(False)
                continue
            total, ideal = draw_gantt(ax, host, streams, chunks)
            if total is not None:
                summary[(host, streams)] = (total, ideal)
            longest = max(longest, total.value if total else 0.0, ideal.value if ideal else 0.0)
        for col in range(len(stream_counts)):  # one time scale per memory kind: columns compare directly
            axes[row_index][col].set_xlim(0, longest * 1.04 / 1e3)
    handles = [Patch(color=color, label=label) for _, label, color in STAGES]
    handles.append(Patch(facecolor="0.6", hatch="////", edgecolor="white",
                         label="several streams in flight at once, sharing the lane"))
    handles.append(Line2D([], [], label="ideal bound (measured link and kernel rates)", **IDEAL_STYLE))
    legend = figure_legend(fig, handles, [h.get_label() for h in handles], max_cols=4,
                           title="one lane per resource, not per stream (streams queue on one link); "
                                 "each row of panels (one memory kind) has its own time axis")
    text, claims = timeline_lesson(summary, len(next(iter(configs.values()))) if configs else 0)
    return finish(fig, text, scope.subtitle, legend, claims)


def busy_segments(spans: Sequence[tuple[float, float]]) -> list[tuple[float, float, int]]:
    """The spans' union cut where the number in flight changes: (start, end, how many in flight)."""
    edges = sorted({t for span in spans for t in span})
    segments: list[tuple[float, float, int]] = []
    for start, end in zip(edges, edges[1:]):
        count = sum(1 for a, b in spans if a <= start and b >= end)
        if count:
            if segments and segments[-1][2] == count and segments[-1][1] == start:
                segments[-1] = (segments[-1][0], end, count)
            else:
                segments.append((start, end, count))
    return segments


def draw_gantt(ax: Axes, host: str, streams: int, chunks: dict[int, list[Row]]) -> tuple[Row | None, Row | None]:
    """One lane per resource, not per stream: H2D copies of every stream share one host→GPU link,
    kernels the SMs, D2H copies one GPU→host link. Where several streams' spans are in flight on one
    lane at once they share it (hatched, with the count): more streams do not add links."""
    times, total_row, note = one_pass(chunks)
    total = total_row.value if total_row else 0.0
    count = len(chunks)
    for lane, (stage, _, color) in enumerate(STAGES):
        spans = [(t[f"{stage}_start"] / 1e3, max(t[f"{stage}_end"], t[f"{stage}_start"] + 0.1) / 1e3)
                 for t in times.values()]
        if streams == 1:  # one stream: the chunks in turn, each its own bar
            ax.broken_barh([(a, b - a) for a, b in spans], (lane - 0.38, 0.76), facecolors=color,
                           edgecolors="white", linewidth=0.3)
            continue
        for start, end, flying in busy_segments(spans):
            shared = flying > 1
            ax.broken_barh([(start, end - start)], (lane - 0.38, 0.76), facecolors=color,
                           alpha=0.55 if shared else 1.0, hatch="////" if shared else None,
                           edgecolors="white", linewidth=0.0)
        most = max((f for _, _, f in busy_segments(spans)), default=1)
        if most > 1:
            ax.annotate(f"up to {most} in flight", xy=(1.0, lane), xycoords=("axes fraction", "data"),
                        xytext=(-3, 0), textcoords="offset points", ha="right", va="center", fontsize=7.5,
                        color="0.25")
    ideal_row = median_row(chunks[min(chunks)], "ideal_time")
    ideal = ideal_row.value if ideal_row else None
    if ideal:
        ax.axvline(ideal / 1e3, **IDEAL_STYLE)
        ax.annotate(f"ideal {format_time_us(ideal)}", xy=(ideal / 1e3, -0.5), xytext=(3, -2),
                    textcoords="offset points", fontsize=8, color=IDEAL_STYLE["color"], va="top",
                    bbox={"facecolor": "white", "edgecolor": "none", "pad": 0.5})
    ax.axvline(total / 1e3, color="0.2", linewidth=1.0)
    ax.set_yticks(range(len(STAGES)))
    ax.set_yticklabels(LANE_NAMES)
    ax.set_ylim(len(STAGES) - 0.5, -0.5)
    ax.set_xlabel("time since the pass's origin event (ms; this row's own axis)")
    size = next((r.get("size_bytes") for rows in chunks.values() for r in rows if r.get("size_bytes")), None)
    what = f"{host}, {streams} stream{'s' if streams > 1 else ''}, {count} chunks"
    if size:
        what += f" of {format_bytes(size / count)}"
    ax.set_title(f"{what}: {format_time_us(total)}  ({note})", loc="left", fontsize=9.5)
    ax.grid(True, axis="x", color="0.88")
    return total_row, ideal_row


def timeline_lesson(summary: dict[tuple[str, int], tuple[Row, Row | None]], chunks: int) -> tuple[str, list[dict]]:
    """This run's passes (the drawn ones, a sample each) and their claims: pinned on 4 streams
    against 1, and pageable on 1 and on 4, each compared with its own one-stream pass."""
    one, four = summary.get(("pinned", 1)), summary.get(("pinned", 4))
    if not (one and four):
        return "One lane per resource: overlap shows as H2D, kernel and D2H bars at the same time", []
    claims = []

    def shown(row: Row) -> str:
        text, made = time_claim(row)
        claims.append(made)
        return text

    ratio = f"{one[0].value / four[0].value:.1f}"
    text = (f"This run, {chunks} chunks: four streams overlap copies and kernels, {shown(four[0])} against "
            f"{shown(one[0])} on one stream ({ratio}×")
    claims.append(ratio_claim(ratio, one[0].value / four[0].value, one[0], four[0]))
    text += f", ideal {shown(four[1])})" if four[1] else ")"
    paged_one, paged_four = summary.get(("pageable", 1)), summary.get(("pageable", 4))
    if paged_one and paged_four:
        text += f"; pageable: {shown(paged_one[0])} on one stream, {shown(paged_four[0])} on four"
    return text, claims


# ---------------------------------------------------------------- speedup vs streams

def speedup_figure(scope: Scope) -> MplFigure | None:
    rows = scope.rows
    best = best_over_chunks(rows, "speedup")
    regimes = ordered((k[0] for k in best), REGIMES)
    fig, axes = new_figure(ncols=len(regimes), width=4.6 * len(regimes) + 1, height=5.0, sharey=True)
    top = 1.0
    for ax, regime in zip(axes, regimes):
        for host in ordered((k[1] for k in best if k[0] == regime), ("pinned", "pageable")):
            points = sorted((s, config) for (r, h, s), config in best.items() if r == regime and h == host)
            streams = [s for s, _ in points]
            medians = [median_of(c, "speedup") for _, (_, c) in points]
            lows = [stat_of(c, "speedup", "min") or m for (_, (_, c)), m in zip(points, medians)]
            highs = [stat_of(c, "speedup", "max") or m for (_, (_, c)), m in zip(points, medians)]
            ax.errorbar(streams, medians, yerr=[np.subtract(medians, lows), np.subtract(highs, medians)],
                        color=host_color(host), marker="o", linewidth=1.8, capsize=3, label=f"{host}: measured")
            below = host == "pageable"  # pinned labels above their points, pageable ones below
            for (s, (chunks, _)), m in zip(points, medians):
                ax.annotate(f"{m:.2f}×\n@{chunks}", xy=(s, m), xytext=(0, -9 if below else 7), textcoords="offset points",
                            ha="center", va="top" if below else "bottom", fontsize=7, color=host_color(host))
            ideal = [median_of(c, "ideal_speedup") for _, (_, c) in points]
            if all(v is not None for v in ideal):
                # One stream count (a verdict run) draws no line: a dash marks the bound there.
                alone = {"marker": "_", "markersize": 18, "markeredgewidth": 1.8} if len(streams) == 1 else {}
                ax.plot(streams, ideal, color=host_color(host), alpha=0.8, label=f"{host}: ideal bound",
                        **{k: v for k, v in IDEAL_STYLE.items() if k != "color"}, **alone)
                top = max(top, max(ideal))
            top = max(top, max(highs))
        ax.axhline(1.0, color="0.5", linewidth=0.8)
        ax.set_xscale("log", base=2)
        all_streams = sorted({k[2] for k in best if k[0] == regime})
        ax.set_xticks(all_streams)
        ax.set_xticklabels([str(s) for s in all_streams])
        ax.set_xlabel("streams, log₂ scale (best chunk count @C)")
        ax.set_title(REGIME_NAMES.get(regime, regime), loc="left")
    axes[0].set_ylabel("speedup over one stream, one chunk (×)")
    axes[0].set_ylim(0, top * 1.25)
    handles, labels = axes[0].get_legend_handles_labels()
    legend = figure_legend(fig, handles, labels, title="median, whiskers: min–max of the repetitions")
    text, claims = speedup_lesson(best)
    return finish(fig, text, scope.subtitle, legend, claims)


def speedup_lesson(best: dict[tuple[str, str, int], tuple[int, list[Row]]]) -> tuple[str, list[dict]]:
    """This run's best balanced pinned pipeline on 3 streams or more, its ideal bound and the best
    pageable one, with their claims."""
    balanced = {s: (c, rows) for (r, h, s), (c, rows) in best.items() if r == "balanced" and h == "pinned"}
    multi = {s: config for s, config in balanced.items() if s >= 3}
    if not multi:
        return "Speedup over one stream grows with streams until the slowest stage saturates", []
    s, (chunks, config) = max(multi.items(), key=lambda item: median_of(item[1][1], "speedup") or 0)
    speedup = median_row(config, "speedup")
    text = f"This run: the balanced pinned pipeline runs {speedup.value:.2f}× faster on {s} streams × {chunks} chunks"
    claims = [claim(f"{speedup.value:.2f}", speedup.value, [cite(speedup)])]
    ideal = median_row(config, "ideal_speedup")
    if ideal:
        text += f" (ideal bound {ideal.value:.2f}×)"
        claims.append(claim(f"{ideal.value:.2f}", ideal.value, [cite(ideal)]))
    paged = [median_row(c, "speedup") for (r, h, _), (_, c) in best.items() if r == "balanced" and h == "pageable"]
    paged = [p for p in paged if p is not None]
    if paged:
        top = max(paged, key=lambda row: row.value)
        streams = top["streams"]
        text += f"; pageable memory's best is {top.value:.2f}× ({streams} stream{'s' if streams != 1 else ''})"
        claims.append(claim(f"{top.value:.2f}", top.value, [cite(top)]))
    return text, claims


# ---------------------------------------------------------------- efficiency heatmap

def efficiency_figure(scope: Scope) -> MplFigure | None:
    rows = scope.rows
    data = {k: median_of(v, "efficiency") for k, v in sweep(rows, "efficiency").items() if k[1] == "pinned"}
    if not data:
        return None
    regimes = ordered((k[0] for k in data), REGIMES)
    streams = sorted({k[2] for k in data})
    chunks = sorted({k[3] for k in data})
    fig, axes = new_figure(ncols=len(regimes), width=4.4 * len(regimes) + 1.5, height=4.2 + 0.25 * len(chunks))
    image = None
    for ax, regime in zip(axes, regimes):
        grid = np.full((len(chunks), len(streams)), np.nan)
        for (r, _, s, c), value in data.items():
            if r == regime and value is not None:
                grid[chunks.index(c), streams.index(s)] = value
        image = ax.imshow(grid, origin="lower", cmap="viridis", vmin=0, vmax=100, aspect="auto")
        for yi in range(len(chunks)):
            for xi in range(len(streams)):
                if not math.isnan(grid[yi, xi]):
                    value = grid[yi, xi]
                    ax.text(xi, yi, f"{value:.0f}", ha="center", va="center", fontsize=8.5,
                            color="black" if value > 60 else "white")
        ax.set_xticks(range(len(streams)))
        ax.set_xticklabels([str(s) for s in streams])
        ax.set_yticks(range(len(chunks)))
        ax.set_yticklabels([str(c) for c in chunks])
        ax.set_xlabel("streams")
        ax.set_title(REGIME_NAMES.get(regime, regime), loc="left")
        ax.grid(False)
    axes[0].set_ylabel("chunks per pass")
    fig = finish(fig, efficiency_lesson(data), scope.subtitle)
    if image is not None:
        # After the layout: a colorbar axes of its own, right of the panels, never on top of them.
        fig.subplots_adjust(right=0.9)
        bottom, top = axes[-1].get_position().y0, axes[-1].get_position().y1
        bar = fig.colorbar(image, cax=fig.add_axes((0.92, bottom, 0.012, top - bottom)))
        bar.set_label("overlap efficiency (%): 100 = ideal bound, 0 = no overlap", fontsize=8.5)
    return fig


def efficiency_lesson(data: dict[tuple[str, str, int, int], float | None]) -> str:
    balanced = {(s, c): v for (r, _, s, c), v in data.items() if r == "balanced" and v is not None and s >= 3}
    if balanced:
        (s, c), best = max(balanced.items(), key=lambda item: item[1])
        (s_low, c_low), worst = min(balanced.items(), key=lambda item: item[1])
        if len(balanced) == 1:  # a verdict run's one cell: no sweep to draw the lesson from
            return f"This run: a balanced pipeline reaches {best:.0f} % of the ideal gain with {s} streams × {c} chunks"
        cells = f"{best:.0f} % of the ideal gain with {s} streams × {c} chunks, {worst:.0f} % with {s_low} × {c_low}"
        # The lesson follows the data: on an H200 the best cell is often one chunk per stream.
        if c / s > c_low / s_low:
            return "Overlap needs several chunks per stream: balanced pipelines reach " + cells
        return "Fewer chunks per stream did as well or better here: balanced pipelines reach " + cells
    return "Overlap efficiency: the share of the ideal bound's gain over serial that the pipeline achieved"


# ---------------------------------------------------------------- movement tax

def tax_figure(scope: Scope) -> MplFigure | None:
    rows = scope.rows
    data = [r for r in rows if r.case == "movement_tax"]
    regimes = ordered((r.get("regime") for r in data), REGIMES)
    variants = ordered((r.get("api") for r in data), TAX_VARIANTS)
    fig, (ax,) = new_figure(width=10.5, height=5.4)
    width = 0.8 / max(len(variants), 1)
    top = 1.0
    for vi, variant in enumerate(variants):
        for ri, regime in enumerate(regimes):
            config = [r for r in data if r.get("api") == variant and r.get("regime") == regime]
            ratio, call = median_of(config, "tax_ratio"), median_of(config, "device_call_time")
            if ratio is None:
                continue
            # The bar is the ratio its label names (× the kernel alone of its regime), so a 9.1× bar
            # stands taller than a 3.0× one; the absolute time per call is the label's second line.
            x = ri + (vi - (len(variants) - 1) / 2) * width
            ax.bar(x, ratio, width * 0.92, color=TAX_COLORS.get(variant, "0.5"),
                   label=TAX_NAMES.get(variant, variant).replace("\n", " ") if ri == 0 else None)
            label = f"{ratio:.1f}×" + (f"\n{format_time_us(call)}" if call is not None else "")
            ax.annotate(label, xy=(x, ratio), xytext=(0, 2), textcoords="offset points",
                        ha="center", fontsize=7.5, linespacing=1.0)
            top = max(top, ratio)
    ax.set_xticks(range(len(regimes)))
    ax.set_xticklabels([REGIME_NAMES.get(r, r) for r in regimes])
    ax.set_yscale("log")
    ax.set_ylabel("time per call ÷ the kernel alone (×, log)")
    ax.set_ylim(0.8, top * 2.2)
    ax.axhline(1.0, color="0.3", linewidth=0.8)
    ax.set_yticks([t for t in (1, 2, 5, 10, 20, 50, 100, 200, 500) if t <= top * 2.2])
    ax.yaxis.set_major_formatter(lambda v, _: f"{v:g}×")
    ax.yaxis.set_minor_formatter(lambda v, _: "")
    size = next((r.get("size_bytes") for r in data if r.get("size_bytes")), None)
    if size:
        ax.set_title(f"the same kernel over {format_bytes(size)}, pinned host memory", loc="left")
    handles, labels = ax.get_legend_handles_labels()
    legend = figure_legend(fig, handles, labels)
    text, claims = tax_lesson(data)
    return finish(fig, text, scope.subtitle, legend, claims)


def tax_lesson(data: Sequence[Row]) -> tuple[str, list[dict]]:
    """This run's round-trip taxes, which the calibration builds in (a kernel of r copy times
    between two copies takes 1 + 2/r kernel times), and what a CPU fill of the input costs."""
    def ratio(variant: str, regime: str) -> Row | None:
        return median_row([r for r in data if r.get("api") == variant and r.get("regime") == regime], "tax_ratio")
    trips = [(regime, ratio("round_trip", regime)) for regime in ("copy_heavy", "balanced", "compute_heavy")]
    trips = [(regime, row) for regime, row in trips if row is not None]
    if not trips:
        return "The movement tax: the same kernel with and without the data movement around it", []
    texts = [f"{row.value:.1f}" for _, row in trips]
    claims = [claim(t, row.value, [cite(row)]) for t, (_, row) in zip(texts, trips)]
    text = ("This run: a copy in and out costs 1 + 2/r kernel times by design (r = kernel ÷ copy time): "
            + ", ".join(f"{t}× {regime.replace('_', '-')}" for t, (regime, _) in zip(texts, trips)))
    host = ratio("host_generated", trips[0][0])
    if host:
        shown = f"{host.value:.1f}"
        text += f"; an input written by one CPU thread first: {shown}×"
        claims.append(claim(shown, host.value, [cite(host)]))
    return text, claims


# ---------------------------------------------------------------- stream semantics

def semantics_figure(scope: Scope) -> MplFigure | None:
    rows = scope.rows
    fig, axes = new_figure(ncols=2, width=12.5, height=5.0)
    bars = [(mode, [r for r in rows if r.case == "stream_semantics" and r.get("api") == mode]) for mode in SEMANTICS]
    bars = [(m, c) for m, c in bars if median_of(c, "pipeline_time") is not None]
    graph = [(("graph_streams" if r.get("api") == "nonblocking" else r.get("api")),
              [x for x in rows if x.case == "graph" and x.get("api") == r.get("api")]) for r in rows
             if r.case == "graph" and r.metric == "pipeline_time" and r.statistic == "median"]
    for ax, entries, title in ((axes[0], bars, "one two-stream pipeline, four stream semantics"),
                               (axes[1], graph, "the four-stream pipeline: launches vs one graph")):
        if not entries:
            ax.set_visible(False)
            continue
        names = [SEMANTICS_NAMES.get(m, m) for m, _ in entries]
        times = [median_of(c, "pipeline_time") / 1e3 for _, c in entries]
        ideal = median_of(entries[0][1], "ideal_time")
        colors = ["#0072B2" if m in ("nonblocking", "graph_streams") else "#999999" if m == "graph" else "#D55E00"
                  for m, _ in entries]
        ax.bar(range(len(entries)), times, color=colors)
        for i, (t, (_, c)) in enumerate(zip(times, entries)):
            s = median_of(c, "speedup")
            ax.annotate(f"{format_number(t)} ms" + (f"\n{s:.2f}×" if s else ""), xy=(i, t), xytext=(0, 2),
                        textcoords="offset points", ha="center", fontsize=8)
        serial = median_of(entries[0][1], "serial_time")
        if serial:
            ax.axhline(serial / 1e3, color="0.35", linestyle=(0, (1, 2)), linewidth=1.4)
            ax.annotate("one stream, one chunk", xy=(0.99, serial / 1e3), xycoords=("axes fraction", "data"),
                        ha="right", va="bottom", fontsize=8, color="0.3",
                        bbox={"facecolor": "white", "edgecolor": "none", "pad": 0.5})
        if ideal:
            ax.axhline(ideal / 1e3, **IDEAL_STYLE)
            ax.annotate("ideal bound", xy=(0.99, ideal / 1e3), xycoords=("axes fraction", "data"), ha="right",
                        va="bottom", fontsize=8, color=IDEAL_STYLE["color"],
                        bbox={"facecolor": "white", "edgecolor": "none", "pad": 0.5})
        ax.set_xticks(range(len(entries)))
        ax.set_xticklabels(names, fontsize=8.5)
        ax.set_ylabel("pass time (ms)")
        ax.set_ylim(0, max(times + [serial / 1e3 if serial else 0]) * 1.2)
        ax.set_title(title, loc="left")
    text, claims = semantics_lesson(bars)
    return finish(fig, text, scope.subtitle, claims=claims)


def semantics_lesson(bars: Sequence[tuple[str, list[Row]]]) -> tuple[str, list[dict]]:
    times = {m: median_row(c, "pipeline_time") for m, c in bars}
    base = times.get("nonblocking")
    legacy, sync = times.get("legacy_default"), times.get("host_sync")
    if base and legacy and sync:
        texts = (f"{legacy.value / base.value:.1f}", f"{sync.value / base.value:.1f}")
        return (f"This run: one kernel on the legacy default stream makes the two-stream pipeline "
                f"{texts[0]}× slower, a host sync per chunk {texts[1]}×; the per-thread default stream keeps "
                f"the overlap"), [ratio_claim(texts[0], legacy.value / base.value, legacy, base),
                                  ratio_claim(texts[1], sync.value / base.value, sync, base)]
    return "The same pipeline under different stream semantics", []


# ---------------------------------------------------------------- what is drawn, and when

FIGURES = [
    Figure("overlap_timeline", per_device=True, draw=timeline_figure,
           needs=[Need("timeline", metric) for metric in TIMELINE_METRICS]),
    Figure("overlap_speedup", per_device=True, draw=speedup_figure,
           needs=[Need("pipeline", "speedup", where={"api": "nonblocking"})]),
    Figure("overlap_efficiency", per_device=True, draw=efficiency_figure,
           needs=[Need("pipeline", "efficiency", where={"api": "nonblocking", "host_kind": "pinned"})]),
    Figure("overlap_movement_tax", per_device=True, draw=tax_figure, needs=[Need("movement_tax", "device_call_time")]),
    Figure("overlap_stream_semantics", per_device=True, draw=semantics_figure,
           needs=[Need("stream_semantics", "pipeline_time")]),
]
