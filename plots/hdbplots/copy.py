"""Figures of the `copy` family: how host memory kind and API decide what a copy costs.

Figures (FIGURES at the end says when each is drawn; each title states what the data shows):
  copy_bandwidth_<dir>     median bandwidth vs size per host kind × API, min–max band, link peak
  copy_fit_<dir>           the harness's α–β fit t(n) = α + n/β over the measured points, n½ marked
  copy_pinned_speedup      pinned ÷ pageable bandwidth vs size, per direction and API
  copy_latency             one tiny copy: device-timed vs host-observed time
  copy_alloc               what allocating/pinning costs per call and per MiB; cached pool vs cudaMalloc
  copy_bandwidth_all_gpus  each GPU alone vs all GPUs copying at once, against the links added up

All but the last are about one GPU (per_device). When the run measured several, each is drawn
once per GPU, named with a _gpu<N> suffix and graded against that GPU's own link; a single-GPU
run keeps the plain names, so it stays comparable with older runs and results/reference/.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Mapping, Sequence

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure as MplFigure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from .claims import cite, claim
from .drawing import (REFERENCE_LINE, api_style, axes_handles, figure_legend, finish, host_color, new_figure, plot_band,
                      reference_line, size_axis)
from .figures import Figure, Need, Scope
from .formatting import api_label, format_bytes, format_number, format_time_us, line_label
from .results_csv import Row
from .run import GpuInfo
from .selection import by_size, group, ordered, select

DIRECTIONS = ("h2d", "d2h", "bidir", "d2d")
DIRECTION_NAMES = {"h2d": "host→device", "d2h": "device→host",
                   "bidir": "both directions at once", "d2d": "device→device"}
DIRECTION_COLORS = {"h2d": "#332288", "d2h": "#117733", "bidir": "#AA4499", "d2d": "#882255"}
HOST_KINDS = ("pinned", "registered", "write_combined", "mapped", "pageable", "device")
APIS = ("async", "sync", "kernel")
# What tells curves apart inside a figure is host kind × API; any other declared parameter of the
# case (but these axes) is named in the curve's label, so two curves are never merged silently.
CURVE_AXES = ("direction", "host_kind", "api", "size_bytes", "streams")
# cudaMallocAsync is device memory like cudaMalloc, but a different mechanism: its own colour.
ALLOC_API_COLORS = {"cudaMallocAsync": "#882255"}
# All-GPUs figure: one GPU's bars in the pinned blue (every such copy is pinned), the total darker.
ALL_GPU_COLORS = {"alone": "#0072B2", "together": "#332288"}
# Copy sizes run on log₂ axes, and the axis says so.
SIZE_LABEL = "transfer size (bytes per copy, log₂ scale)"
# format_time_us's units, as multiples of the µs a row holds: a claim divides by them.
TIME_SCALES = {"µs": 1, "ms": 1e3, "s": 1e6}
# All GPUs at once keep "full speed" above this share of their alone bandwidths added up. The
# total is N × the slowest GPU, so a few percent of spread between GPUs already costs something.
SCALING_LIMIT = 0.9


@dataclass(frozen=True)
class Target:
    """The GPU a figure is about: its rows, the subtitle naming it, and its own link's limits."""
    device: int | None
    rows: tuple[Row, ...]
    subtitle: str
    gpu: GpuInfo | None

    @classmethod
    def of(cls, scope: Scope) -> "Target":
        return cls(scope.device, scope.rows, scope.subtitle, scope.gpu or scope.run.gpu_info(None))

    @property
    def pcie(self) -> float | None:
        return self.gpu.pcie_peak_gbps if self.gpu else None

    @property
    def link(self) -> str:
        return (self.gpu.link if self.gpu else None) or "PCIe"

    @property
    def hbm(self) -> float | None:
        return self.gpu.hbm_peak_gbps if self.gpu else None


def detail(row: Row) -> str:
    """The row's parameters beyond the curve axes, 'k=v;…' ('' for the plain curves)."""
    return ";".join(f"{k}={v}" for k, v in row.params().items() if k not in CURVE_AXES)


def line_key(row: Row) -> tuple[str, str, str]:
    """What distinguishes one curve from another inside a direction."""
    return (row.get("host_kind") or "", row.get("api") or "", detail(row))


def plain(rows: Sequence[Row]) -> list[Row]:
    """The rows of the plain curves (no parameter beyond the curve axes)."""
    return [r for r in rows if not detail(r)]


# ---------------------------------------------------------------- helpers

def curves(rows: Sequence[Row]) -> list[tuple[tuple[str, str, str], list[Row]]]:
    """Rows split into curves (host kind × API × detail), pinned first, async first."""
    groups = group(rows, line_key)
    rank = {k: i for i, k in enumerate(HOST_KINDS)}
    api_rank = {a: i for i, a in enumerate(APIS)}
    return sorted(groups.items(), key=lambda item: (rank.get(item[0][0], len(rank)), item[0][0],
                                                    api_rank.get(item[0][1], len(api_rank)), item[0][1],
                                                    item[0][2]))


def largest_size_row(rows: Sequence[Row], metric: str, host_kind: str) -> Row | None:
    """The best median row among a host kind's curves at each curve's largest size: its plateau."""
    best = None
    for (kind, _api, _detail), curve in curves(rows):
        at_size = {r.get("size_bytes"): r for r in curve
                   if r.metric == metric and r.statistic == "median" and r.get("size_bytes")}
        if kind == host_kind and at_size:
            row = at_size[max(at_size)]
            best = row if best is None or row.value > best.value else best
    return best


def largest_size_median(rows: Sequence[Row], metric: str, host_kind: str) -> float | None:
    """Best median among a host kind's curves at each curve's largest size: its plateau."""
    row = largest_size_row(rows, metric, host_kind)
    return row.value if row else None


def repetitions(rows: Sequence[Row]) -> int:
    """Repetitions per case, from the sample rows of one case (0 when the CSV has none)."""
    per_case = group((r for r in rows if r.statistic == "sample"),
                     lambda r: r.key("sample_index", "value"))
    return max((len(v) for v in per_case.values()), default=0)


def band_note(rows: Sequence[Row]) -> str:
    count = repetitions(rows)
    return f"line: median, band: min–max of {count} repetitions" if count else "line: median"


def link_peaks(gpu: Target, direction: str) -> list[tuple[float, str]]:
    """Theoretical limits worth drawing for a direction, of this GPU's own link: (GB/s, label)."""
    pcie, link, hbm = gpu.pcie, gpu.link, gpu.hbm
    if direction in ("h2d", "d2h") and pcie:
        return [(pcie, f"{link} data rate (after its line code), one direction: {pcie:.1f} GB/s")]
    if direction == "bidir" and pcie:
        return [(2 * pcie, f"{link} data rate, both directions: {2 * pcie:.1f} GB/s"),
                (pcie, f"one direction: {pcie:.1f} GB/s")]
    if direction == "d2d" and hbm:
        peaks = [(hbm, f"HBM peak: {hbm:.0f} GB/s"),
                 (hbm / 2, f"½ HBM peak: a copy reads and writes every byte ({hbm / 2:.0f} GB/s)")]
        return peaks + ([(pcie, f"{link}: {pcie:.1f} GB/s")] if pcie else [])
    return []


# ---------------------------------------------------------------- bandwidth vs size

def bandwidth_figure(scope: Scope, direction: str) -> MplFigure:
    """Median bandwidth vs size, one curve per host kind × API, against the link's peak."""
    gpu = Target.of(scope)
    data = select(gpu.rows, case="bandwidth", direction=direction)
    fig, (ax,) = new_figure()
    for (host_kind, api, detail), curve in curves(data):
        linestyle, marker = api_style(api)
        plot_band(ax, curve, "bandwidth", color=host_color(host_kind), linestyle=linestyle,
                  marker=marker, label=line_label(host_kind, api, detail))
        if direction == "bidir":
            plot_bidir_parts(ax, curve, host_kind)
    peaks = link_peaks(gpu, direction)
    for value, text in peaks:
        reference_line(ax, value, text)
    top = max([r.value for r in data if r.metric == "bandwidth"] + [p for p, _ in peaks])
    ax.set_ylim(0, top * 1.12)
    size_axis(ax, [r.get("size_bytes") for r in data if r.get("size_bytes")], label=SIZE_LABEL)
    ax.set_ylabel("bandwidth (GB/s, 1 GB = 10⁹ B)")
    ax.set_title(f"{direction}: {DIRECTION_NAMES.get(direction, direction)}", loc="left")
    legend = figure_legend(fig, *axes_handles([ax]), title=band_note(data))
    return finish(fig, *_text_claims(bandwidth_lesson(gpu, data, direction), gpu.subtitle, legend))


def plot_bidir_parts(ax: Axes, curve: Sequence[Row], host_kind: str) -> None:
    """The h2d and d2h shares of a bidirectional copy, thin, so the total stays the story."""
    for metric, marker, name in (("bandwidth_h2d", 5, "h2d share"), ("bandwidth_d2h", 4, "d2h share")):
        medians = by_size(curve, metric, "median")
        if medians:
            sizes = sorted(medians)
            ax.plot(sizes, [medians[s] for s in sizes], color=host_color(host_kind), linewidth=0.9,
                    alpha=0.7, marker=marker, markersize=5, linestyle=(0, (2, 2)),
                    label=f"{host_kind}: {name}")


def bandwidth_lesson(gpu: Target, data: Sequence[Row], direction: str) -> tuple[str, list[dict]]:
    """The sentence the bandwidth figure proves, computed from its plateaus, and its claims. A
    plateau is this run's: docs/teaching.md quotes the reference set's median beside it."""
    pinned_row = largest_size_row(data, "bandwidth", "pinned")
    pageable_row = largest_size_row(data, "bandwidth", "pageable")
    pinned = pinned_row.value if pinned_row else None
    pageable = pageable_row.value if pageable_row else None
    pcie = gpu.pcie
    link = {"const": pcie, "source": "the GPU's PCIe data rate per direction from meta.json"}
    if direction == "bidir" and pinned and pcie:
        return (f"PCIe is full duplex: copying both ways at once moves {pinned:.0f} GB/s, "
                f"{pinned / pcie:.2f}× the one-way link peak"), []
    if direction == "d2d":
        best = largest_size_row(data, "bandwidth", "device")
        hbm = gpu.hbm
        if best and hbm:
            # Like for like: HBM traffic (a copy reads and writes every byte) against the HBM peak.
            hbm_peak = {"const": hbm, "source": "the GPU's HBM peak from meta.json"}
            texts = (f"{best.value:.0f}", f"{2 * best.value:.0f}", f"{2 * best.value / hbm * 100:.0f}", f"{hbm:.0f}")
            return (f"This run: a {format_bytes(best['size_bytes'])} device-to-device copy moves {texts[0]} GB/s; "
                    f"reading and writing each byte, HBM carries {texts[1]} GB/s, {texts[2]} % of its "
                    f"{texts[3]} GB/s peak"), [
                claim(texts[0], best.value, [cite(best)]),
                claim(texts[1], 2 * best.value, [cite(best)], "2*a"),
                claim(texts[2], 2 * best.value / hbm * 100, [cite(best), hbm_peak], "2*a/b*100"),
                claim(texts[3], hbm, [hbm_peak])]
        return "Device-to-device copies are bound by HBM, not by the host link", []
    if pinned_row and pageable_row and pinned > 1.15 * pageable:
        if pcie:
            texts = (f"{pinned / pcie * 100:.0f}", f"{pcie:.1f}", f"{pageable / pcie * 100:.0f}")
            sizes = {format_bytes(r["size_bytes"]) for r in (pinned_row, pageable_row)}
            return (f"This run at {' and '.join(sorted(sizes))}: pinned copies reach {texts[0]} % of the "
                    f"{texts[1]} GB/s {gpu.link} data rate, pageable ones {texts[2]} %: the driver stages them "
                    f"through pinned memory"), [
                claim(texts[0], pinned / pcie * 100, [cite(pinned_row), link], "a/b*100"),
                claim(texts[1], pcie, [link]),
                claim(texts[2], pageable / pcie * 100, [cite(pageable_row), link], "a/b*100")]
        text = f"{pinned / pageable:.1f}"
        return (f"This run: pinned copies are {text}× faster than pageable ones: the driver stages those through "
                f"pinned memory"), [claim(text, pinned / pageable, [cite(pinned_row), cite(pageable_row)], "a/b")]
    if pinned and pageable:
        return f"Pageable copies keep up with pinned ones on this node ({pageable:.0f} vs {pinned:.0f} GB/s)", []
    return "Bandwidth grows with transfer size until the fixed per-copy cost stops mattering", []


# ---------------------------------------------------------------- α–β fit

def fit_roles(scope: Scope) -> dict[str, str]:
    """The copy family's fit rows by role, as its declaration names them (FamilyDeclaration)."""
    declaration = scope.run.declarations.get("copy")
    return declaration.fit_metrics if declaration else {}


def fit_params(rows: Sequence[Row], direction: str, roles: Mapping[str, str]
               ) -> dict[tuple[str, str, str], dict[str, float]]:
    """(host kind, API, detail) → {"alpha", "beta", "n_half"} for complete fits."""
    role_of = {metric: role for role, metric in roles.items()}
    fits: dict[tuple[str, str, str], dict[str, float]] = {}
    for r in select(rows, case="bandwidth", direction=direction, statistic="fit"):
        if r.metric in role_of:
            fits.setdefault(line_key(r), {})[role_of[r.metric]] = r.value  # type: ignore[assignment]
    return {k: v for k, v in fits.items() if "alpha" in v and "beta" in v}


def fit_figure(scope: Scope, direction: str) -> MplFigure | None:
    """Measured time and bandwidth per copy against the harness's t(n) = α + n/β model."""
    gpu = Target.of(scope)
    data = select(gpu.rows, case="bandwidth", direction=direction)
    roles = fit_roles(scope)
    fits = fit_params(gpu.rows, direction, roles)
    if not fits:
        return None
    fig, (ax_time, ax_bw) = new_figure(ncols=2, width=13.5, height=5.6)
    measured = {key: by_size(curve, "time_per_copy", "median") for key, curve in curves(data)}
    sizes = sorted({s for m in measured.values() for s in m})
    model_sizes = np.geomspace(min(sizes), max(sizes), 200) if sizes else np.geomspace(1 << 10, 1 << 30, 200)
    for key, params in sorted(fits.items(), key=lambda kv: -kv[1]["beta"]):
        draw_fit(ax_time, ax_bw, key, params, measured.get(key, {}), model_sizes)
    for value, text in link_peaks(gpu, direction)[:1] if direction != "bidir" else []:
        reference_line(ax_bw, value, text)
    size_axis(ax_time, sizes, label=SIZE_LABEL, max_ticks=6)
    size_axis(ax_bw, sizes, label=SIZE_LABEL, max_ticks=6)
    ax_time.set_yscale("log")
    ax_time.set_ylabel("time per copy (µs, log scale)")
    ax_time.set_title("time: flat at α for small copies, slope 1/β for large ones", loc="left")
    ax_bw.set_ylabel("bandwidth = size ÷ time per copy (GB/s)")
    ax_bw.set_title("bandwidth: half of β is reached at n½ = α·β", loc="left")
    ax_bw.set_ylim(bottom=0)
    ax_time.legend(handles=[Line2D([], [], color="0.3", marker="o", linestyle="none", label="measured median"),
                            Line2D([], [], color="0.3", label="fit  t(n) = α + n/β"),
                            Line2D([], [], color="0.3", marker="D", markeredgecolor="black",
                                   linestyle="none", label="n½ (half of β)")],
                   loc="upper left")
    legend = figure_legend(fig, *axes_handles([ax_bw]), max_cols=2,
                           title="host memory · API:   α (fixed cost per copy),   β (bandwidth limit),   "
                                 "n½ = α·β (size reaching β/2)")
    return finish(fig, *_text_claims(fit_lesson(fits, direction, roles, gpu.rows), gpu.subtitle, legend))


def _text_claims(lesson: tuple[str, list[dict]], subtitle: str, legend) -> tuple:
    """finish()'s arguments after the figure, from a lesson that returns (title, claims)."""
    text, claims = lesson
    return text, subtitle, legend, claims


def draw_fit(ax_time: Axes, ax_bw: Axes, key: tuple[str, str, str], params: dict[str, float],
             measured_us: dict[int, float], model_sizes: np.ndarray) -> None:
    """One path: measured points, model curves in both views, n½ marked on the bandwidth view."""
    host_kind, api, detail = key
    alpha, beta = params["alpha"], params["beta"]
    n_half = params.get("n_half", alpha * beta * 1e3)
    color = host_color(host_kind)
    linestyle, marker = api_style(api)
    model_time = alpha + model_sizes / (beta * 1e3)  # µs, n in B, β in GB/s = 10³ B/µs
    ax_time.plot(model_sizes, model_time, color=color, linestyle=linestyle, linewidth=1.5)
    ax_bw.plot(model_sizes, model_sizes / (model_time * 1e3), color=color, linestyle=linestyle,
               linewidth=1.5, label=f"{line_label(host_kind, api, detail)}:  {format_time_us(alpha)},  "
                                    f"{format_number(beta)} GB/s,  {format_bytes(n_half)}")
    if measured_us:
        sizes = sorted(measured_us)
        times = np.array([measured_us[s] for s in sizes])
        ax_time.plot(sizes, times, color=color, marker=marker, linestyle="none", markersize=5, alpha=0.8)
        ax_bw.plot(sizes, np.array(sizes) / (times * 1e3), color=color, marker=marker,
                   linestyle="none", markersize=5, alpha=0.8)
    ax_bw.plot([n_half], [beta / 2], marker="D", markersize=8, color=color, markeredgecolor="black",
               linestyle="none", zorder=5)


def fit_lesson(fits: dict[tuple[str, str, str], dict[str, float]], direction: str,
               roles: Mapping[str, str], rows: Sequence[Row] = ()) -> tuple[str, list[dict]]:
    """Phrase α and n½ of the path a program should use, pinned cudaMemcpyAsync (the fastest
    path when the run has no such fit): the size below which latency, not bandwidth, rules."""
    preferred = ("pinned", "async", "")  # d2d has none: its fastest path
    key = preferred if preferred in fits else max(fits, key=lambda k: fits[k]["beta"])
    host_kind, api, _detail = key
    best = fits[key]
    alpha, beta = best["alpha"], best["beta"]
    n_half = best.get("n_half", alpha * beta * 1e3)
    nbsp = "\u00a0"  # keeps "β = 56 GB/s" on one line when the title wraps
    alpha_text, beta_text = format_time_us(alpha), format_number(beta)
    text = (f"This run: each copy pays a fixed α{nbsp}={nbsp}{alpha_text} ({host_kind}, {api_label(api)}): "
            f"{direction} copies below n½{nbsp}={nbsp}{format_bytes(n_half)} get less than half of "
            f"β{nbsp}={nbsp}{beta_text}{nbsp}GB/s").replace(" µs", f"{nbsp}µs")
    claims = []
    for role, shown in (("alpha", alpha_text), ("beta", beta_text)):
        found = [r for r in select(rows, case="bandwidth", direction=direction, statistic="fit", metric=roles[role])
                 if line_key(r) == key]
        number = shown.split()[0]
        if len(found) == 1 and (role != "alpha" or shown.endswith(" µs")):
            claims.append(claim(number, found[0].value, [cite(found[0])]))  # type: ignore[arg-type]
    return text, claims


# ---------------------------------------------------------------- pinned vs pageable

def speedup_curves(bandwidth: Sequence[Row]) -> dict[tuple[str, str], dict[int, float]]:
    """(direction, API) → size → pinned median ÷ pageable median, where both were measured."""
    ratios = {}
    for direction in ordered((r.get("direction") for r in bandwidth), DIRECTIONS):
        for api in ordered((r.get("api") for r in bandwidth), APIS):
            pinned = by_size(select(plain(bandwidth), direction=direction, api=api, host_kind="pinned"),
                             "bandwidth", "median")
            pageable = by_size(select(plain(bandwidth), direction=direction, api=api, host_kind="pageable"),
                               "bandwidth", "median")
            common = sorted(s for s in set(pinned) & set(pageable) if pageable[s] > 0)
            if common:
                ratios[(direction, api)] = {s: pinned[s] / pageable[s] for s in common}
    return ratios


def speedup_figure(scope: Scope) -> MplFigure:
    """How many times faster pinned memory is than pageable, at each size."""
    gpu = Target.of(scope)
    bandwidth = select(gpu.rows, case="bandwidth")
    ratios = speedup_curves(bandwidth)
    fig, (ax,) = new_figure()
    for (direction, api), ratio in ratios.items():
        sizes = sorted(ratio)
        linestyle, marker = api_style(api)
        ax.plot(sizes, [ratio[s] for s in sizes], color=DIRECTION_COLORS.get(direction, "0.3"),
                linestyle=linestyle, marker=marker, markersize=4, linewidth=1.6,
                label=f"{direction} · {api_label(api)}")
    ax.axhline(1.0, color="0.2", linewidth=0.9)
    ax.annotate("1× = no gain (below: pageable is faster)", xy=(0.99, 1.0), xycoords=("axes fraction", "data"),
                xytext=(0, -3), textcoords="offset points", fontsize=8.5, color="0.25", ha="right", va="top")
    size_axis(ax, [s for r in ratios.values() for s in r], label=SIZE_LABEL)
    all_ratios = [v for r in ratios.values() for v in r.values()]
    ax.set_ylim(0, max(all_ratios) * 1.15)
    ax.set_ylabel("speedup: pinned ÷ pageable median bandwidth (×)")
    text, claims, marked = speedup_lesson(ratios, bandwidth)
    for direction, size, value in marked:  # the points the title quotes
        ax.plot([size], [value], marker="o", markersize=11, markerfacecolor="none", linestyle="none",
                markeredgecolor=DIRECTION_COLORS.get(direction, "0.3"), markeredgewidth=1.6)
        ax.annotate(f"{value:.1f}×", (size, value), xytext=(-9, 0), textcoords="offset points",
                    ha="right", va="center", fontsize=9, fontweight="bold",
                    color=DIRECTION_COLORS.get(direction, "0.3"))
    legend = figure_legend(fig, *axes_handles([ax]), title="direction · API; circled: the title's numbers")
    return finish(fig, text, gpu.subtitle, legend, claims)


def speedup_lesson(ratios: dict[tuple[str, str], dict[int, float]], bandwidth: Sequence[Row]
                   ) -> tuple[str, list[dict], list[tuple[str, int, float]]]:
    """The robust gain: pinned ÷ pageable cudaMemcpyAsync at the largest size both measured, per
    direction (the plateau, not the peak of a noisy curve); the title, its claims and the points."""
    api = "async" if any(a == "async" for _d, a in ratios) else next(iter(ratios))[1]
    parts, claims, marked = [], [], []
    for direction in DIRECTIONS:
        ratio = ratios.get((direction, api))
        if not ratio:
            continue
        size = max(ratio)
        rows = [median_row(bandwidth, "bandwidth", direction=direction, api=api, host_kind=k, size_bytes=size)
                for k in ("pinned", "pageable")]
        text = f"{ratio[size]:.1f}"
        parts.append((direction, size, text))
        marked.append((direction, size, ratio[size]))
        if all(rows):
            claims.append(claim(text, ratio[size], [cite(r) for r in rows], "a/b"))  # type: ignore[arg-type]
    sizes = {size for _d, size, _t in parts}
    at = f"This run at {format_bytes(next(iter(sizes)))}" if len(sizes) == 1 else "This run at the largest size"
    named = [f"{t}× {DIRECTION_NAMES.get(d, d)}" + ("" if len(sizes) == 1 else f" ({format_bytes(s)})")
             for d, s, t in parts]
    text = (f"{at}: pinned memory is {named[0]} faster than pageable"
            + (f", {', '.join(named[1:])}" if named[1:] else "") + f" ({api_label(api)} medians)")
    return text, claims, marked


def median_row(rows: Sequence[Row], metric: str, **criteria: object) -> Row | None:
    """The one median row of `metric` whose columns equal `criteria` (None when not exactly one)."""
    found = [r for r in select(plain(rows), **criteria) if r.metric == metric and r.statistic == "median"]
    return found[0] if len(found) == 1 else None


# ---------------------------------------------------------------- latency

def latency_figure(scope: Scope) -> MplFigure | None:
    """Grouped bars, one panel per small size: what the GPU spends vs what the caller waits."""
    gpu = Target.of(scope)
    data = select(gpu.rows, case="latency")
    sizes = sorted({r.get("size_bytes") for r in data if r.get("size_bytes") is not None and r.metric == "latency"})[:4]
    if not sizes:
        return None
    panel_groups = [latency_groups(select(data, size_bytes=size)) for size in sizes]
    widest = max(len(g) for g in panel_groups)
    apis = {k[2] for g in panel_groups for k, _ in g}
    fig, axes = new_figure(ncols=len(sizes), width=max(8.5, len(sizes) * (0.95 * widest + 0.7) + 0.8),
                           height=5.6, sharey=True)
    ratios: list[float] = []
    for ax, size, groups in zip(axes, sizes, panel_groups):
        ratio = draw_latency_panel(ax, groups, show_api=len(apis) > 1)
        ratios += ratio if size == sizes[0] else []
        ax.set_title(f"one {format_bytes(size)} copy", loc="left")
    axes[0].set_ylabel("time per copy (µs)")
    axes[0].set_ylim(0, axes[0].get_ylim()[1] * 1.08)
    kinds = ordered((k[1] for g in panel_groups for k, _ in g), HOST_KINDS)
    handles = ([Patch(facecolor="0.45", edgecolor="0.2", label="device-timed (CUDA events)"),
                Patch(facecolor="0.85", edgecolor="0.2", hatch="///",
                      label="host-observed (API call → return)")]
               + [Patch(facecolor=host_color(k), label=f"{k} host memory") for k in kinds])
    legend = figure_legend(fig, handles, [h.get_label() for h in handles],
                           title="bars: median, whiskers: min–max"
                                 + ("" if len(apis) > 1 else f"; every copy: {api_label(apis.pop())}"),
                           max_cols=4)
    lesson = (f"For a {format_bytes(sizes[0])} copy the caller waits {min(ratios):.1f}–{max(ratios):.1f}× "
              "as long as the GPU works: launch, synchronisation and staging cost more than the bytes"
              if ratios else "Device time of one small copy: the fixed cost every transfer pays")
    return finish(fig, lesson, gpu.subtitle, legend)


def latency_groups(rows: Sequence[Row]) -> list[tuple[tuple[str, str, str, str], list[Row]]]:
    """(direction, host kind, API, detail) → rows, h2d first, pinned first; only measured ones."""
    groups = [((d,) + key, curve) for d in ordered((r.get("direction") for r in rows), DIRECTIONS)
              for key, curve in curves(select(rows, direction=d))]
    return [g for g in groups if medians_of(g[1], "latency") is not None]


def draw_latency_panel(ax: Axes, groups: Sequence[tuple[tuple[str, str, str, str], list[Row]]],
                       show_api: bool) -> list[float]:
    """Device and host bars per group, the gap written above; returns host ÷ device ratios."""
    width = 0.38
    ratios = []
    for i, ((_direction, host_kind, _api, _detail), curve) in enumerate(groups):
        color = host_color(host_kind)
        device, _ = draw_bar(ax, i - width / 2, curve, "latency", width, color, hatch=None)
        host, top = draw_bar(ax, i + width / 2, curve, "host_latency", width, color, hatch="///")
        if device and host:
            ratios.append(host / device)
            ax.annotate(f"+{format_number(host - device, 2)} µs", (i + width / 2, top),
                        xytext=(0, 9), textcoords="offset points", ha="center", fontsize=7.5, color="0.2")
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels([f"{d}\n{k}" + (f"\n{api_label(a)}" if show_api else "") + (f"\n{e}" if e else "")
                        for (d, k, a, e), _ in groups],
                       fontsize=8)
    ax.grid(False, axis="x")
    return ratios


def medians_of(rows: Sequence[Row], metric: str) -> float | None:
    values = [r.value for r in rows if r.metric == metric and r.statistic == "median"]
    return values[0] if len(values) == 1 else None


def draw_bar(ax: Axes, x: float, rows: Sequence[Row], metric: str, width: float, color: str,
             hatch: str | None) -> tuple[float | None, float]:
    """One bar (median) with min–max whiskers; returns (median or None, top of the whisker)."""
    median = medians_of(rows, metric)
    if median is None:
        return None, 0.0
    low = [r.value for r in rows if r.metric == metric and r.statistic == "min"]
    high = [r.value for r in rows if r.metric == metric and r.statistic == "max"]
    error = [[median - low[0]], [high[0] - median]] if low and high else None
    ax.bar(x, median, width, color=color, alpha=0.55 if hatch else 1.0, hatch=hatch,
           edgecolor="0.2", linewidth=0.6, yerr=error, capsize=3, error_kw={"linewidth": 0.9})
    return median, max([median] + high)


# ---------------------------------------------------------------- allocation

def alloc_figure(scope: Scope) -> MplFigure | None:
    """Cost of allocating (and pinning) a buffer, per call and per MiB, vs size."""
    gpu = Target.of(scope)
    data = select(gpu.rows, case="alloc")
    fig, (ax_call, ax_mib) = new_figure(ncols=2, width=13.5, height=5.4)
    drawn = False
    for (host_kind, api, detail), curve in curves(data):
        label = alloc_label(api or host_kind) + (f" ({detail})" if detail else "")
        color = ALLOC_API_COLORS.get(api, host_color(host_kind))
        style = {"color": color, "marker": "D" if api in ALLOC_API_COLORS else "o"}
        drawn |= plot_band(ax_call, curve, "time_per_call", linestyle="-", label=f"{label}: allocate", **style)
        plot_band(ax_call, curve, "release_time_per_call", linestyle="--", label=f"{label}: release",
                  band=False, **{**style, "marker": "x"})
        plot_band(ax_mib, curve, "time_per_mib", linestyle="-", label=f"{label}: allocate", **style)
    if not drawn:
        return None
    copy_us_per_mib = pinned_copy_us_per_mib(gpu.rows)
    if copy_us_per_mib:
        reference_line(ax_mib, copy_us_per_mib,
                       f"copying 1 MiB host→device from pinned memory: {format_time_us(copy_us_per_mib)}",
                       color="#0072B2")
    sizes = [r.get("size_bytes") for r in data if r.get("size_bytes")]
    for ax in (ax_call, ax_mib):
        size_axis(ax, sizes, label="buffer size (log₂ scale)", max_ticks=6)
        ax.set_yscale("log")
    pool = pool_speedups(data)
    if pool:
        mark_pool_speedup(ax_call, data, pool)
    ax_call.set_ylabel("time per call (µs, log scale)")
    ax_call.set_title(per_call_title(pool), loc="left")
    ax_mib.set_ylabel("time per MiB allocated (µs/MiB, log scale)")
    ax_mib.set_title(per_mib_title(data, copy_us_per_mib), loc="left")
    legend = figure_legend(fig, *axes_handles([ax_call]), max_cols=3,
                           title=band_note(data) + "; dashed: the matching free / unregister")
    return finish(fig, *_text_claims(alloc_lesson(gpu.rows, data), gpu.subtitle, legend))


def alloc_label(api: str) -> str:
    """What an allocation curve is: the call, and for the pool what makes it fast."""
    return "cudaMallocAsync (cached pool)" if api == "cudaMallocAsync" else api


def pool_speedups(data: Sequence[Row]) -> dict[int, float]:
    """size → cudaMalloc ÷ cudaMallocAsync median time per call, where both were measured."""
    plain = by_size(select(data, api="cudaMalloc"), "time_per_call", "median")
    pool = by_size(select(data, api="cudaMallocAsync"), "time_per_call", "median")
    return {s: plain[s] / pool[s] for s in sorted(set(plain) & set(pool)) if pool[s] > 0}


def mark_pool_speedup(ax: Axes, data: Sequence[Row], speedups: dict[int, float]) -> None:
    """An arrow from cudaMalloc down to the pool at the largest size both measured, with the ratio."""
    size = max(speedups)
    plain = by_size(select(data, api="cudaMalloc"), "time_per_call", "median")[size]
    pool = by_size(select(data, api="cudaMallocAsync"), "time_per_call", "median")[size]
    ax.annotate("", xy=(size, pool), xytext=(size, plain),
                arrowprops={"arrowstyle": "<->", "color": ALLOC_API_COLORS["cudaMallocAsync"], "linewidth": 1.2})
    ax.annotate(f"{format_number(speedups[size], 2)}×", xy=(size, (plain * pool) ** 0.5), xytext=(-5, 0),
                textcoords="offset points", ha="right", va="center", fontsize=9, fontweight="bold",
                color=ALLOC_API_COLORS["cudaMallocAsync"])


def per_call_title(pool: dict[int, float]) -> str:
    """Where the cached pool beats cudaMalloc, and where it does not, when both were measured."""
    if not pool:
        return "per call: grows with size — the driver locks and maps every page"
    faster = {s: v for s, v in pool.items() if v >= 1.05}
    if not faster:
        return "per call: the cached cudaMallocAsync pool is no faster than cudaMalloc here"
    low, high = min(faster.values()), max(faster.values())
    gain = f"{format_number(low, 2)}×" if high < 1.5 * low else f"{format_number(low, 2)}–{format_number(high, 2)}×"
    where = (f"at {format_bytes(min(faster))}" if len(faster) == 1 else
             f"from {format_bytes(min(faster))} up" if max(faster) == max(pool) else
             f"at {format_bytes(min(faster))}–{format_bytes(max(faster))}")
    text = f"per call: cudaMallocAsync from a cached pool is {gain}\nfaster than cudaMalloc {where}"
    slower = {s: v for s, v in pool.items() if v < 1.05}
    if slower:
        size = min(slower)
        text += (f"; at {format_bytes(size)} it is not ({format_number(slower[size], 2)}×)" if slower[size] >= 0.95
                 else f"; at {format_bytes(size)} cudaMalloc is faster ({format_number(1 / slower[size], 2)}×)")
    return text


def per_mib_title(data: Sequence[Row], copy_us_per_mib: float | None) -> str:
    """Compare pinning a MiB with copying it at the largest and the smallest size measured."""
    per_mib = by_size(select(data, api="cudaMallocHost"), "time_per_mib", "median")
    if not per_mib or not copy_us_per_mib:
        return "per MiB: the cost of each allocated MiB"
    large, small = max(per_mib), min(per_mib)
    ratio = per_mib[large] / copy_us_per_mib
    text = f"per MiB: pinning {format_bytes(large)} costs {ratio:.0f}× copying it"
    if small != large:
        cheap = per_mib[small] / copy_us_per_mib
        text += (f",\npinning {format_bytes(small)} only {format_number(cheap, 2)}× (cheaper than the copy)" if cheap < 1
                 else f",\npinning {format_bytes(small)} {format_number(cheap, 2)}× too")
    return text


def pinned_copy_us_per_mib(rows: Sequence[Row]) -> float | None:
    """µs to copy 1 MiB h2d from pinned memory at the largest measured size (pinning's yardstick)."""
    bandwidth = largest_size_median(select(rows, case="bandwidth", direction="h2d", api="async"),
                                    "bandwidth", "pinned")
    return (1 << 20) / (bandwidth * 1e3) if bandwidth else None


def alloc_lesson(rows: Sequence[Row], data: Sequence[Row]) -> tuple[str, list[dict]]:
    """'Pinning is not free', with this run's numbers of the largest pinned allocation, and its claims."""
    pinned = {r["size_bytes"]: r for r in select(data, api="cudaMallocHost")
              if r.metric == "time_per_call" and r.statistic == "median" and r.get("size_bytes")}
    copy_row = largest_size_row(select(rows, case="bandwidth", direction="h2d", api="async"), "bandwidth", "pinned")
    if not pinned:
        return "Allocation is not free: its cost grows with the buffer size", []
    size = max(pinned)
    shown, unit = format_time_us(pinned[size].value).split()
    scale = TIME_SCALES[unit]
    text = f"This run: pinning is not free: cudaMallocHost of {format_bytes(size)} takes {shown} {unit}"
    claims = [claim(shown, pinned[size].value / scale, [cite(pinned[size])], f"a/{scale:g}")]
    if copy_row:
        copies = pinned[size].value / (size / (copy_row.value * 1e3))
        text += f", as long as {copies:.0f} pinned copies of it — allocate once, reuse the buffer"
        claims.append(claim(f"{copies:.0f}", copies, [cite(pinned[size]), cite(copy_row)], f"a*b*1000/{size}"))
    return text, claims


# ---------------------------------------------------------------- all GPUs at once

def all_gpus_figure(scope: Scope) -> MplFigure | None:
    """Per direction: each GPU copying alone, the slowest GPU and the total while all copy at once,
    against each link's peak and the links added up (the case spanning the most GPUs)."""
    run, rows = scope.run, scope.rows
    cases = select(rows, case="bandwidth_all_gpus")
    most = max((r.gpus or 0 for r in cases), default=0)
    together = [r for r in cases if (r.gpus or 0) == most]
    directions = ordered((r.get("direction") for r in together if r.metric == "bandwidth" and r.statistic == "median"),
                         DIRECTIONS)
    if not directions:
        return None
    devices = run.row_devices(together[0])
    gpus = run.row_gpus(together[0])
    fig, axes = new_figure(ncols=len(directions), width=max(8.5, len(directions) * (0.9 * len(devices) + 3.4)),
                           height=5.8, sharey=True)
    results = {d: draw_all_gpus_panel(ax, rows, select(together, direction=d), devices, gpus)
               for ax, d in zip(axes, directions)}
    axes[0].set_ylabel("bandwidth (GB/s, 1 GB = 10⁹ B)")
    axes[0].set_ylim(0, axes[0].get_ylim()[1] * 1.1)
    handles = [Patch(facecolor=ALL_GPU_COLORS["alone"], edgecolor="0.2", label="one GPU copying alone"),
               Patch(facecolor=ALL_GPU_COLORS["alone"], alpha=0.5, hatch="///", edgecolor="0.2",
                     label="slowest GPU while all copy"),
               Patch(facecolor=ALL_GPU_COLORS["together"], edgecolor="0.2", label="all GPUs at once, total"),
               Line2D([], [], **REFERENCE_LINE, label="PCIe peak: one link, links added up"),
               Line2D([], [], color=ALL_GPU_COLORS["together"], linestyle="--", linewidth=1.2,
                      label="GPUs alone, added up")]
    legend = figure_legend(fig, handles, [h.get_label() for h in handles], max_cols=3,
                           title="pinned host memory · cudaMemcpyAsync, one stream per GPU; "
                                 "bars: median, whiskers: min–max")
    return finish(fig, all_gpus_lesson(results, len(devices)), run.subtitle(), legend)


def draw_all_gpus_panel(ax: Axes, rows: Sequence[Row], together: Sequence[Row], devices: Sequence[int],
                        gpus: Sequence[GpuInfo | None]) -> tuple[float | None, float | None]:
    """One direction's bars and limits; returns (total at once, alone bandwidths added up)."""
    direction, size = together[0].get("direction"), together[0].get("size_bytes")
    width = 0.62
    alone = []
    for i, device in enumerate(devices):
        solo = select(plain(rows), case="bandwidth", direction=direction, host_kind="pinned", api="async",
                      device=device, size_bytes=size)
        value, _ = draw_bar(ax, i, solo, "bandwidth", width, ALL_GPU_COLORS["alone"], hatch=None)
        alone.append(value)
        peak = gpus[i].pcie_peak_gbps if gpus[i] else None
        if peak:
            ax.hlines(peak, i - 0.45, i + 0.45, **REFERENCE_LINE)
    peaks = [g.pcie_peak_gbps if g else None for g in gpus]
    for i, peak in enumerate(peaks):
        if peak and (i == 0 or len(set(peaks)) > 1):  # alike links are labelled once
            ax.annotate(f"{'one link' if len(set(peaks)) == 1 else 'link'}: {format_number(peak)} GB/s", (i, peak),
                        xytext=(0, 3), textcoords="offset points", ha="center", va="bottom", fontsize=8, color="0.25")
    slowest_x, total_x = len(devices) + 0.2, len(devices) + 1.4
    draw_bar(ax, slowest_x, together, "bandwidth_slowest", width, ALL_GPU_COLORS["alone"], hatch="///")
    total, top = draw_bar(ax, total_x, together, "bandwidth", width, ALL_GPU_COLORS["together"], hatch=None)
    links = [g.pcie_peak_gbps for g in gpus if g and g.pcie_peak_gbps]
    if len(links) == len(gpus):
        link_sum = sum(links)
        ax.hlines(link_sum, total_x - 0.45, total_x + 0.45, **REFERENCE_LINE)
        ax.annotate(f"{len(links)} links: {format_number(link_sum)} GB/s", (total_x, link_sum), xytext=(0, 3),
                    textcoords="offset points", ha="center", va="bottom", fontsize=8, color="0.25")
    measured = [v for v in alone if v is not None]
    alone_sum = sum(measured) if measured and len(measured) == len(alone) else None
    if alone_sum and total:
        ax.hlines(alone_sum, total_x - 0.45, total_x + 0.45, color=ALL_GPU_COLORS["together"],
                  linestyle="--", linewidth=1.2)
        ax.annotate(f"alone, added: {format_number(alone_sum)} GB/s", (total_x, alone_sum), xytext=(0, -3),
                    textcoords="offset points", ha="center", va="top", fontsize=8,
                    color=ALL_GPU_COLORS["together"])
        ax.annotate(f"{total / alone_sum:.0%} of that", (total_x, top), xytext=(0, 4),
                    textcoords="offset points", ha="center", va="bottom", fontsize=8.5, fontweight="bold")
    ax.set_xticks(list(range(len(devices))) + [slowest_x, total_x])
    ax.set_xticklabels([f"GPU {d}\nalone" for d in devices] + ["slowest GPU\nwhile all copy",
                                                                f"all {len(devices)}\nat once"], fontsize=8)
    ax.grid(False, axis="x")
    ax.set_title(f"{direction}: {DIRECTION_NAMES.get(direction, direction)}, "
                 f"{format_bytes(size or 0)} per GPU", loc="left")
    return total, alone_sum


def all_gpus_lesson(results: dict[str, tuple[float | None, float | None]], count: int) -> str:
    """Whether the GPUs keep their speed together or share the host's bandwidth, per direction."""
    shares = {d: (total, total / alone) for d, (total, alone) in results.items() if total and alone}
    if not shares:
        return f"{count} GPUs copying to and from host memory at once"
    nbsp = "\u00a0"  # keeps "72.8 GB/s" on one line when the title wraps
    detail = " and ".join(f"{share:.0%} for {d} ({format_number(total)}{nbsp}GB/s)"
                          for d, (total, share) in shares.items())
    shared = [d for d, (_total, share) in shares.items() if share < SCALING_LIMIT]
    if not shared:
        return (f"{count} GPUs copying at once each keep their full speed: together they reach {detail} "
                "of their alone bandwidths added up: no shared bottleneck")
    if len(shared) == len(shares):
        return (f"{count} GPUs copying at once share the host's bandwidth: together they reach only {detail} "
                "of their alone bandwidths added up")
    scaling = [d for d in shares if d not in shared]
    return (f"{count} GPUs at once share the host's bandwidth for {', '.join(shared)} but not for "
            f"{', '.join(scaling)}: together they reach {detail} of their alone bandwidths added up")


# ---------------------------------------------------------------- what is drawn, and when

FIGURES = (
    [Figure(f"copy_bandwidth_{d}", per_device=True, draw=partial(bandwidth_figure, direction=d),
            needs=[Need("bandwidth", "bandwidth", where={"direction": d})]) for d in DIRECTIONS]
    + [Figure(f"copy_fit_{d}", per_device=True, draw=partial(fit_figure, direction=d),
              needs=[Need("bandwidth", None, where={"direction": d}, statistic="fit")])
       for d in DIRECTIONS]
    + [Figure("copy_pinned_speedup", per_device=True, draw=speedup_figure,
              needs=[Need("bandwidth", "bandwidth", where={"host_kind": kind}) for kind in ("pinned", "pageable")]),
       Figure("copy_latency", per_device=True, draw=latency_figure, needs=[Need("latency", "latency")]),
       Figure("copy_alloc", per_device=True, draw=alloc_figure, needs=[Need("alloc", "time_per_call")]),
       Figure("copy_bandwidth_all_gpus", min_gpus=2, draw=all_gpus_figure,
              needs=[Need("bandwidth_all_gpus", "bandwidth")])]
)
