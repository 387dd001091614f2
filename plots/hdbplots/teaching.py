"""Teaching figures about the whole run, drawn by every run that has their data (docs/teaching.md).

  ladder_moving_data   the ladder of moving data: HBM copy, NVLink P2P, PCIe pinned, PCIe
                       pageable and host-staged P2P, each at its largest size on one log axis
                       against its own physical limit, and what one 1 B copy costs on each path

Every limit comes from the run (meta.json through run.Run: the GPU's HBM peak, its PCIe link,
its NVLink links × per-link rate; the row's `traffic` class says which limit a figure is held
to, as `hdbench check` does); none is written here. A rung the run did not measure (no NVLink on
a PCIe-only node, no pair on a one-GPU node) is left out and the title says what is there. Like
the families' figures it is planned (plan()) and drawn by plot_run; it belongs to no family, so
figures.json lists it under `teaching`.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Sequence

import numpy as np
from matplotlib.figure import Figure as MplFigure
from matplotlib.patches import Patch

from .claims import cite, claim
from .drawing import HOST_KIND_COLORS, REFERENCE_LINE, figure_legend, finish, new_figure
from .figures import Figure, Planned, Scope, figure_devices
from .formatting import format_bytes, format_number
from .results_csv import Row
from .run import GpuInfo, Run

FAMILY = "teaching"
LADDER = "ladder_moving_data"
FIGURE_NAMES = (LADDER,)  # what plan() can draw: docs/plots.md's table is tested against it
COLORS = {"hbm": "#882255", "nvlink": "#009E73", "pinned": HOST_KIND_COLORS["pinned"],
          "pageable": HOST_KIND_COLORS["pageable"], "staged": "#56B4E9", "loopback": "#56B4E9"}


@dataclass(frozen=True)
class Rung:
    """One path of the ladder: its bandwidth row, its limit, and its 1 B latency rows."""
    key: str
    label: str
    bandwidth: Row
    limit: float | None
    limit_label: str
    latency: Row | None = None
    host_latency: Row | None = None


def plan(run: Run) -> list[Planned]:
    """The ladder when the run measured a pinned h2d copy (every copy run does)."""
    rows = tuple(run.ok_rows("copy")) + tuple(run.ok_rows("p2p"))
    device = ladder_device(run, rows)
    if device is None:
        return []
    figure = Figure(LADDER, needs=(), draw=partial(ladder_figure, device=device))
    return [Planned(LADDER, FAMILY, figure, Scope(run, rows))]


def ladder_device(run: Run, rows: Sequence[Row]) -> int | None:
    """The GPU the copy rungs are read on: the lowest-numbered one with a pinned h2d copy (among
    the tiers' representatives when meta.json has them)."""
    chosen = figure_devices(run.meta)
    devices = sorted({r.device for r in rows if r.family == "copy" and r.case == "bandwidth"
                      and r.get("direction") == "h2d" and r.get("host_kind") == "pinned"
                      and r.metric == "bandwidth" and r.statistic == "median" and r.device is not None})
    preferred = [d for d in devices if chosen is None or d in chosen]
    return (preferred or devices or [None])[0]


def largest(rows: Sequence[Row], metric: str = "bandwidth", **criteria: object) -> Row | None:
    """The median row of `metric` at the largest size among rows whose columns equal `criteria`
    and that set no parameter beyond them, the size and the pair (the plain curve)."""
    allowed = set(criteria) | {"size_bytes", "src", "dst", "streams", "chunk_bytes"}
    found = [r for r in rows if r.metric == metric and r.statistic == "median" and r.get("size_bytes")
             and all(r.get(k) == v for k, v in criteria.items()) and set(r.params()) <= allowed]
    return max(found, key=lambda r: (r["size_bytes"], r.value)) if found else None


def best_pair(rows: Sequence[Row], api: str, direction: str = "uni") -> Row | None:
    """The fastest pair's row at the largest size of a p2p method."""
    found = [r for r in rows if r.family == "p2p" and r.case == "bandwidth" and r.get("api") == api
             and r.get("direction") == direction and r.metric == "bandwidth" and r.statistic == "median"]
    if not found:
        return None
    size = max(r["size_bytes"] for r in found)
    return max((r for r in found if r["size_bytes"] == size), key=lambda r: r.value)


def latency_rows(rows: Sequence[Row], **criteria: object) -> tuple[Row | None, Row | None]:
    """(device-timed, host-observed) median rows of a 1 B latency case."""
    found = {r.metric: r for r in rows if r.case == "latency" and r.get("size_bytes") == 1 and r.statistic == "median"
             and all(r.get(k) == v for k, v in criteria.items())}
    return found.get("latency"), found.get("host_latency")


def pcie_limit(gpu: GpuInfo | None) -> tuple[float | None, str]:
    peak = gpu.pcie_peak_gbps if gpu else None
    return peak, (f"{gpu.link} peak per direction: {format_number(peak)} GB/s" if gpu and peak and gpu.link
                  else "PCIe peak unknown (not in meta.json)")


def rungs(run: Run, rows: Sequence[Row], device: int) -> list[Rung]:
    """Every path the run measured, fastest limit first."""
    copy = [r for r in rows if r.family == "copy" and r.device == device]
    gpu = run.gpu_info(device, next((r.gpu_uuid for r in copy if r.gpu_uuid), ""))
    pcie, pcie_text = pcie_limit(gpu)
    found: list[Rung] = []
    d2d = largest([r for r in copy if r.case == "bandwidth"], direction="d2d", host_kind="device", api="async")
    if d2d:
        hbm = gpu.hbm_peak_gbps if gpu else None
        found.append(Rung("hbm", f"HBM copy, d2d cudaMemcpyAsync, {format_bytes(d2d['size_bytes'])}\n"
                                 f"(reads and writes each byte: {format_number(2 * d2d.value)} GB/s of HBM traffic)",
                          d2d, hbm / 2 if hbm else None,
                          f"½ HBM peak (copy = read + write): {format_number(hbm / 2)} GB/s" if hbm
                          else "HBM peak unknown (not in meta.json)"))
    peer = best_pair(rows, "ce_peer")
    if peer:
        pair_gpus = run.row_gpus(peer)
        rate = run.nvlink_bus_rate(pair_gpus) if all(pair_gpus) else None
        lat, host = latency_rows([r for r in rows if r.family == "p2p"], api="ce_peer", direction="uni",
                                 src=peer.get("src"), dst=peer.get("dst"))
        limit_text = (f"NVLink: {rate[1].nvlink_links} × {format_number(rate[1].nvlink_data_per_link_gbps or 0, 4)} GB/s "
                      f"= {format_number(rate[0])} GB/s per direction" if rate else "NVLink rate unknown (not in meta.json)")
        found.append(Rung("nvlink", f"NVLink P2P, cudaMemcpyPeerAsync GPU {peer.get('src')} → {peer.get('dst')}, "
                                    f"{format_bytes(peer['size_bytes'])}", peer, rate[0] if rate else None,
                          limit_text, lat, host))
    for kind in ("pinned", "pageable"):
        row = largest([r for r in copy if r.case == "bandwidth"], direction="h2d", host_kind=kind, api="async")
        if row:
            lat, host = latency_rows(copy, direction="h2d", host_kind=kind, api="async")
            found.append(Rung(kind, f"PCIe {kind} h2d, cudaMemcpyAsync, {format_bytes(row['size_bytes'])}",
                              row, pcie, pcie_text, lat, host))
    staged = best_pair(rows, "staged")
    loop = None if staged else best_pair([r for r in rows if r.get("src") == device], "staged", "loopback")
    if staged or loop:
        row = staged or loop
        gpus = run.row_gpus(row) if staged else [gpu]
        limit = run.pcie_limit(gpus)  # the slower link of the pair, as p2p's figures and report
        slowest = limit[0] if limit else None
        lat, host = latency_rows([r for r in rows if r.family == "p2p"], api="staged", direction="uni",
                                 src=row.get("src"), dst=row.get("dst")) if staged else (None, None)
        what = (f"host-staged P2P GPU {row.get('src')} → {row.get('dst')}" if staged
                else f"host-staged loopback GPU {row.get('src')} → host → itself")
        found.append(Rung("staged" if staged else "loopback", f"{what}, {format_bytes(row['size_bytes'])}", row,
                          slowest, (f"PCIe peak per direction, slowest link: {format_number(slowest)} GB/s"
                                    if slowest and staged else pcie_text), lat, host))
    return found


def ladder_figure(scope: Scope, device: int) -> MplFigure | None:
    run = scope.run
    found = rungs(run, scope.rows, device)
    if not found:
        return None
    fig, (ax_bw, ax_lat) = new_figure(ncols=2, width=15.0, height=2.6 + 0.95 * len(found))
    fig.axes[0].get_gridspec().set_width_ratios([2.6, 1])
    y = np.arange(len(found))[::-1]
    for yi, rung in zip(y, found):
        color = COLORS[rung.key]
        ax_bw.barh(yi, rung.bandwidth.value, height=0.56, color=color, edgecolor="0.25", linewidth=0.6, zorder=2)
        text = f"{format_number(rung.bandwidth.value)} GB/s"
        if rung.limit:
            ax_bw.vlines(rung.limit, yi - 0.42, yi + 0.42, zorder=4, **{**REFERENCE_LINE, "color": "0.1", "linewidth": 2.0})
            ax_bw.annotate(rung.limit_label, (rung.limit, yi + 0.42), xytext=(0, 1), textcoords="offset points",
                           ha="right", va="bottom", fontsize=7.5, color="0.25")
            text += f" = {rung.bandwidth.value / rung.limit:.0%} of its limit"
        ax_bw.annotate(text, (max(rung.bandwidth.value, rung.limit or 0), yi), xytext=(6, 0), textcoords="offset points",
                       ha="left", va="center", fontsize=8.5, fontweight="bold", zorder=5)
        for metric_row, offset, hatch in ((rung.latency, -0.15, None), (rung.host_latency, 0.15, "///")):
            if metric_row is not None:
                ax_lat.barh(yi + offset, metric_row.value, height=0.28, color=color, hatch=hatch,
                            alpha=0.55 if hatch else 1.0, edgecolor="0.25", linewidth=0.6, zorder=2)
                ax_lat.annotate(f"{format_number(metric_row.value, 2)} µs", (metric_row.value, yi + offset),
                                xytext=(3, 0), textcoords="offset points", ha="left", va="center", fontsize=7.5)
        if rung.latency is None and rung.host_latency is None:
            ax_lat.annotate("1 B not measured", (0.03, yi), xycoords=("axes fraction", "data"), ha="left",
                            va="center", fontsize=8, color="0.45")
    values = [r.bandwidth.value for r in found] + [r.limit for r in found if r.limit]
    ax_bw.set_xscale("log")
    ax_bw.set_xlim(min(values) / 2.5, max(values) * 6)
    ax_bw.set_yticks(y, [r.label for r in found], fontsize=8.5)
    ax_bw.set_ylim(-0.7, len(found) - 0.3)
    ax_bw.grid(False, axis="y")
    ax_bw.set_xlabel("bandwidth at the largest size (GB/s, log scale; 1 GB = 10⁹ B)")
    ax_bw.set_title("bandwidth: each bar against its own physical limit (black dotted)", loc="left")
    times = [t.value for r in found for t in (r.latency, r.host_latency) if t is not None]
    ax_lat.set_xscale("log")
    if times:
        ax_lat.set_xlim(min(times) / 2, max(times) * 6)
    ax_lat.set_yticks(y, [""] * len(found))
    ax_lat.set_ylim(-0.7, len(found) - 0.3)
    ax_lat.grid(False, axis="y")
    ax_lat.set_xlabel("time of one 1 B copy (µs, log scale)")
    ax_lat.set_title("latency: a 1 B copy", loc="left")
    handles = [Patch(facecolor="0.45", edgecolor="0.25", label="device-timed (CUDA events)"),
               Patch(facecolor="0.85", edgecolor="0.25", hatch="///", label="host-observed (call → return)")]
    legend = figure_legend(fig, handles, [h.get_label() for h in handles],
                           title="medians of the repetitions; latency bars:", max_cols=2)
    text, claims = ladder_lesson(found)
    subtitle = run.subtitle() + (f"  ·  copies on GPU {device}" if len(run.node.gpus) > 1 else "")
    return finish(fig, text, subtitle, legend, claims)


def ladder_lesson(found: Sequence[Rung]) -> tuple[str, list[dict]]:
    """Each rung's bandwidth, how far the top is above the pinned PCIe rung (like for like: HBM
    traffic against PCIe bandwidth), and the range of the 1 B costs; the title and its claims."""
    by_key = {r.key: r for r in found}
    names = {"hbm": "HBM copy", "nvlink": "NVLink", "pinned": "PCIe pinned", "pageable": "pageable",
             "staged": "host-staged P2P", "loopback": "host-staged loopback"}
    claims: list[dict] = []
    parts = []
    for rung in found:
        shown = format_number(rung.bandwidth.value)
        parts.append(f"{names[rung.key]} {shown}")
        claims.append(claim(shown, rung.bandwidth.value, [cite(rung.bandwidth)]))
    text = "The ladder of moving data (GB/s): " + ", ".join(parts)
    if "hbm" in by_key and "pinned" in by_key:
        hbm, pinned = by_key["hbm"].bandwidth, by_key["pinned"].bandwidth
        ratio = 2 * hbm.value / pinned.value
        shown = f"{ratio:.0f}"
        text += f"; HBM carries {shown}× what PCIe does"
        claims.append(claim(shown, ratio, [cite(hbm), cite(pinned)], "2*a/b"))
    times = [t for r in found for t in (r.latency,) if t is not None]
    if times:
        low, high = min(times, key=lambda t: t.value), max(times, key=lambda t: t.value)
        low_text, high_text = format_number(low.value, 2), format_number(high.value, 2)
        span = low_text if low_text == high_text else f"{low_text}–{high_text}"
        text += f", yet 1 B costs {span} µs on every path measured"
        claims.append(claim(low_text, low.value, [cite(low)]))
        if low_text != high_text:
            claims.append(claim(high_text, high.value, [cite(high)]))
    return text, claims
