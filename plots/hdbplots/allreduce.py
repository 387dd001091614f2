"""Figures of the `allreduce` family: what NCCL collectives reach over NVLink, and why.

Figures (each title states what the data shows):
  allreduce_busbw        all-reduce busbw vs size, one curve per rank count n, NVLink line rate
  allreduce_collectives  all-reduce vs its two halves (reduce-scatter, all-gather) at the largest n
  allreduce_interconnect the same all-reduce with NCCL_P2P_DISABLE=1 (through host memory) beside NVLink
  allreduce_scaling      busbw at the largest size and time at the smallest, per n (efficiency vs n=2)
  allreduce_overlap      communication and compute alone, then together: slowdowns, fraction hidden

busbw is nccl-tests' bus bandwidth (algbw x 2(n-1)/n for all-reduce, x (n-1)/n for the halves): it
compares with one GPU's per-direction link rate whatever n is, so the NVLink line is drawn as
links_active x 26.5625 GB/s of the slowest GPU in meta.json (the rule the harness's report uses).
"""
from __future__ import annotations

from functools import partial
from typing import Sequence

from matplotlib.figure import Figure
from matplotlib.patches import Patch

from .common import (FigureJob, Row, Run, axes_handles, by_size, figure_legend, finish, format_bytes,
                     format_number, format_time_us, load_meta, new_figure, plot_band, reference_line,
                     size_axis)

NVLINK_LINK_GBPS = 26.5625  # NVLink 4 per link per direction (signalling rate)
RANK_COLORS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")
COLLECTIVE_COLORS = {"all_reduce": "#0072B2", "reduce_scatter": "#009E73", "all_gather": "#D55E00"}
COLLECTIVE_NAMES = {"all_reduce": "all-reduce", "reduce_scatter": "reduce-scatter", "all_gather": "all-gather"}


def figures(run: Run) -> list[FigureJob]:
    rows = run.ok_rows("allreduce")
    jobs = []
    if lesson_rows(rows, n_min=2):
        jobs.append(FigureJob("allreduce_busbw", partial(busbw_figure, run, rows)))
    if len({param(r, "api") for r in rows if r.metric == "busbw"}) > 1:
        jobs.append(FigureJob("allreduce_collectives", partial(collectives_figure, run, rows)))
    if any(param(r, "interconnect") == "p2p_disabled" for r in rows):
        jobs.append(FigureJob("allreduce_interconnect", partial(interconnect_figure, run, rows)))
    if lesson_rows(rows, n_min=1):
        jobs.append(FigureJob("allreduce_scaling", partial(scaling_figure, run, rows)))
    if any(r.case == "overlap" for r in rows):
        jobs.append(FigureJob("allreduce_overlap", partial(overlap_figure, run, rows)))
    return jobs


# ---------------------------------------------------------------- rows

def param(row: Row, key: str) -> str:
    """A label of the row: its own column when common.Row has one (schema 2), else from `extra`."""
    value = getattr(row, key, None)
    if value not in (None, ""):
        return str(value)
    for item in row.extra.split(";"):
        name, _, text = item.partition("=")
        if name == key:
            return text
    return ""


def ranks(row: Row) -> int:
    text = param(row, "gpus")
    return int(text) if text.isdigit() else 0


def select_curve(rows: Sequence[Row], *, api: str = "all_reduce", dtype: str = "float",
                 placement: str = "out_of_place", interconnect: str = "default", n: int | None = None) -> list[Row]:
    return [r for r in rows if r.case == "collective" and param(r, "api") == api and param(r, "dtype") == dtype
            and param(r, "placement") == placement and param(r, "interconnect") == interconnect
            and (n is None or ranks(r) == n)]


def lesson_rows(rows: Sequence[Row], n_min: int) -> list[Row]:
    return [r for r in select_curve(rows) if ranks(r) >= n_min]


def rank_counts(rows: Sequence[Row]) -> list[int]:
    return sorted({ranks(r) for r in rows if ranks(r) > 0})


def largest(curve: dict[int, float]) -> tuple[int, float] | None:
    return (max(curve), curve[max(curve)]) if curve else None


def nvlink_line_rate(run: Run) -> tuple[float, int] | None:
    """(GB/s, links) of the slowest GPU's NVLink per direction, from meta.json; None without NVLink."""
    meta, _ = load_meta(run.directory / "meta.json")
    gpus = meta.get("node", {}).get("gpus", []) if isinstance(meta.get("node"), dict) else []
    links = []
    for gpu in gpus if isinstance(gpus, list) else []:
        nvlink = gpu.get("nvlink") if isinstance(gpu, dict) else None
        count = nvlink.get("links_active") if isinstance(nvlink, dict) else None
        if isinstance(count, (int, float)) and count > 0:
            links.append(int(count))
    if not links:
        return None
    return min(links) * NVLINK_LINK_GBPS, min(links)


def draw_line_rate(ax, run: Run) -> float | None:
    rate = nvlink_line_rate(run)
    if rate:
        reference_line(ax, rate[0], f"NVLink line rate: {rate[1]} links × {NVLINK_LINK_GBPS} GB/s per direction "
                                    f"= {format_number(rate[0])} GB/s")
        return rate[0]
    return None


# ---------------------------------------------------------------- busbw vs size per n

def busbw_figure(run: Run, rows: Sequence[Row]) -> Figure | None:
    fig, (ax,) = new_figure()
    counts = [n for n in rank_counts(lesson_rows(rows, 2))]
    best: tuple[int, int, float] | None = None
    for i, n in enumerate(counts):
        curve = select_curve(rows, n=n)
        plot_band(ax, curve, "busbw", color=RANK_COLORS[i % len(RANK_COLORS)], linestyle="-", marker="o",
                  label=f"n = {n} GPUs")
        top = largest(by_size(curve, "busbw", "median"))
        if top and (best is None or top[1] > best[2]):
            best = (n, top[0], top[1])
    line = draw_line_rate(ax, run)
    size_axis(ax, [r.size_bytes for r in lesson_rows(rows, 2) if r.size_bytes], label="message size S (bytes)")
    ax.set_ylabel("busbw (GB/s) = S / time × 2(n−1)/n")
    ax.set_ylim(0, max([line or 0] + [r.value for r in lesson_rows(rows, 2) if r.metric == "busbw"]) * 1.12)
    legend = figure_legend(fig, *axes_handles([ax]), title="float sum, out of place; median, band: min–max")
    return finish(fig, busbw_lesson(rows, best, line), run.subtitle(), legend)


def busbw_lesson(rows: Sequence[Row], best: tuple[int, int, float] | None, line: float | None) -> str:
    if best is None:
        return "All-reduce bus bandwidth vs message size"
    n, size, value = best
    text = f"All-reduce on {n} GPUs reaches {format_number(value)} GB/s busbw at {format_bytes(size)}"
    if line:
        text += f", {value / line * 100:.0f} % of the NVLink line rate"
    small = by_size(select_curve(rows, n=n), "time", "median")
    if small:
        text += f"; small messages are latency-bound ({format_time_us(small[min(small)])} at {format_bytes(min(small))})"
    return text


# ---------------------------------------------------------------- the two halves

def collectives_figure(run: Run, rows: Sequence[Row]) -> Figure | None:
    n = max(rank_counts([r for r in rows if r.metric == "busbw"]), default=0)
    if n < 2:
        return None
    fig, (ax,) = new_figure()
    values = {}
    for api in ("all_reduce", "reduce_scatter", "all_gather"):
        curve = select_curve(rows, api=api, n=n)
        if plot_band(ax, curve, "busbw", color=COLLECTIVE_COLORS[api], linestyle="-", marker="o",
                     label=COLLECTIVE_NAMES[api]):
            values[api] = largest(by_size(curve, "busbw", "median"))
    draw_line_rate(ax, run)
    size_axis(ax, [r.size_bytes for r in rows if r.size_bytes and ranks(r) == n], label="message size S (bytes)")
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
    return finish(fig, lesson, run.subtitle(), legend)


# ---------------------------------------------------------------- NVLink vs host-staged

def interconnect_figure(run: Run, rows: Sequence[Row]) -> Figure | None:
    staged_counts = rank_counts([r for r in rows if param(r, "interconnect") == "p2p_disabled"])
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
    draw_line_rate(ax, run)
    size_axis(ax, list(default) + list(staged), label="message size S (bytes)")
    ax.set_yscale("log")
    ax.set_ylabel("busbw (GB/s, log scale)")
    legend = figure_legend(fig, *axes_handles([ax]), title=f"all-reduce, n = {n}, float, out of place")
    common = sorted(set(default) & set(staged))
    if common:
        size = common[-1]
        lesson = (f"NVLink moves all-reduce data {default[size] / staged[size]:.0f}× faster than staging through "
                  f"host memory: {format_number(default[size])} vs {format_number(staged[size])} GB/s busbw "
                  f"at {format_bytes(size)}")
    else:
        lesson = "All-reduce with and without NCCL's peer-to-peer transport"
    return finish(fig, lesson, run.subtitle(), legend)


# ---------------------------------------------------------------- scaling

def scaling_figure(run: Run, rows: Sequence[Row]) -> Figure | None:
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
    # n = 1 is a local copy (HBM, no bus): its algbw would dwarf every busbw bar; it is in the title.
    xs = sorted(n for n in bandwidth if n > 1)
    ax_bw.bar([str(n) for n in xs], [bandwidth[n][1] for n in xs], color="#0072B2", edgecolor="0.2")
    base = bandwidth.get(2)
    for i, n in enumerate(xs):
        note = f"{format_number(bandwidth[n][1])}"
        if n > 1 and base and base[0] == bandwidth[n][0]:
            note += f"\n{bandwidth[n][1] / base[1]:.2f}× n=2"
        ax_bw.annotate(note, (i, bandwidth[n][1]), xytext=(0, 3), textcoords="offset points", ha="center", fontsize=8)
    draw_line_rate(ax_bw, run)
    ax_bw.set_xlabel("ranks n (one process per GPU)")
    ax_bw.set_ylabel("busbw at the largest size (GB/s)")
    ax_bw.set_title("bandwidth: ideal busbw stays flat as n grows", loc="left")
    lx = sorted(latency)
    ax_lat.plot([str(n) for n in lx], [latency[n][1] for n in lx], color="#D55E00", marker="o")
    ax_lat.set_xlabel("ranks n")
    ax_lat.set_ylabel(f"time per all-reduce at {format_bytes(latency[lx[0]][0]) if lx else 'the smallest size'} (µs)")
    ax_lat.set_ylim(bottom=0)
    ax_lat.set_title("latency: the smallest message pays every hop", loc="left")
    handles = [Patch(facecolor="#0072B2", edgecolor="0.2", label="busbw, median")]
    legend = figure_legend(fig, handles, [h.get_label() for h in handles], title="all-reduce, float, out of place")
    return finish(fig, scaling_lesson(bandwidth, latency), run.subtitle(), legend)


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

def overlap_figure(run: Run, rows: Sequence[Row]) -> Figure | None:
    data = [r for r in rows if r.case == "overlap"]
    medians = {r.metric: r.value for r in data if r.statistic == "median"}
    needed = ("comm_time", "compute_time", "overlapped_time")
    if not all(m in medians for m in needed):
        return None
    comm, compute, both = (medians[m] for m in needed)
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
    ax.set_title(f"n = {param(sample, 'gpus')}, {format_bytes(sample.size_bytes or 0)} float all-reduces "
                 f"on one stream, a busy FMA kernel on another", loc="left", fontsize=9)
    lesson = "Communication beside compute"
    if hidden is not None:
        lesson = f"Running the all-reduce beside compute hides {hidden * 100:.0f} % of its time"
        if comm_slow and compute_slow:
            lesson += f"; the all-reduce slows {comm_slow:.2f}×, the compute kernel {compute_slow:.2f}×"
    handles = [Patch(facecolor="#0072B2", edgecolor="0.2", label="all-reduce batch"),
               Patch(facecolor="#009E73", edgecolor="0.2", label="compute kernel (sized to match)"),
               Patch(facecolor="0.55", edgecolor="0.2", label="both at once: start to the later end")]
    legend = figure_legend(fig, handles, [h.get_label() for h in handles], title="medians, slowest rank")
    return finish(fig, lesson, run.subtitle(), legend)
