"""Figures of the `p2p` family: what a direct GPU↔GPU path buys over staging through the host.

Figures (FIGURES at the end says when each is drawn; each title states what the data shows):
  p2p_bandwidth_pairs   bandwidth vs size per method for the best and the worst pair, with the
                        pair's NVLink line rate and its PCIe limit (the slower link of the two) drawn
  p2p_heatmaps          one pair matrix per method at the largest size (row = source GPU)
  p2p_topology          the topology as found: link, peak, peer access, rank, atomics per pair
                        (meta.json node.topology; the measured pairs with "unknown" links without it)
  p2p_chunk_sweep       the staged pipeline's bandwidth vs chunk size, against the pair's PCIe limit
  p2p_loopback          one GPU to itself through host memory (the only path a one-GPU node has),
                        against each GPU's own PCIe link
  p2p_latency           one small transfer per method: device-timed vs host-observed
"""
from __future__ import annotations

import math
import textwrap
from typing import Any, Mapping, Sequence

import numpy as np
from matplotlib.colors import LogNorm
from matplotlib.figure import Figure as MplFigure

from .drawing import axes_handles, figure_legend, finish, new_figure, reference_line, size_axis
from .claims import cite, claim
from .figures import Figure, Need, Scope
from .formatting import format_bytes, format_number, format_time_us
from .results_csv import Row
from .run import Run

# Transfer sizes run on log₂ axes, and the axis says so.
SIZE_LABEL = "transfer size (bytes, log₂ scale)"
METHODS = ("ce_peer", "sm_write", "sm_read", "staged", "ce_no_peer")
METHOD_LABELS = {
    "ce_peer": "cudaMemcpyPeerAsync, peer access on",
    "ce_no_peer": "cudaMemcpyPeerAsync, peer access off",
    "staged": "host-staged pipeline (best chunk)",
    "sm_read": "SM kernel reads the peer",
    "sm_write": "SM kernel writes the peer",
}
METHOD_COLORS = {"ce_peer": "#0072B2", "ce_no_peer": "#E69F00", "staged": "#009E73",
                 "sm_read": "#CC79A7", "sm_write": "#D55E00"}
METHOD_MARKERS = {"ce_peer": "o", "ce_no_peer": "s", "staged": "D", "sm_read": "^", "sm_write": "v"}
METHOD_SHORT = {"ce_peer": "ce_peer: cudaMemcpyPeerAsync, peer on",
                "ce_no_peer": "ce_no_peer: peer access off",
                "staged": "staged: through host memory", "sm_read": "sm_read: kernel reads peer",
                "sm_write": "sm_write: kernel writes peer"}
PAIR = {"direction": "uni"}          # one GPU to another, one direction
LOOPBACK = {"direction": "loopback"}  # one GPU to itself through host memory


# ---------------------------------------------------------------- reading

def sized(rows: Sequence[Row]) -> list[Row]:
    """The rows that carry a size (every measured p2p row)."""
    return [r for r in rows if r.get("size_bytes") is not None]


def uni_rows(rows: Sequence[Row]) -> list[Row]:
    return [r for r in sized(rows) if r.case == "bandwidth" and r.get("direction") == PAIR["direction"]
            and r.metric == "bandwidth"]


def medians(rows: Sequence[Row], **match: Any) -> dict[int, float]:
    """size → median of the rows whose columns equal every given value."""
    return {r["size_bytes"]: r.value for r in rows if r.statistic == "median"
            and all(r.get(k) == v for k, v in match.items())}


def pair_link(topology: Mapping[str, Any], src: int, dst: int) -> dict:
    for pair in topology.get("pairs") or []:
        if str(pair.get("src")) == str(src) and str(pair.get("dst")) == str(dst):
            return pair.get("link") or {}
    return {}


# A path through host memory: (src, dst, the row's gpu_uuid); a loopback has src == dst.
HostPath = tuple[Any, Any, str]


def pcie_limits(ax: Any, run: Run, paths: Sequence[HostPath], one_direction: bool = False) -> list[float]:
    """Draw the PCIe limit of each path through host memory and return the rates drawn.

    A path is limited by the slower PCIe link of its GPUs (Run.pcie_limit: the staged pipeline
    of a pair copies over both links, a loopback over its GPU's own), the rule the p2p report
    rates % of peak with. Paths with the same limit share one line; when they differ, or a pair's
    two links differ, the label says whose link it is. A path whose GPU or link meta.json does not
    give draws none."""
    groups: dict[tuple[float, str], list[tuple[str, bool]]] = {}
    for src, dst, uuids in paths:
        gpus = run.pair_gpus(src, dst, uuids)
        limit = run.pcie_limit(gpus)
        if limit is None:
            continue
        rate, slowest = limit
        name = f"GPU {src}" if src == dst else f"GPU {src} → {dst}"
        mixed = len({g.pcie_peak_gbps for g in gpus if g}) > 1
        groups.setdefault((rate, slowest.link or "PCIe"), []).append(
            (f"{name}: GPU {slowest.index}'s, the slower link" if mixed else name, mixed))
    drawn = []
    for (rate, link), names in groups.items():
        text = f"{link}{', one direction' if one_direction else ''}: {rate:.1f} GB/s"
        if len(groups) > 1 or any(mixed for _, mixed in names):
            text += f" ({'; '.join(name for name, _ in names)})"
        reference_line(ax, rate, text)
        drawn.append(rate)
    return drawn


# ---------------------------------------------------------------- best and worst pair

def rank_pairs(uni: Sequence[Row]) -> list[tuple[int, int]]:
    """Pairs from fastest to slowest by the fastest direct method's median at the largest size."""
    largest = max(r["size_bytes"] for r in uni if r.statistic == "median")
    score: dict[tuple[int, int], float] = {}
    for r in uni:
        if r.statistic == "median" and r["size_bytes"] == largest and r.get("api") != "staged":
            score[(r.get("src"), r.get("dst"))] = max(score.get((r.get("src"), r.get("dst")), 0.0), r.value)
    if not score:
        score = {(r.get("src"), r.get("dst")): r.value for r in uni if r.statistic == "median" and r["size_bytes"] == largest}
    return sorted(score, key=lambda p: -score[p])


def pairs_figure(scope: Scope) -> MplFigure | None:
    run, uni, topology = scope.run, uni_rows(scope.rows), scope.run.node.topology
    if not uni:
        return None
    ranked = rank_pairs(uni)
    shown = [ranked[0]] + ([ranked[-1]] if len(ranked) > 1 else [])
    fig, axes = new_figure(ncols=len(shown), width=7.0 * len(shown), sharey=True)
    top = 0.0
    for ax, (src, dst), role in zip(axes, shown, ("best pair", "worst pair")):
        pair = [r for r in uni if r.get("src") == src and r.get("dst") == dst]
        for api in METHODS:
            data = medians(pair, api=api)
            if not data:
                continue
            sizes = sorted(data)
            ax.plot(sizes, [data[s] for s in sizes], color=METHOD_COLORS[api], marker=METHOD_MARKERS[api],
                    markersize=4, linewidth=1.6, label=METHOD_LABELS[api])
            top = max(top, max(data.values()))
        link = pair_link(topology, src, dst)
        if link.get("peak_GBps"):
            peak = float(link["peak_GBps"])
            links = link.get("links")
            per_link = f"{format_number(peak / float(links))} GB/s" if links else "?"
            reference_line(ax, peak, f"NVLink data rate: {links} × {per_link} = {format_number(peak)} GB/s per direction")
            top = max(top, peak)
        top = max([top] + pcie_limits(ax, run, [(src, dst, pair[0].gpu_uuid)]))
        size_axis(ax, [r["size_bytes"] for r in pair], label=SIZE_LABEL)
        ax.set_title(f"{role if len(shown) > 1 else 'pair'}: GPU {src} → GPU {dst}", loc="left")
    axes[0].set_ylabel("bandwidth (GB/s, 1 GB = 10⁹ B)")
    axes[0].set_ylim(0, top * 1.12)
    legend = figure_legend(fig, *axes_handles(axes), title="line: median of the repetitions")
    text, claims = pairs_lesson(uni, ranked[0])
    return finish(fig, text, run.subtitle(), legend, claims)


def pairs_lesson(uni: Sequence[Row], best: tuple[int, int]) -> tuple[str, list[dict]]:
    """This run's best pair at its largest size: a direct peer copy against the staged pipeline
    (the rows docs/teaching.md cites), and the claims; the other wordings quote no row of a lesson."""
    src, dst = best
    pair = [r for r in uni if r.get("src") == src and r.get("dst") == dst]
    largest = max(r["size_bytes"] for r in pair)
    at = {api: medians(pair, api=api).get(largest) for api in METHODS}
    rows = {api: next((r for r in pair if r.statistic == "median" and r.get("api") == api
                       and r["size_bytes"] == largest), None) for api in ("ce_peer", "staged")}
    if rows["ce_peer"] and rows["staged"]:
        peer, staged = rows["ce_peer"], rows["staged"]
        texts = (format_number(peer.value), format_number(peer.value / staged.value), format_number(staged.value))
        return (f"This run: direct P2P moves {texts[0]} GB/s from GPU {src} to GPU {dst} at "
                f"{format_bytes(largest)}: {texts[1]}× the {texts[2]} GB/s of staging through host memory"), [
            claim(texts[0], peer.value, [cite(peer)]),
            claim(texts[1], peer.value / staged.value, [cite(peer), cite(staged)], "a/b"),
            claim(texts[2], staged.value, [cite(staged)])]
    if at.get("staged"):
        return (f"Without P2P, staging through host memory reaches {format_number(at['staged'])} GB/s "
                f"at {format_bytes(largest)}: the PCIe links, not the GPUs, set the pace"), []
    best_api = max((a for a in METHODS if at.get(a)), key=lambda a: at[a])
    return (f"{METHOD_LABELS[best_api]} is the fastest path: {format_number(at[best_api])} GB/s at "
            f"{format_bytes(largest)}"), []


# ---------------------------------------------------------------- heatmaps

def heatmap_figure(scope: Scope) -> MplFigure | None:
    run, uni = scope.run, uni_rows(scope.rows)
    if not uni:
        return None
    largest = max(r["size_bytes"] for r in uni if r.statistic == "median")
    devices = sorted({d for r in uni for d in (r.get("src"), r.get("dst")) if d is not None})
    methods = [a for a in METHODS if medians([r for r in uni if r["size_bytes"] == largest], api=a)]
    if not devices or not methods:
        return None
    index = {d: i for i, d in enumerate(devices)}
    grids = {}
    for api in methods:
        grid = np.full((len(devices), len(devices)), np.nan)
        for r in uni:
            if (r.get("api") == api and r["size_bytes"] == largest and r.statistic == "median"
                    and r.get("src") in index and r.get("dst") in index):
                grid[index[r["src"]], index[r["dst"]]] = r.value
        grids[api] = grid
    # One colour scale for every panel: a 53 GB/s staged pair and a 396 GB/s NVLink pair must not
    # both be the top colour of their own panel. Logarithmic, so the slow paths (staged, no peer:
    # tens of GB/s) get shades of their own rather than one dark purple under an NVLink top.
    found = [float(v) for g in grids.values() for v in g[~np.isnan(g)] if v > 0]
    vmax = max(found, default=1.0)
    vmin = min(min(found, default=1.0), vmax) / 1.5
    norm = LogNorm(vmin=vmin, vmax=vmax)
    side = 1.0 + 0.55 * len(devices)
    fig, axes = new_figure(ncols=len(methods), width=max(8.5, (side + 0.6) * len(methods) + 1.6),
                           height=side + 2.6)
    spread = []
    image = None
    for ax, api in zip(axes, methods):
        grid = grids[api]
        image = ax.imshow(np.ma.masked_invalid(grid), cmap="viridis", norm=norm)
        ax.grid(False)
        for (i, j), value in np.ndenumerate(grid):
            text = "—" if i == j else ("n/a" if math.isnan(value) else format_number(value))
            # viridis is dark at the bottom and light at the top: text contrasts with its cell.
            light_cell = not math.isnan(value) and value > 0 and float(norm(value)) > 0.55
            ax.text(j, i, text, ha="center", va="center", fontsize=9, color="black" if light_cell or math.isnan(value) else "white")
        ax.set_xticks(range(len(devices)), [f"GPU {d}" for d in devices], fontsize=8)
        ax.set_yticks(range(len(devices)), [f"GPU {d}" for d in devices], fontsize=8)
        ax.set_xlabel("destination")
        ax.set_title(METHOD_SHORT.get(api, api), loc="left", fontsize=9.5)
        values = grid[~np.isnan(grid)]
        if values.size:
            spread.append((api, float(values.min()), float(values.max())))
    axes[0].set_ylabel("source")
    text = heatmap_lesson(spread, largest)
    finish(fig, text, run.subtitle())
    if image is not None:  # after the layout: one shared, labelled scale in a margin of its own
        fig.subplots_adjust(right=0.9)
        low, high = axes[0].get_position().y0, axes[0].get_position().y1
        bar = fig.colorbar(image, cax=fig.add_axes((0.915, low, 0.012, high - low)))
        ticks = [t for t in (10, 20, 50, 100, 200, 500, 1000, 2000) if vmin <= t <= vmax]
        bar.set_ticks(ticks, labels=[str(t) for t in ticks])
        bar.ax.minorticks_off()
        bar.set_label(f"GB/s at {format_bytes(largest)} (log),\none scale for every panel", fontsize=9)
    return fig


def heatmap_lesson(spread: list[tuple[str, float, float]], size: int) -> str:
    direct = next((s for s in spread if s[0] == "ce_peer"), spread[0] if spread else None)
    if direct is None:
        return "No pair was measured"
    api, low, high = direct

    def span(a: float, b: float) -> str:
        return format_number(a) if format_number(a) == format_number(b) else f"{format_number(a)}–{format_number(b)}"

    staged = next((s for s in spread if s[0] == "staged" and s[0] != api), None)
    versus = (f", {format_number(low / staged[2], 2)}× the {span(staged[1], staged[2])} GB/s staged through host memory"
              if staged and staged[2] > 0 else "")
    if high > 0 and low / high < 0.8:
        return (f"Pairs are not equal: {api} ranges from {format_number(low)} to {format_number(high)} GB/s "
                f"at {format_bytes(size)}{versus}; the slow pairs take a longer path")
    return f"Every pair moves {span(low, high)} GB/s with {api} at {format_bytes(size)}{versus}: the links are uniform"


# ---------------------------------------------------------------- topology

def measured_pairs(rows: Sequence[Row]) -> list[tuple[int, int]]:
    """The (src, dst) pairs the run measured one way, in order."""
    return sorted({(r["src"], r["dst"]) for r in uni_rows(rows) if r.get("src") is not None and r.get("dst") is not None})


def topology_figure(scope: Scope) -> MplFigure | None:
    run = scope.run
    topology = dict(run.node.topology)
    if not topology.get("pairs"):  # meta.json without a topology: the measured pairs, links unknown
        topology["pairs"] = [{"src": s, "dst": d, "link": {"type": "unknown", "source": "not in meta.json"}}
                             for s, d in measured_pairs(scope.rows)]
    if not topology["pairs"]:
        return None
    rows = []
    for pair in topology.get("pairs") or []:
        link = pair.get("link") or {}
        kind = link.get("type", "unknown")
        if kind == "nvlink" and link.get("links"):
            kind = f"NVLink ×{link['links']}" + (f" ({link['via']})" if link.get("via") else "")
        if link.get("pcie_path"):
            kind += f", PCIe {link['pcie_path']}"
        peak = link.get("peak_GBps")
        rows.append([f"{pair.get('src')} → {pair.get('dst')}", kind,
                     format_number(float(peak)) if peak else "n/a",
                     "yes" if pair.get("can_access_peer") else "no", str(pair.get("performance_rank", "n/a")),
                     "yes" if pair.get("native_atomics") else "no", str(link.get("source", "unknown"))])
    columns = ["pair", "link", "GB/s per\ndirection", "peer\naccess", "perf.\nrank", "native\natomics", "source"]
    fig, (ax,) = new_figure(width=11.0, height=2.3 + 0.5 * (len(rows) + 1.6))
    ax.axis("off")
    widths = [0.09, 0.37, 0.12, 0.09, 0.08, 0.09, 0.16]
    table = ax.table(cellText=rows, colLabels=columns, colWidths=widths, loc="upper center",
                     cellLoc="center", bbox=(0, 0, 1, 1))
    table.auto_set_font_size(False)
    table.set_fontsize(11)
    for (row, col), cell in table.get_celld().items():
        cell.set_edgecolor("0.75")
        cell.set_linewidth(0.6)
        if row == 0:
            cell.set_facecolor("#DCE6F0")
            cell.set_text_props(fontweight="bold", fontsize=10)
        elif row % 2 == 0:
            cell.set_facecolor("#F4F6F8")
        if row > 0 and col == 1:
            cell.set_text_props(ha="left")
            cell.PAD = 0.03
    legend_text = ("link: what meta.json's topology found between the pair (NVLink count, and the PCIe path between "
                   "their root ports: PHB = through the host bridge); perf. rank: cudaDeviceGetP2PAttribute "
                   "(0 = best); source: where the link type was read")
    fig.text(0.5, 0.02, "\n".join(textwrap.wrap(legend_text, 150)), ha="center", va="bottom", fontsize=8.5,
             color="0.3")
    text, claims = topology_lesson(topology)
    finish(fig, text, run.subtitle(), claims=claims)
    fig.subplots_adjust(bottom=0.16)
    return fig


def topology_lesson(topology: Mapping[str, Any]) -> tuple[str, list[dict]]:
    """What links the GPUs, and an NVLink pair's data rate per direction (the harness records it
    in meta.json's topology: links × the per-link data rate)."""
    links = [(p.get("link") or {}) for p in topology.get("pairs") or []]
    nvlink = [link for link in links if link.get("type") == "nvlink"]
    gpus = len(topology.get("gpus") or [])
    if nvlink and len(nvlink) == len(links):
        counts = sorted({link.get("links") for link in nvlink if link.get("links")})
        peaks = [float(link["peak_GBps"]) for link in nvlink if link.get("peak_GBps")]
        count_text = "/".join(str(c) for c in counts) or "?"
        shown = format_number(min(peaks)) if peaks else ""
        peak_text = f" ({shown} GB/s of data per direction)" if peaks else ""
        claims = [claim(shown, min(peaks), [{"const": min(peaks), "source": "meta.json's topology: links × per-link data rate"}])] if peaks else []
        return (f"{'Both' if gpus == 2 else f'All {gpus}'} GPUs reach each other over {count_text} NVLinks{peak_text}; "
                f"each also has its own PCIe link"), claims
    if nvlink:
        return f"{len(nvlink)} of {len(links)} GPU pairs have NVLink; the others go through PCIe", []
    paths = sorted({link.get("pcie_path") for link in links if link.get("pcie_path")})
    return f"No NVLink: GPU pairs talk over PCIe ({', '.join(paths) or 'path unknown'})", []


# ---------------------------------------------------------------- chunk sweep, loopback, latency

def chunk_figure(scope: Scope) -> MplFigure | None:
    run, rows = scope.run, sized(scope.rows)
    sweep = [r for r in rows if r.case == "chunk_sweep" and r.metric == "bandwidth" and r.statistic == "median"]
    if not sweep:
        return None
    fig, (ax,) = new_figure()
    best = (0.0, 0, "")
    curves: dict[tuple[str, str, str], dict[int, float]] = {}
    uuids: dict[tuple[str, str, str], str] = {}
    for r in sweep:
        chunk = r.get("chunk_bytes") or 0
        if chunk:
            curves.setdefault((r.get("direction"), r.get("src"), r.get("dst")), {})[chunk] = r.value
            uuids.setdefault((r.get("direction"), r.get("src"), r.get("dst")), r.gpu_uuid)
    for (direction, src, dst), data in sorted(curves.items()):
        chunks = sorted(data)
        label = f"GPU {src} → host → GPU {dst}" + (" (loopback)" if direction == "loopback" else "")
        ax.plot(chunks, [data[c] for c in chunks], marker="o", markersize=4, linewidth=1.5, label=label)
        for c in chunks:
            if data[c] > best[0]:
                best = (data[c], c, label)
    limits = pcie_limits(ax, run, [(src, dst, uuids[(d, src, dst)]) for d, src, dst in sorted(curves)])
    size_axis(ax, [c for data in curves.values() for c in data], label="chunk size (bytes per bounce buffer, log₂ scale)")
    ax.set_ylabel("bandwidth (GB/s)")
    ax.set_ylim(0, max([best[0]] + limits) * 1.15)
    ax.set_title(f"staged pipeline at {format_bytes(sweep[0]['size_bytes'])}, 3 bounce buffers, 2 streams", loc="left")
    legend = figure_legend(fig, *axes_handles([ax]))
    lesson = (f"Chunks of {format_bytes(best[1])} keep both PCIe links busy: {format_number(best[0])} GB/s; "
              f"smaller chunks pay per-copy overhead, larger ones lose the overlap")
    return finish(fig, lesson, run.subtitle(), legend)


def loopback_figure(scope: Scope) -> MplFigure | None:
    run, rows = scope.run, sized(scope.rows)
    both = [r for r in rows if r.case == "bandwidth" and r.get("direction") == LOOPBACK["direction"] and r.metric == "bandwidth"]
    loop = [r for r in both if r.get("api") == "staged"]
    direct = [r.value for r in both if r.get("api") == "ce_peer" and r.statistic == "median"
              and r["size_bytes"] == max(x["size_bytes"] for x in both)]
    if not loop:
        return None
    fig, (ax,) = new_figure()
    top = 0.0
    paths = []
    for gpu in sorted({r.get("src") for r in loop}):
        data = medians(loop, src=gpu)
        sizes = sorted(data)
        ax.plot(sizes, [data[s] for s in sizes], marker="D", markersize=4, linewidth=1.6,
                label=f"GPU {gpu} → host → GPU {gpu}")
        top = max(top, max(data.values()))
        paths.append((gpu, gpu, next(r.gpu_uuid for r in loop if r.get("src") == gpu)))
    top = max([top] + pcie_limits(ax, run, paths, one_direction=True))
    size_axis(ax, [r["size_bytes"] for r in loop], label=SIZE_LABEL)
    ax.set_ylabel("bandwidth (GB/s)")
    ax.set_ylim(0, top * 1.12)
    legend = figure_legend(fig, *axes_handles([ax]))
    largest = max(r["size_bytes"] for r in loop)
    best = max(v for r in loop if r["size_bytes"] == largest and r.statistic == "median" for v in [r.value])
    lesson = (f"Through host memory a GPU reaches {format_number(best)} GB/s at {format_bytes(largest)}: "
              f"its D2H and H2D halves overlap on full-duplex PCIe")
    if direct:
        lesson += f"; a copy within its own memory: {format_number(max(direct))} GB/s"
    return finish(fig, lesson, run.subtitle(), legend)


def latency_figure(scope: Scope) -> MplFigure | None:
    run, rows = scope.run, sized(scope.rows)
    lat = [r for r in rows if r.case == "latency" and r.statistic == "median"]
    if not lat:
        return None
    smallest = min(r["size_bytes"] for r in lat)
    methods = [a for a in METHODS if any(r.get("api") == a for r in lat)]
    device = [np.median([r.value for r in lat if r.get("api") == a and r["size_bytes"] == smallest and r.metric == "latency"] or [np.nan])
              for a in methods]
    host = [np.median([r.value for r in lat if r.get("api") == a and r["size_bytes"] == smallest and r.metric == "host_latency"] or [np.nan])
            for a in methods]
    fig, (ax,) = new_figure()
    x = np.arange(len(methods))
    ax.bar(x - 0.2, device, width=0.4, color="#0072B2", label="device-timed (back to back behind the gate)")
    ax.bar(x + 0.2, host, width=0.4, color="#E69F00", label="host-observed (call to completion, median)")
    ax.set_xticks(x, methods)
    ax.set_ylabel(f"time per {format_bytes(smallest)} transfer (µs)")
    legend = figure_legend(fig, *axes_handles([ax]))
    finite = [(d, m) for d, m in zip(device, methods) if not math.isnan(d)]
    if finite:
        fastest = min(finite)
        lesson = (f"A {format_bytes(smallest)} transfer costs {format_time_us(fastest[0])} on the device with {fastest[1]}; "
                  f"the caller waits {format_time_us(float(np.nanmin(host)))} or more")
    else:
        lesson = f"Small-transfer latency at {format_bytes(smallest)}"
    return finish(fig, lesson, run.subtitle(), legend)


# ---------------------------------------------------------------- what is drawn, and when

FIGURES = [
    Figure("p2p_bandwidth_pairs", draw=pairs_figure, needs=[Need("bandwidth", "bandwidth", where=PAIR)]),
    Figure("p2p_heatmaps", draw=heatmap_figure, needs=[Need("bandwidth", "bandwidth", where=PAIR)]),
    Figure("p2p_topology", draw=topology_figure, needs=[Need("bandwidth", "bandwidth", where=PAIR)]),
    Figure("p2p_chunk_sweep", draw=chunk_figure, needs=[Need("chunk_sweep", "bandwidth")]),
    Figure("p2p_loopback", draw=loopback_figure, needs=[Need("bandwidth", "bandwidth", where=LOOPBACK)]),
    Figure("p2p_latency", draw=latency_figure, needs=[Need("latency", "latency")]),
]
