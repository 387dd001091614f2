"""Figures of the `sync` family: what waiting costs.

Figures (FIGURES at the end says when each is drawn; one set per GPU when a run measured several):
  sync_wakeup    cost of a sync call on finished work; wake-up latency per sync call and
                 scheduling mode, with the CPU time the waiting thread burnt beside it
  sync_waiting   waiting for one event vs its stream vs the device; a cross-stream dependency
                 through cudaStreamWaitEvent vs a host round trip (device-clock gap)
  sync_launch    K launches vs one graph of K kernels (host time to idle), launch cost marked
  sync_trap      loop throughput vs read-back interval k, relative to never reading back,
                 with the fix (copy once at the end) and the asynchronous alternative
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from matplotlib.figure import Figure as MplFigure

from .claims import cite, claim
from .drawing import axes_handles, figure_legend, finish, new_figure, reference_line
from .figures import Figure, Need, Scope
from .formatting import format_number, format_time_us
from .results_csv import Row
from .selection import ordered, select

MODES = ("auto", "spin", "yield", "blocking_sync")
MODE_COLORS = {"auto": "#999999", "spin": "#D55E00", "yield": "#E69F00", "blocking_sync": "#0072B2"}
MODE_NAMES = {"auto": "auto (default)", "spin": "spin", "yield": "yield", "blocking_sync": "blocking-sync"}
WAIT_APIS = ("cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize",
             "cudaEventSynchronize_BlockingSync", "cudaEventQuery_poll")
WAIT_LABELS = {"cudaDeviceSynchronize": "DeviceSync", "cudaStreamSynchronize": "StreamSync",
               "cudaEventSynchronize": "EventSync", "cudaEventSynchronize_BlockingSync": "EventSync\n(BlockingSync event)",
               "cudaEventQuery_poll": "EventQuery\nloop", "cudaEventQuery": "EventQuery"}
COST_APIS = ("cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize", "cudaEventQuery")
NEED_APIS = ("cudaEventSynchronize", "cudaStreamSynchronize", "cudaDeviceSynchronize")
DEPENDENCY_APIS = ("same_stream", "cudaStreamWaitEvent", "host_sync_then_launch")
DEPENDENCY_LABELS = {"same_stream": "same stream", "cudaStreamWaitEvent": "cudaStreamWaitEvent\n(other stream)",
                     "host_sync_then_launch": "host sync,\nthen launch"}
# format_time_us's units, as multiples of the µs a row holds: a claim divides by them.
TIME_SCALES = {"µs": 1, "ms": 1e3, "s": 1e6}
TRAP_COLORS = {"readback_pageable": "#D55E00", "sync_only": "#CC79A7", "readback_async": "#009E73",
               "keep_on_gpu": "#0072B2"}


# ---------------------------------------------------------------- helpers

def stat(rows: Sequence[Row], metric: str, statistic: str = "median", **params: Any) -> float | None:
    """The one value of a metric and statistic among rows whose parameters match."""
    values = [r.value for r in rows if r.metric == metric and r.statistic == statistic
              and all(r.get(k) == v for k, v in params.items())]
    return values[0] if values else None


def whisker(rows: Sequence[Row], metric: str, **params: Any) -> tuple[float, float, float] | None:
    """(median, min, max) over repetitions, or None when the metric has no median."""
    median = stat(rows, metric, **params)
    if median is None:
        return None
    low = stat(rows, metric, "min", **params)
    high = stat(rows, metric, "max", **params)
    return median, median if low is None else low, median if high is None else high


def bars(ax, xs: Sequence[float], values: Sequence[tuple[float, float, float] | None], width: float,
         color: str, label: str, hatch: str | None = None) -> None:
    """Median bars with min–max whiskers; missing values leave a gap."""
    points = [(x, v) for x, v in zip(xs, values) if v is not None]
    if not points:
        return
    x = [p[0] for p in points]
    median = np.array([p[1][0] for p in points])
    error = np.array([[p[1][0] - p[1][1] for p in points], [p[1][2] - p[1][0] for p in points]])
    ax.bar(x, median, width, color=color, edgecolor="0.2", linewidth=0.6, hatch=hatch, label=label,
           yerr=np.clip(error, 0, None), capsize=2.5, error_kw={"linewidth": 0.8})


def api_bars(ax, rows: Sequence[Row], order: Sequence[str], labels: dict[str, str], metric: str, width: float,
             color: str, label: str) -> None:
    """One bar per API in `order` (the APIs present), median with min–max whiskers, named below."""
    apis = ordered((r.get("api") for r in rows), order)
    bars(ax, range(len(apis)), [whisker(select(rows, api=a), metric) for a in apis], width, color, label)
    ax.set_xticks(range(len(apis)))
    ax.set_xticklabels([labels.get(a, a) for a in apis], fontsize=8)


def time_claim(row: Row) -> tuple[str, dict]:
    """A duration as a title shows it (format_time_us) and the claim of its number."""
    shown = format_time_us(row.value)
    number, unit = shown.split()
    return shown, claim(number, row.value / TIME_SCALES[unit], [cite(row)], f"a/{TIME_SCALES[unit]:g}")


def device_note(rows: Sequence[Row]) -> str:
    devices = sorted({r.device for r in rows if r.device is not None})
    return f"; GPU {', '.join(map(str, devices))}" if devices else ""


# ---------------------------------------------------------------- sync cost and wake-up

def wakeup_figure(scope: Scope) -> MplFigure | None:
    """Three panels: a sync call on finished work; wake-up latency; CPU time per 1 ms wait."""
    rows = scope.rows
    cost = select(rows, case="sync_cost")
    wake = select(rows, case="wakeup")
    fig, (ax_cost, ax_wake, ax_cpu) = new_figure(ncols=3, width=16.5, height=5.8)
    cost_apis = ordered((r.get("api") for r in cost), COST_APIS)
    retired = any(r.metric == "call_time_retired" for r in cost)
    shift = 0.2 if retired else 0.0
    bars(ax_cost, [j - shift for j in range(len(cost_apis))],
         [whisker(select(cost, api=a), "call_time") for a in cost_apis], 0.38 if retired else 0.6, "0.55",
         "work seen only by stream syncs")
    if retired:
        bars(ax_cost, [j + shift for j in range(len(cost_apis))],
             [whisker(select(cost, api=a), "call_time_retired") for a in cost_apis], 0.38, "0.8",
             "after one cudaDeviceSynchronize")
    ax_cost.set_xticks(range(len(cost_apis)))
    ax_cost.set_xticklabels([WAIT_LABELS.get(a, a) for a in cost_apis], fontsize=8)
    ax_cost.set_ylabel("host time per call (µs)")
    ax_cost.set_title("the call itself, work already done", loc="left")

    modes = ordered((r.get("mode") for r in wake), MODES)
    apis = ordered((r.get("api") for r in wake), WAIT_APIS)
    width = 0.8 / max(1, len(modes))
    for i, mode in enumerate(modes):
        xs = [j + (i - (len(modes) - 1) / 2) * width for j in range(len(apis))]
        color = MODE_COLORS.get(mode, "0.4")
        label = f"{MODE_NAMES.get(mode, mode)} mode"
        bars(ax_wake, xs, [whisker(select(wake, api=a), "wakeup_latency", mode=mode) for a in apis],
             width, color, label)
        bars(ax_cpu, xs, [whisker(select(wake, api=a), "waiter_cpu_time", mode=mode) for a in apis],
             width, color, label)
    kernel_us = median_of(wake, "wait_time")
    for ax in (ax_wake, ax_cpu):
        ax.set_xticks(range(len(apis)))
        ax.set_xticklabels([WAIT_LABELS.get(a, a) for a in apis], fontsize=7.5)
    ax_wake.set_yscale("log")
    ax_wake.set_ylabel("wake-up latency (µs, log): kernel end → call returns")
    ax_wake.set_title("how late the host notices", loc="left")
    if kernel_us:
        reference_line(ax_cpu, kernel_us, f"the whole wait: {format_time_us(kernel_us)}")
    ax_cpu.set_ylabel("CPU time of the waiting thread per wait (µs)")
    ax_cpu.set_title("what the wait costs the CPU", loc="left")
    if not cost and not wake:
        return None
    legend = figure_legend(fig, *axes_handles([ax_cost, ax_wake]), max_cols=5,
                           title="bars: median of repetitions, whiskers: min–max; each mode ran in its own process"
                                 + device_note(wake))
    text, claims = wakeup_lesson(wake)
    return finish(fig, text, scope.subtitle, legend, claims)


def median_of(rows: Sequence[Row], metric: str) -> float | None:
    values = [r.value for r in rows if r.metric == metric and r.statistic == "median"]
    return float(np.median(values)) if values else None


def stat_row(rows: Sequence[Row], metric: str, **params: Any) -> Row | None:
    """The one median row of a metric among rows whose parameters match (None: not exactly one)."""
    found = [r for r in rows if r.metric == metric and r.statistic == "median"
             and all(r.get(k) == v for k, v in params.items())]
    return found[0] if len(found) == 1 else None


def wakeup_lesson(wake: Sequence[Row]) -> tuple[str, list[dict]]:
    """cudaStreamSynchronize in the default (auto) mode, spin where auto was not measured, against
    blocking-sync: the rows docs/teaching.md cites; the title and its claims. What the rows show is
    the CPU time and the wake-up, not how the driver waits (yield reads as spin), so the title says
    "busy", not "spins"."""
    stream = select(wake, api="cudaStreamSynchronize")
    default = "auto" if stat_row(stream, "wakeup_latency", mode="auto") else "spin"
    rows = [stat_row(stream, metric, mode=mode) for mode, metric in
            ((default, "wakeup_latency"), (default, "cpu_busy"), ("blocking_sync", "cpu_busy"),
             ("blocking_sync", "wakeup_latency"))]
    if None in rows:
        return "Waiting has two prices: how late the host wakes up, and how much CPU it burns meanwhile", []
    wake_up, busy, block_busy, block = rows  # type: ignore[misc]
    texts = [format_number(wake_up.value, 2), f"{busy.value:.0f}", format_number(block_busy.value, 2),
             format_number(block.value, 2)]
    who = "by default (auto)" if default == "auto" else "spinning"
    text = (f"This run: {who} cudaStreamSynchronize wakes {texts[0]} µs after the kernel ends but keeps a core "
            f"{texts[1]} % busy; blocking-sync sleeps ({texts[2]} % busy) and wakes {texts[3]} µs late")
    return text, [claim(t, r.value, [cite(r)]) for t, r in zip(texts, rows)]  # type: ignore[union-attr]


# ---------------------------------------------------------------- waiting for what you need

def waiting_figure(scope: Scope) -> MplFigure | None:
    rows = scope.rows
    need = select(rows, case="wait_for_need")
    dep = select(rows, case="dependency")
    if not need and not dep:
        return None
    fig, (ax_need, ax_dep) = new_figure(ncols=2, width=13.5, height=5.4)
    apis = ordered((r.get("api") for r in need), NEED_APIS)
    waits = [whisker(select(need, api=a), "wait_time") for a in apis]
    bars(ax_need, range(len(apis)), waits, 0.55, "#0072B2", "host blocked in the call")
    # The wake-up part is microseconds against a wait of hundreds: written, not drawn.
    for i, (api, wait) in enumerate(zip(apis, waits)):
        resume = stat(select(need, api=api), "resume_delay")
        if wait is not None and resume is not None:
            ax_need.annotate(f"resumed {format_number(resume, 2)} µs\nafter the awaited work ended", (i, wait[2]),
                             xytext=(0, 4), textcoords="offset points", ha="center", fontsize=7.5, color="0.25")
    ax_need.set_xticks(range(len(apis)))
    ax_need.set_xticklabels([{"cudaEventSynchronize": "one event\n(after 200 µs kernel)",
                              "cudaStreamSynchronize": "its stream\n(+ 400 µs more)",
                              "cudaDeviceSynchronize": "whole device\n(+ 1 ms on another stream)"}.get(a, a)
                             for a in apis], fontsize=8)
    ax_need.set_ylabel("time (µs)")
    ax_need.set_title("the host waits for what it names", loc="left")

    api_bars(ax_dep, dep, DEPENDENCY_APIS, DEPENDENCY_LABELS, "gap", 0.55, "#009E73",
             "producer end → consumer start (device clock)")
    ax_dep.set_ylabel("gap between dependent kernels (µs, fastest of 32 streams)")
    ax_dep.set_title("a dependency on another stream", loc="left")
    legend = figure_legend(fig, *axes_handles([ax_need, ax_dep]), max_cols=3,
                           title="bars: median of repetitions, whiskers: min–max" + device_note(need + dep))
    text, claims = waiting_lesson(need, dep)
    return finish(fig, text, scope.subtitle, legend, claims)


def waiting_lesson(need: Sequence[Row], dep: Sequence[Row]) -> tuple[str, list[dict]]:
    event = stat_row(select(need, api="cudaEventSynchronize"), "wait_time")
    device = stat_row(select(need, api="cudaDeviceSynchronize"), "wait_time")
    wait_event = stat_row(select(dep, api="cudaStreamWaitEvent"), "gap")
    host = stat_row(select(dep, api="host_sync_then_launch"), "gap")
    parts, claims = [], []
    if event and device:
        (event_text, event_claim), (device_text, device_claim) = time_claim(event), time_claim(device)
        parts.append(f"waiting on one event resumes the host after {event_text}, the whole device after {device_text}")
        claims += [event_claim, device_claim]
    if wait_event is not None and host is not None:
        texts = (format_number(wait_event.value, 2), format_number(host.value, 2))
        parts.append(f"cudaStreamWaitEvent releases the next kernel {texts[0]} µs after its input is ready, "
                     f"a host round trip {texts[1]} µs")
        claims += [claim(t, r.value, [cite(r)]) for t, r in zip(texts, (wait_event, host))]
    if not parts:
        return "Wait for exactly what you need", []
    return "This run: " + "; ".join(parts), claims


# ---------------------------------------------------------------- launches vs graph

def launch_figure(scope: Scope) -> MplFigure | None:
    rows = scope.rows
    graph = select(rows, case="graph")
    fig, (ax,) = new_figure(width=8.5, height=5.6)
    drawn = False
    for api, color, marker in (("launches", "#D55E00", "o"), ("graph", "#0072B2", "s")):
        curve = select(graph, api=api)
        points = sorted((r["kernels"], r.value) for r in curve
                        if r.metric == "total_time" and r.statistic == "median" and r.get("kernels") is not None)
        if not points:
            continue
        drawn = True
        ks, values = zip(*points)
        label = "K launches of an empty kernel" if api == "launches" else "one launch of a graph of K kernels"
        ax.plot(ks, values, color=color, marker=marker, linewidth=1.6, label=label)
        for k, v in points:
            ax.annotate(format_time_us(v), (k, v), xytext=(4, -12 if api == "graph" else 6),
                        textcoords="offset points", fontsize=8, color=color)
    if not drawn:
        return None
    instantiate = sorted((r["kernels"], r.value) for r in select(graph, api="graph")
                         if r.metric == "instantiate_time" and r.statistic == "median" and r.get("kernels") is not None)
    if instantiate:
        ks, values = zip(*instantiate)
        ax.plot(ks, values, color="#0072B2", linestyle=":", marker="x", linewidth=1.2,
                label="cudaGraphInstantiate (once per graph)")
    launch = select(rows, case="launch")
    launch_us = stat(launch, "launch_time")
    if launch_us:
        ax.text(0.02, 0.97, f"one empty launch: {format_number(launch_us, 2)} µs of host time; "
                            f"launch + sync: {format_number(stat(launch, 'launch_sync_time') or 0, 3)} µs",
                transform=ax.transAxes, fontsize=8.5, va="top", color="0.25")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("kernels K (log scale)")
    ax.set_ylabel("host time until the stream is idle (µs, log)")
    legend = figure_legend(fig, *axes_handles([ax]), max_cols=2,
                           title="medians of repetitions" + device_note(graph))
    text, claims = launch_lesson(graph)
    return finish(fig, text, scope.subtitle, legend, claims)


def launch_lesson(graph: Sequence[Row]) -> tuple[str, list[dict]]:
    """This run's 100 kernels (or the most both ways measured) as launches and as one graph: the
    rows docs/teaching.md cites, and the claims."""
    launches = {r.get("kernels"): r for r in select(graph, api="launches")
                if r.metric == "total_time" and r.statistic == "median"}
    graphs = {r.get("kernels"): r for r in select(graph, api="graph")
              if r.metric == "total_time" and r.statistic == "median"}
    common = sorted(k for k in launches if k in graphs and k is not None)
    if not common:
        return "CUDA graphs amortise launch cost over many kernels", []
    k = 100 if 100 in common else common[-1]
    (graph_text, graph_claim), (launch_text, launch_claim) = time_claim(graphs[k]), time_claim(launches[k])
    ratio = launches[k].value / graphs[k].value
    return (f"This run: one graph launch runs {k} empty kernels in {graph_text}, {k} launches take {launch_text}: "
            f"graphs amortise the launch cost ({ratio:.1f}×)"), [
        graph_claim, launch_claim, claim(f"{ratio:.1f}", ratio, [cite(launches[k]), cite(graphs[k])], "a/b")]


# ---------------------------------------------------------------- the sync trap

def trap_figure(scope: Scope) -> MplFigure | None:
    rows = scope.rows
    trap = select(rows, case="trap")
    fig, (ax,) = new_figure(width=9.0, height=5.6)
    # Read-back intervals in increasing order, then the loop that never reads back (no `every`).
    every: list[int | None] = ordered((r.get("every") for r in trap), ())
    if not every:
        return None
    if any(r.get("every") is None and r.metric == "relative_throughput" for r in select(trap, api="readback_pageable")):
        every.append(None)
    xs = range(len(every))
    # Each line's value labels sit on their own side of the point: the lines nearly meet at large k.
    for api, label, offset in (("readback_pageable", "4-byte read-back to pageable memory, then sync (.item())", (5, -12)),
                               ("sync_only", "cudaStreamSynchronize alone, no copy (the wait's share)", (-28, 5)),
                               ("readback_async", "read-back to pinned memory + event, checked 4 read-backs later",
                                (5, 5))):
        values = [whisker(select(trap, api=api), "relative_throughput", every=e) for e in every]
        points = [(x, v) for x, v in zip(xs, values) if v is not None]
        if not points:
            continue
        x = [p[0] for p in points]
        median = [p[1][0] for p in points]
        ax.errorbar(x, median, yerr=np.clip([[p[1][0] - p[1][1] for p in points], [p[1][2] - p[1][0] for p in points]], 0, None),
                    color=TRAP_COLORS[api], marker="o", linewidth=1.6, capsize=3, label=label)
        for xi, m in zip(x, median):
            ax.annotate(f"{m:.2f}", (xi, m), xytext=offset, textcoords="offset points", fontsize=8,
                        color=TRAP_COLORS[api])
    reference_line(ax, 1.0, "never reads back: the loop's full speed")
    keep = stat(select(trap, api="keep_on_gpu"), "relative_throughput")
    if keep is not None:
        ax.axhline(keep, color=TRAP_COLORS["keep_on_gpu"], linestyle="--", linewidth=1.4,
                   label=f"the fix: keep it on the GPU, copy once at the end ({keep:.2f})")
    ax.set_xticks(list(xs))
    ax.set_xticklabels([f"every {e}" if e is not None else "never" for e in every])
    ax.set_xlabel("read-back interval k (kernels between read-backs)")
    ax.set_ylabel("throughput relative to never reading back")
    ax.set_ylim(0, 1.15)
    step = stat(trap, "step_kernel_time")
    title = "loop of small kernels" + (f" ({format_number(step, 2)} µs each on the GPU)" if step else "")
    ax.set_title(title, loc="left")
    legend = figure_legend(fig, *axes_handles([ax]), max_cols=1,
                           title="median of repetitions, whiskers: min–max" + device_note(trap))
    text, claims = trap_lesson(trap)
    return finish(fig, text, scope.subtitle, legend, claims)


def trap_lesson(trap: Sequence[Row]) -> tuple[str, list[dict]]:
    """This run's read-back every step, the bare sync every step and keeping the values on the GPU,
    as throughput relative to never reading back (the rows docs/teaching.md cites), and the claims."""
    k1 = stat_row(select(trap, api="readback_pageable"), "relative_throughput", every=1)
    keep = stat_row(select(trap, api="keep_on_gpu"), "relative_throughput")
    if k1 is None or k1.value <= 0:
        return "The sync trap: every read-back stops the GPU until the host catches up", []
    shown = f"{1 / k1.value:.1f}"
    text = f"This run: a read-back after every kernel makes the loop {shown}× slower"
    claims = [claim(shown, 1 / k1.value, [cite(k1)], "1/a")]
    sync_only = stat_row(select(trap, api="sync_only"), "relative_throughput", every=1)
    if sync_only and sync_only.value > 0:
        shown = f"{1 / sync_only.value:.1f}"
        text += f" (the sync alone {shown}×)"
        claims.append(claim(shown, 1 / sync_only.value, [cite(sync_only)], "1/a"))
    if keep is not None:
        shown = f"{keep.value * 100:.0f}"
        text += f"; keeping the values on the GPU until the end keeps {shown} % of full speed"
        claims.append(claim(shown, keep.value * 100, [cite(keep)], "a*100"))
    return text, claims


# ---------------------------------------------------------------- what is drawn, and when

FIGURES = [
    Figure("sync_wakeup", per_device=True, draw=wakeup_figure, needs=[Need("wakeup", "wakeup_latency")]),
    Figure("sync_waiting", per_device=True, draw=waiting_figure, needs=[Need("wait_for_need", "wait_time")]),
    Figure("sync_launch", per_device=True, draw=launch_figure, needs=[Need("graph", "total_time")]),
    Figure("sync_trap", per_device=True, draw=trap_figure, needs=[Need("trap", "relative_throughput")]),
]
