"""Figures of the `allreduce` family: what NCCL collectives reach over NVLink, and why.

Figures (FIGURES below says when each is drawn; each title states what the data shows):
  allreduce_busbw        all-reduce busbw vs size, one curve per rank count n, NVLink line rate
  allreduce_collectives  all-reduce vs its two halves (reduce-scatter, all-gather) at the largest n
  allreduce_interconnect the same all-reduce with NCCL_P2P_DISABLE=1 (through host memory) beside NVLink
  allreduce_scaling      busbw at the largest size and time at the smallest, per n (efficiency vs n=2);
                         with one n past 1 (two GPUs), time at the largest size from 1 to n GPUs
  allreduce_overlap      communication and compute alone, then together: slowdowns, fraction hidden

busbw is nccl-tests' bus bandwidth (algbw x 2(n-1)/n for all-reduce, x (n-1)/n for the halves): it
compares with one GPU's per-direction link rate whatever n is, so the NVLink line is the slowest
rank's links_active x data_per_link_GBps from meta.json (node.gpus[i].nvlink), the harness's
`nvlink_bus` traffic class. The first four need a collective of two ranks or more (the
`ranks` parameter: under MPI a node's CSV row spans one local GPU, so core `gpus` is not n); on
one GPU the collective is a local copy and only the overlap figure is drawn.
"""
from __future__ import annotations

from typing import Sequence

from matplotlib.figure import Figure as MplFigure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from .claims import cite, claim
from .drawing import axes_handles, figure_legend, finish, new_figure, plot_band, reference_line, size_axis
from .figures import Figure, Need, Scope
from .formatting import format_bytes, format_number, format_time_us
from .results_csv import Row
from .run import GpuInfo
from .selection import by_size

RANK_COLORS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")
COLLECTIVES = ("all_reduce", "reduce_scatter", "all_gather")
COLLECTIVE_COLORS = {"all_reduce": "#0072B2", "reduce_scatter": "#009E73", "all_gather": "#D55E00"}
COLLECTIVE_NAMES = {"all_reduce": "all-reduce", "reduce_scatter": "reduce-scatter", "all_gather": "all-gather"}
# The curve every lesson is about: float sums, out of place, NCCL's default transport.
LESSON = {"api": "all_reduce", "dtype": "float", "placement": "out_of_place", "interconnect": "default"}
OVERLAP_METRICS = ("comm_time", "compute_time", "overlapped_time")
# Message sizes run on log₂ axes, and the axis says so.
SIZE_LABEL = "message size S (bytes, log₂ scale)"


# ---------------------------------------------------------------- rows

def select_curve(rows: Sequence[Row], *, api: str = "all_reduce", dtype: str = "float",
                 placement: str = "out_of_place", interconnect: str = "default", n: int | None = None) -> list[Row]:
    return [r for r in rows if r.case == "collective" and r.get("api") == api and r.get("dtype") == dtype
            and r.get("placement") == placement and r.get("interconnect") == interconnect
            and (n is None or ranks(r) == n)]


def ranks(row: Row) -> int:
    """n of the collective (the `ranks` parameter), 0 when the row does not say."""
    return row.get("ranks") or 0


def lesson_rows(rows: Sequence[Row], n_min: int) -> list[Row]:
    return [r for r in select_curve(rows) if ranks(r) >= n_min]


def rank_counts(rows: Sequence[Row]) -> list[int]:
    return sorted({ranks(r) for r in rows if ranks(r) > 0})


def largest(curve: dict[int, float]) -> tuple[int, float] | None:
    return (max(curve), curve[max(curve)]) if curve else None


def line_rate(scope: Scope, rows: Sequence[Row]) -> tuple[float, GpuInfo] | None:
    """(GB/s, slowest GPU) of NVLink per direction over the GPUs the rows ran on (every GPU of the
    node when the rows name none that meta.json knows); None without NVLink facts in meta.json."""
    gpus = {g.index: g for r in rows for g in scope.run.row_gpus(r) if g is not None}
    return scope.run.nvlink_bus_rate(list(gpus.values()) or None)


def draw_line_rate(ax, scope: Scope, rows: Sequence[Row]) -> float | None:
    rate = line_rate(scope, rows)
    if rate:
        value, gpu = rate
        reference_line(ax, value, f"NVLink data rate: {gpu.nvlink_links} links × "
                                  f"{format_number(gpu.nvlink_data_per_link_gbps or 0, 4)} GB/s per direction "
                                  f"= {format_number(value)} GB/s")
        return value
    return None


# ---------------------------------------------------------------- busbw vs size per n

def with_sample_range(curve: Sequence[Row], metric: str) -> list[Row]:
    """The curve's rows plus min and max rows made from its samples where the CSV has none, so
    the min–max band the legend promises is drawn for an MPI run that wrote samples only."""
    have = {r["size_bytes"] for r in curve if r.metric == metric and r.statistic in ("min", "max")}
    samples: dict[int, list[Row]] = {}
    for r in curve:
        if r.metric == metric and r.statistic == "sample" and r.get("size_bytes") not in have:
            samples.setdefault(r["size_bytes"], []).append(r)
    made = []
    for rows in samples.values():
        low, high = min(rows, key=lambda r: r.value), max(rows, key=lambda r: r.value)
        made += [low.replace(statistic="min", sample_index=None), high.replace(statistic="max", sample_index=None)]
    return list(curve) + made


def busbw_figure(scope: Scope) -> MplFigure | None:
    rows = scope.rows
    counts = rank_counts(lesson_rows(rows, 2))
    if not counts:
        return None
    fig, (ax,) = new_figure()
    best: tuple[int, int, float] | None = None
    for i, n in enumerate(counts):
        curve = with_sample_range(select_curve(rows, n=n), "busbw")
        plot_band(ax, curve, "busbw", color=RANK_COLORS[i % len(RANK_COLORS)], linestyle="-", marker="o",
                  label=f"n = {n} GPUs")
        top = largest(by_size(curve, "busbw", "median"))
        if top and (best is None or top[1] > best[2]):
            best = (n, top[0], top[1])
    line = draw_line_rate(ax, scope, lesson_rows(rows, 2))
    size_axis(ax, [r["size_bytes"] for r in lesson_rows(rows, 2) if r.get("size_bytes")], label=SIZE_LABEL)
    ax.set_ylabel("busbw (GB/s, log scale) = S / time × 2(n−1)/n")
    # Log: the latency-bound sizes (MB/s at 8 B) and the plateau (hundreds of GB/s) both show.
    values = [r.value for r in lesson_rows(rows, 2) if r.metric == "busbw" and r.statistic != "sample" and r.value > 0]
    ax.set_yscale("log")
    ax.set_ylim(min(values) / 2, max([line or 0] + values) * 2)
    ax.grid(True, which="minor", axis="y", color="0.94", linewidth=0.6)
    legend = figure_legend(fig, *axes_handles([ax]),
                           title="float sum, out of place; line: median, band: min–max of the repetitions")
    text, claims = busbw_lesson(rows, best)
    return finish(fig, text, scope.subtitle, legend, claims)


def busbw_lesson(rows: Sequence[Row], best: tuple[int, int, float] | None) -> tuple[str, list[dict]]:
    """This run's plateau and smallest message, and the claims. No share of the NVLink line: the
    lessons of docs/teaching.md hold busbw to it, machine by machine."""
    if best is None:
        return "All-reduce bus bandwidth vs message size", []
    n, size, value = best
    top = [r for r in select_curve(rows, n=n) if r.metric == "busbw" and r.statistic == "median" and r["size_bytes"] == size]
    text = f"This run: all-reduce on {n} GPUs reaches {format_number(value)} GB/s busbw at {format_bytes(size)}"
    claims = [claim(format_number(value), value, [cite(top[0])])] if len(top) == 1 else []
    small = {r["size_bytes"]: r for r in select_curve(rows, n=n) if r.metric == "time" and r.statistic == "median"}
    if small:
        first = small[min(small)]
        shown = format_time_us(first.value)
        text += f"; small messages are latency-bound ({shown} at {format_bytes(min(small))})"
        if shown.endswith(" µs"):
            claims.append(claim(shown.split()[0], first.value, [cite(first)]))
    return text, claims


# ---------------------------------------------------------------- the two halves

def collectives_figure(scope: Scope) -> MplFigure | None:
    rows = scope.rows
    n = max(rank_counts([r for r in rows if r.metric == "busbw"]), default=0)
    if n < 2:
        return None
    fig, (ax,) = new_figure()
    values = {}
    for api in COLLECTIVES:
        curve = select_curve(rows, api=api, n=n)
        if plot_band(ax, curve, "busbw", color=COLLECTIVE_COLORS[api], linestyle="-", marker="o",
                     label=COLLECTIVE_NAMES[api]):
            values[api] = largest(by_size(curve, "busbw", "median"))
    draw_line_rate(ax, scope, select_curve(rows, n=n))
    size_axis(ax, [r["size_bytes"] for r in rows if r.get("size_bytes") and ranks(r) == n], label=SIZE_LABEL)
    ax.set_ylabel("busbw (GB/s)")
    ax.set_ylim(bottom=0)
    legend = figure_legend(fig, *axes_handles([ax]), title=f"n = {n}, float, out of place")
    lesson = f"On {n} GPUs, all-reduce, reduce-scatter and all-gather reach comparable busbw"
    if "all_reduce" in values and values["all_reduce"]:
        size, value = values["all_reduce"]
        lesson = (f"busbw puts a ring all-reduce and its two halves on one scale: all-reduce "
                  f"{format_number(value)} GB/s at {format_bytes(size)}")
        halves = [f"{COLLECTIVE_NAMES[a]} {format_number(v[1])}" for a, v in values.items() if a != "all_reduce" and v]
        if halves:
            lesson += ", " + ", ".join(halves) + " GB/s at their largest size"
    return finish(fig, lesson, scope.subtitle, legend)


# ---------------------------------------------------------------- NVLink vs host-staged

def interconnect_figure(scope: Scope) -> MplFigure | None:
    rows = scope.rows
    staged_counts = rank_counts(select_curve(rows, interconnect="p2p_disabled"))
    if not staged_counts:
        return None
    n = max(staged_counts)
    fig, (ax,) = new_figure()
    default = by_size(select_curve(rows, n=n), "busbw", "median")
    staged = by_size(select_curve(rows, n=n, interconnect="p2p_disabled"), "busbw", "median")
    plot_band(ax, select_curve(rows, n=n), "busbw", color="#0072B2", linestyle="-", marker="o",
              label="default (NVLink P2P)")
    plot_band(ax, select_curve(rows, n=n, interconnect="p2p_disabled"), "busbw", color="#E69F00", linestyle="--",
              marker="s", label="NCCL_P2P_DISABLE=1 (through host memory)")
    draw_line_rate(ax, scope, select_curve(rows, n=n))
    size_axis(ax, list(default) + list(staged), label=SIZE_LABEL)
    ax.set_yscale("log")
    ax.set_ylabel("busbw (GB/s, log scale)")
    legend = figure_legend(fig, *axes_handles([ax]), title=f"all-reduce, n = {n}, float, out of place")
    common = sorted(set(default) & set(staged))
    claims = []
    if common:
        size = common[-1]  # like for like: both transports at one size, the largest both measured
        nvlink, host = (next(r for r in curve if r.metric == "busbw" and r.statistic == "median" and r["size_bytes"] == size)
                        for curve in (select_curve(rows, n=n), select_curve(rows, n=n, interconnect="p2p_disabled")))
        texts = (f"{nvlink.value / host.value:.0f}", format_number(nvlink.value), format_number(host.value))
        lesson = (f"This run: NVLink moves all-reduce data {texts[0]}× faster than staging through host memory: "
                  f"{texts[1]} vs {texts[2]} GB/s busbw at {format_bytes(size)}")
        claims = [claim(texts[0], nvlink.value / host.value, [cite(nvlink), cite(host)], "a/b"),
                  claim(texts[1], nvlink.value, [cite(nvlink)]), claim(texts[2], host.value, [cite(host)])]
    else:
        lesson = "All-reduce with and without NCCL's peer-to-peer transport"
    return finish(fig, lesson, scope.subtitle, legend, claims)


# ---------------------------------------------------------------- scaling

def scaling_figure(scope: Scope) -> MplFigure | None:
    rows = scope.rows
    counts = rank_counts(lesson_rows(rows, 1))
    bandwidth: dict[int, tuple[int, float]] = {}
    latency: dict[int, tuple[int, float]] = {}
    for n in counts:
        curve = select_curve(rows, n=n)
        top = largest(by_size(curve, "busbw" if n > 1 else "algbw", "median"))
        times = by_size(curve, "time", "median")
        if top:
            bandwidth[n] = top
        if times:
            latency[n] = (min(times), times[min(times)])
    if not bandwidth:
        return None
    fig, (ax_bw, ax_lat) = new_figure(ncols=2, width=12.5)
    xs = sorted(n for n in bandwidth if n > 1)
    if len(xs) >= 2:
        handles = draw_busbw_bars(ax_bw, scope, rows, bandwidth, xs)
    else:  # one rank count past 1 (two GPUs): no busbw curve over n to draw, so time from 1 to n GPUs
        handles = draw_largest_times(ax_bw, rows, bandwidth)
    lx = sorted(latency)
    ax_lat.plot([str(n) for n in lx], [latency[n][1] for n in lx], color="#D55E00", marker="o")
    ax_lat.set_xlabel("ranks n")
    ax_lat.set_ylabel(f"time per all-reduce at {format_bytes(latency[lx[0]][0]) if lx else 'the smallest size'} (µs)")
    ax_lat.set_ylim(bottom=0)
    ax_lat.set_title("latency: the smallest message pays every hop", loc="left")
    handles.append(Line2D([], [], color="#D55E00", marker="o", label="time at the smallest size, median"))
    legend = figure_legend(fig, handles, [h.get_label() for h in handles], title="all-reduce, float, out of place")
    return finish(fig, scaling_lesson(bandwidth, latency), scope.subtitle, legend)


def draw_busbw_bars(ax, scope: Scope, rows: Sequence[Row], bandwidth: dict[int, tuple[int, float]],
                    xs: list[int]) -> list:
    """busbw at the largest size per n ≥ 2: a bar per rank count, each against n=2."""
    # n = 1 is a local copy (HBM, no bus): its algbw would dwarf every busbw bar; it is in the title.
    ax.bar([str(n) for n in xs], [bandwidth[n][1] for n in xs], color="#0072B2", edgecolor="0.2")
    base = bandwidth.get(2)
    for i, n in enumerate(xs):
        note = f"{format_number(bandwidth[n][1])}"
        if base and base[0] == bandwidth[n][0]:
            note += f"\n{bandwidth[n][1] / base[1]:.2f}× n=2"
        ax.annotate(note, (i, bandwidth[n][1]), xytext=(0, 3), textcoords="offset points", ha="center", fontsize=8)
    line = draw_line_rate(ax, scope, lesson_rows(rows, 2))
    ax.set_ylim(0, max([line or 0] + [bandwidth[n][1] for n in xs]) * 1.2)  # room for the labels
    ax.set_xlabel("ranks n (one process per GPU)")
    ax.set_ylabel("busbw at the largest size (GB/s)")
    ax.set_title("bandwidth: ideal busbw stays flat as n grows", loc="left")
    return [Patch(facecolor="#0072B2", edgecolor="0.2", label="busbw, median")]


def draw_largest_times(ax, rows: Sequence[Row], bandwidth: dict[int, tuple[int, float]]) -> list:
    """Time per call at the largest size from 1 GPU (a local copy) to the one n measured, each
    point labelled with its bandwidth: the figure a two-GPU run can draw honestly."""
    points = []
    for n in sorted(bandwidth):
        size, rate = bandwidth[n]
        time = by_size(select_curve(rows, n=n), "time", "median").get(size)
        if time is not None:
            points.append((n, size, rate, time))
    ax.plot([str(n) for n, *_ in points], [t / 1e3 for *_, t in points], color="#0072B2", marker="s")
    for i, (n, size, rate, time) in enumerate(points):
        what = "algbw (local copy)" if n == 1 else "busbw"
        ax.annotate(f"{format_time_us(time)}\n{format_number(rate)} GB/s {what}", (i, time / 1e3), xytext=(0, 6),
                    textcoords="offset points", ha="center", fontsize=8)
    ax.set_ylim(0, max([t / 1e3 for *_, t in points] or [1]) * 1.3)
    ax.set_xlim(-0.35, max(len(points) - 1, 1) + 0.35)  # room for the labels at both ends
    ax.set_xlabel("ranks n (one process per GPU)")
    size = points[-1][1] if points else None
    ax.set_ylabel(f"time per all-reduce at {format_bytes(size) if size else 'the largest size'} (ms)")
    ax.set_title("bandwidth: only one rank count past 1, so no busbw curve over n", loc="left", fontsize=10)
    return [Line2D([], [], color="#0072B2", marker="s", label="time at the largest size, median")]


def scaling_lesson(bandwidth: dict[int, tuple[int, float]], latency: dict[int, tuple[int, float]]) -> str:
    multi = sorted(n for n in bandwidth if n > 1)
    if len(multi) >= 2:
        first, last = multi[0], multi[-1]
        return (f"Scaling efficiency busbw(n={last}) / busbw(n={first}) = "
                f"{bandwidth[last][1] / bandwidth[first][1]:.2f} at the largest size; "
                f"small all-reduces take {format_time_us(latency.get(last, (0, 0))[1])} on {last} GPUs")
    if multi and 1 in latency and multi[0] in latency:
        n = multi[0]
        text = (f"Going from one GPU to {n} turns a {format_time_us(latency[1][1])} local copy into a "
                f"{format_time_us(latency[n][1])} all-reduce at {format_bytes(latency[n][0])}; "
                f"{format_number(bandwidth[n][1])} GB/s busbw at {format_bytes(bandwidth[n][0])}")
        if 1 in bandwidth:
            text += f" (one GPU copies at {format_number(bandwidth[1][1])} GB/s algbw)"
        return text
    return "All-reduce bandwidth and latency per rank count"


# ---------------------------------------------------------------- overlap

def overlap_figure(scope: Scope) -> MplFigure | None:
    data = [r for r in scope.rows if r.case == "overlap"]
    medians = {r.metric: r.value for r in data if r.statistic == "median"}
    if not all(m in medians for m in OVERLAP_METRICS):
        return None
    comm, compute, both = (medians[m] for m in OVERLAP_METRICS)
    fig, (ax,) = new_figure(width=8.0)
    labels = ["all-reduce\nalone", "compute\nalone", "one after\nthe other", "both at once"]
    ax.bar(labels[:2], [comm, compute], color=["#0072B2", "#009E73"], edgecolor="0.2")
    ax.bar(labels[2], comm, color="#0072B2", edgecolor="0.2")
    ax.bar(labels[2], compute, bottom=comm, color="#009E73", edgecolor="0.2")
    ax.bar(labels[3], both, color="0.55", edgecolor="0.2")
    for x, value in zip(labels, (comm, compute, comm + compute, both)):
        ax.annotate(format_time_us(value), (x, value), xytext=(0, 3), textcoords="offset points", ha="center", fontsize=8.5)
    ax.set_ylabel("time of the batch (µs)")
    ax.grid(False, axis="x")
    sample = data[0]
    hidden = medians.get("comm_hidden")
    comm_slow = medians.get("comm_slowdown")
    compute_slow = medians.get("compute_slowdown")
    ax.set_title(f"n = {sample.get('ranks') or '?'}, {format_bytes(sample.get('size_bytes') or 0)} {sample.get('dtype') or ''} all-reduces "
                 f"on one stream, a busy FMA kernel on another", loc="left", fontsize=9)
    lesson, claims = "Communication beside compute", []
    rows = {r.metric: r for r in data if r.statistic == "median"}
    if hidden is not None:
        shown = f"{hidden * 100:.0f}"
        lesson = f"This run: running the all-reduce beside compute hides {shown} % of its time"
        claims.append(claim(shown, hidden * 100, [cite(rows["comm_hidden"])], "a*100"))
        if comm_slow and compute_slow:
            texts = (f"{comm_slow:.2f}", f"{compute_slow:.2f}")
            lesson += f"; the all-reduce slows {texts[0]}×, the compute kernel {texts[1]}×"
            claims += [claim(texts[0], comm_slow, [cite(rows["comm_slowdown"])]),
                       claim(texts[1], compute_slow, [cite(rows["compute_slowdown"])])]
    handles = [Patch(facecolor="#0072B2", edgecolor="0.2", label="all-reduce batch"),
               Patch(facecolor="#009E73", edgecolor="0.2", label="compute kernel (sized to match)"),
               Patch(facecolor="0.55", edgecolor="0.2", label="both at once: start to the later end")]
    legend = figure_legend(fig, handles, [h.get_label() for h in handles], title="medians, slowest rank")
    return finish(fig, lesson, scope.subtitle, legend, claims)


# ---------------------------------------------------------------- what is drawn, and when

MULTI = {"ranks": 2}  # a collective between GPUs, not a local copy

FIGURES = [
    Figure("allreduce_busbw", draw=busbw_figure, needs=[Need("collective", "busbw", where=LESSON, at_least=MULTI)]),
    Figure("allreduce_collectives", draw=collectives_figure,
           needs=[Need("collective", "busbw", where={**LESSON, "api": api}, at_least=MULTI) for api in COLLECTIVES]),
    Figure("allreduce_interconnect", draw=interconnect_figure,
           needs=[Need("collective", "busbw", where=LESSON, at_least=MULTI),
                  Need("collective", "busbw", where={**LESSON, "interconnect": "p2p_disabled"}, at_least=MULTI)]),
    Figure("allreduce_scaling", draw=scaling_figure,
           needs=[Need("collective", "busbw", where=LESSON, at_least=MULTI),
                  Need("collective", "time", where=LESSON, at_least=MULTI)]),
    Figure("allreduce_overlap", needs=[Need("overlap", metric) for metric in OVERLAP_METRICS], draw=overlap_figure),
]
