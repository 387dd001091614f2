#!/usr/bin/env python3
"""Writes the synthetic multi-GPU plot fixtures: tests/plots/fixtures/run_2gpu, run_8gpu, run_node8.

Every family of harness/suite.json on a node of 2 (resp. 8) H200-like GPUs, in results.csv
schema 3 with the columns the declarations (bench/<f>/schema.json) give, and a meta.json that
carries those declarations and the plot module names as the harness writes them. The numbers
come from small models (α–β copies, a toy pipeline, ring all-reduce); they are plausible, not
measured. Few sizes keep the files small: the 2-GPU run has 3 repetitions (sample rows and
medians), the 8-GPU run medians only (as a run with --benchmark_report_aggregates_only writes,
so figures must draw without min–max bands). On the 8-GPU node GPU 7 has fewer NVLinks active
(12 of 18), so "the slowest GPU's links" is not the first GPU's; its one-GPU families (copy,
overlap, sync) ran on GPUs 0 and 7 only (a run given a device list), so per-device figures are
named by the CUDA index, not by position, and the all-GPUs copy has alone bars for two of eight.

run_node8 is the node a bring-up engineer checks: 8 alike GPUs (one class in meta.json `tiers`,
GPU 0 its representative), every one-GPU family on all eight, medians only, and a check.json as
`hdbench check --format json` writes it against a reference set of this kind: the headline
figures of every GPU and pair graded against made-up bands (centre ± 0.7 %), GPU 5's pinned h2d
planted 20 % slow and graded FAIL, the rest within their bands.

    python3 tests/plots/make_fixtures.py --hdbench build/ci/bin/hdbench   # rewrite the fixtures in place

The core columns come from the harness (`hdbench schema-doc --json`), and each meta.json gets
what the harness records before plotting (`hdbench plot`: results_csv, the PCIe peaks), so no list of columns or rates is written here. Rerun it after a declaration changes (a
parameter or metric renamed) and commit the result; the figure-list tests
(tests/plots/figure_list_test.py) then say whether every figure is still drawn.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import statistics
import subprocess
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
REPETITIONS = 3
KIB, MIB, GIB = 1 << 10, 1 << 20, 1 << 30
PER_LINK = 26.562  # the rate nvidia-smi reports, as meta.json records it (node.gpus[i].nvlink.per_link_GBps)


def harness_record(hdbench: Path) -> dict:
    """`hdbench schema-doc --json`: results.csv's core columns (name, type) and statistics, the
    harness's CSV writer's own list (meta.json records it as results_csv)."""
    return json.loads(subprocess.run([str(hdbench), "schema-doc", "--json"], capture_output=True, text=True,
                                     check=True).stdout)


def core_columns(hdbench: Path) -> tuple[list[str], list[str]]:
    """The core columns before and after the parameters (harness_record)."""
    record = harness_record(hdbench)
    return ([c["name"] for c in record["leading_columns"]], [c["name"] for c in record["trailing_columns"]])


def record_harness_tables(hdbench: Path, run_dir: Path) -> None:
    """What the harness adds to a run's meta.json before the plots read it (results_csv, each
    GPU's PCIe peak), as `hdbench plot` records them before it draws: run on a scratch directory
    holding only a copy of meta.json (none: it writes one), with HDBENCH_PLOTS_DIR at an empty
    directory, it records them and does nothing else (no results.csv to check, no plot_run.py to
    draw with); the meta.json comes back to run_dir."""
    with tempfile.TemporaryDirectory() as scratch:
        run, no_plots = Path(scratch) / "run", Path(scratch) / "no_plots"
        run.mkdir()
        no_plots.mkdir()
        if (run_dir / "meta.json").exists():
            shutil.copy2(run_dir / "meta.json", run / "meta.json")
        subprocess.run([str(hdbench), "plot", str(run)], env={**os.environ, "HDBENCH_PLOTS_DIR": str(no_plots)},
                       capture_output=True, text=True, check=True)
        shutil.copy2(run / "meta.json", run_dir / "meta.json")


class Writer:
    """Collects rows: a sample per repetition (±1 % spread) and the median."""

    def __init__(self, run_id: str, uuids: list[str], declarations: dict[str, dict], samples: bool) -> None:
        self.run_id, self.uuids, self.declarations, self.samples = run_id, uuids, declarations, samples
        self.rows: list[dict[str, str]] = []

    def case(self, family: str, case: str, devices: list[int], params: dict, metrics: dict[str, float],
             spread: float = 0.01) -> None:
        declared = self.declarations[family]["cases"][case]
        unknown = set(params) - set(declared["parameters"])
        undeclared = set(metrics) - set(declared["metrics"])
        if unknown or undeclared:
            raise SystemExit(f"{family}/{case}: not declared: parameters {sorted(unknown)}, metrics {sorted(undeclared)}")
        for metric, value in metrics.items():
            spec = self.declarations[family]["metrics"][metric]
            samples = [value * (1 + spread * (k - 1)) for k in range(REPETITIONS)]
            base = {"schema_version": "3", "run_id": self.run_id, "family": family, "case": case,
                    "device": str(min(devices)), "gpus": str(len(devices)),
                    "gpu_uuid": ",".join(self.uuids[d] for d in sorted(devices)),
                    **{k: str(v) for k, v in params.items()},
                    "metric": metric, "unit": spec["unit"], "better": spec["better"], "headline": "no",
                    "traffic": "", "status": "ok", "reason": ""}
            for k, v in enumerate(samples if self.samples else []):
                self.rows.append({**base, "statistic": "sample", "sample_index": str(k), "value": f"{v:.6g}"})
            self.rows.append({**base, "statistic": "median", "sample_index": "",
                              "value": f"{statistics.median(samples):.6g}"})

    def fit(self, family: str, case: str, device: int, params: dict, values: dict[str, float]) -> None:
        for metric, value in values.items():
            self.rows.append({"schema_version": "3", "run_id": self.run_id, "family": family, "case": case,
                              "device": str(device), "gpus": "1", "gpu_uuid": self.uuids[device],
                              **{k: str(v) for k, v in params.items()}, "metric": metric,
                              "unit": self.declarations[family]["metrics"][metric]["unit"],
                              "better": self.declarations[family]["metrics"][metric]["better"], "headline": "no", "traffic": "", "statistic": "fit",
                              "sample_index": "", "value": f"{value:.6g}", "status": "ok", "reason": ""})

    def skipped(self, family: str, case: str, devices: list[int], params: dict, reason: str) -> None:
        self.rows.append({"schema_version": "3", "run_id": self.run_id, "family": family, "case": case,
                          "device": str(min(devices)), "gpus": str(len(devices)),
                          "gpu_uuid": ",".join(self.uuids[d] for d in devices),
                          **{k: str(v) for k, v in params.items()}, "metric": "", "unit": "", "better": "",
                          "headline": "no", "traffic": "", "statistic": "", "sample_index": "", "value": "",
                          "status": "skipped", "reason": reason})


def copy_rows(w: Writer, gpus: int, devices: list[int]) -> None:
    paths = {"pinned": (8.0, 55.0), "pageable": (14.0, 21.0)}  # α µs, β GB/s
    for d in devices:
        slow = 1 - 0.01 * d  # each GPU a little slower than the one before
        for direction in ("h2d", "d2h"):
            for kind, (alpha, beta) in paths.items():
                key = {"direction": direction, "host_kind": kind, "api": "async", "streams": 1}
                for size in (4 * KIB, MIB, 256 * MIB):
                    t = alpha + size / (beta * slow * 1e3)
                    w.case("copy", "bandwidth", [d], {**key, "size_bytes": size},
                           {"bandwidth": size / t / 1e3, "time_per_copy": t})
                w.fit("copy", "bandwidth", d, key, {"fit_latency": alpha, "fit_bandwidth": beta * slow,
                                                    "fit_n_half": alpha * beta * slow * 1e3})
        for size in (MIB, 256 * MIB):
            t = 9.0 + size / (100e3 * slow)
            w.case("copy", "bandwidth", [d], {"direction": "bidir", "host_kind": "pinned", "api": "async",
                                              "streams": 2, "size_bytes": size},
                   {"bandwidth": size / t / 1e3, "bandwidth_h2d": size / t / 2e3, "bandwidth_d2h": size / t / 2e3})
        for api, (alpha, beta) in {"async": (5.0, 2000.0), "kernel": (4.0, 2300.0)}.items():
            key = {"direction": "d2d", "host_kind": "device", "api": api, "streams": 1}
            for size in (MIB, 256 * MIB):
                t = alpha + size / (beta * 1e3)
                w.case("copy", "bandwidth", [d], {**key, "size_bytes": size},
                       {"bandwidth": size / t / 1e3, "time_per_copy": t})
            w.fit("copy", "bandwidth", d, key, {"fit_latency": alpha, "fit_bandwidth": beta, "fit_n_half": alpha * beta * 1e3})
        for direction in ("h2d", "d2h"):
            for kind, base in {"pinned": 2.0, "pageable": 4.5}.items():
                for size in (1, 64, 4 * KIB):
                    w.case("copy", "latency", [d], {"direction": direction, "host_kind": kind, "api": "async",
                                                    "streams": 1, "size_bytes": size},
                           {"latency": base, "host_latency": 3 * base + 4})
        for api, kind, per_mib in (("cudaMallocHost", "pinned", 90.0), ("cudaHostRegister", "registered", 60.0),
                                   ("cudaMalloc", "device", 2.0), ("cudaMallocAsync", "device", 0.001)):
            for size in (MIB, 256 * MIB):
                call = 1.0 + per_mib * size / MIB
                w.case("copy", "alloc", [d], {"host_kind": kind, "api": api, "size_bytes": size},
                       {"time_per_call": call, "time_per_mib": call / (size / MIB), "release_time_per_call": call / 3})
        w.skipped("copy", "bandwidth", [d], {"direction": "h2d", "host_kind": "write_combined", "api": "kernel",
                                             "streams": 1, "size_bytes": MIB}, "fixture: a skipped case is listed")
    for direction in ("h2d", "d2h"):
        each = 256 * MIB / (8.0 + 256 * MIB / 54e3) / 1e3 * 0.9
        w.case("copy", "bandwidth_all_gpus", list(range(gpus)), {"direction": direction, "host_kind": "pinned",
                                                                 "api": "async", "streams": 1, "size_bytes": 256 * MIB},
               {"bandwidth": each * gpus, "bandwidth_slowest": each})


def simulate(streams: int, chunks: int, h: float, k: float, d: float, pageable: bool) -> list[dict[str, float]]:
    """Event times (µs) of one pass: each engine and each stream runs one operation at a time."""
    free = {"h2d": 0.0, "kernel": 0.0, "d2h": 0.0}
    lane_free = [0.0] * streams
    out = []
    for i in range(chunks):
        lane = i % streams
        start = max(free["h2d"], lane_free[lane])
        if pageable:
            start = max([start] + lane_free + list(free.values()))
        t = {"h2d_start": start, "h2d_end": start + h / chunks}
        t["kernel_start"] = max(t["h2d_end"], free["kernel"])
        t["kernel_end"] = t["kernel_start"] + k / chunks
        t["d2h_start"] = max(t["kernel_end"], free["d2h"])
        t["d2h_end"] = t["d2h_start"] + d / chunks
        free = {"h2d": t["h2d_end"], "kernel": t["kernel_end"], "d2h": t["d2h_end"]}
        lane_free[lane] = t["d2h_end"]
        out.append(t)
    return out


def overlap_rows(w: Writer, devices: list[int]) -> None:
    size = GIB
    one_way = size / 54e3
    for d in devices:
        for kind, (h, k, dd) in {"pinned": (one_way, one_way, one_way),
                                 "pageable": (size / 7e3, one_way, size / 14e3)}.items():
            for streams in (1, 4):
                times = simulate(streams, 4, h, k, dd, kind == "pageable")
                total = times[-1]["d2h_end"]
                for chunk, t in enumerate(times):
                    w.case("overlap", "timeline", [d], {"regime": "balanced", "host_kind": kind, "streams": streams,
                                                         "chunks": 4, "chunk": chunk, "size_bytes": size},
                           {**t, "pipeline_time": total, "ideal_time": one_way * 1.2 if streams > 1 else h + k + dd},
                           spread=0.0)
        for regime, ratio in {"balanced": 1.0, "compute_heavy": 4.0}.items():
            serial = one_way * (2 + ratio)
            for streams in (1, 2, 4):
                for chunks in (4, 16):
                    ideal = serial if streams == 1 else max(serial / min(streams, 3), one_way * max(1.1, ratio))
                    measured = ideal * (1.05 if streams > 1 else 1.0)
                    metrics = {"pipeline_time": measured, "ideal_time": ideal, "serial_time": serial,
                               "speedup": serial / measured, "ideal_speedup": serial / ideal}
                    if streams > 1:
                        metrics["efficiency"] = 100 * (serial - measured) / (serial - ideal)
                    w.case("overlap", "pipeline", [d], {"regime": regime, "host_kind": "pinned", "api": "nonblocking",
                                                         "streams": streams, "chunks": chunks, "size_bytes": size},
                           metrics)
        for api, factor in {"resident": 1.0, "device_generated": 1.05, "round_trip": 9.0, "host_generated": 11.0}.items():
            w.case("overlap", "movement_tax", [d], {"regime": "balanced", "host_kind": "pinned", "api": api,
                                                     "size_bytes": size // 4},
                   {"device_call_time": one_way / 4 * factor, "tax_ratio": factor})
        for api, factor in {"nonblocking": 1.0, "legacy_default": 1.9, "per_thread_default": 1.05, "host_sync": 2.0}.items():
            t = one_way * 1.6 * factor
            w.case("overlap", "stream_semantics", [d], {"regime": "balanced", "host_kind": "pinned", "api": api,
                                                         "streams": 2, "chunks": 8, "size_bytes": size},
                   {"pipeline_time": t, "speedup": 3 * one_way / t, "ideal_time": one_way * 1.5, "serial_time": 3 * one_way})
        for api, t in {"nonblocking": one_way * 1.25, "graph": one_way * 1.24}.items():
            w.case("overlap", "graph", [d], {"regime": "balanced", "host_kind": "pinned", "api": api, "streams": 4,
                                              "chunks": 32, "size_bytes": size},
                   {"pipeline_time": t, "speedup": 3 * one_way / t, "ideal_time": one_way * 1.2, "serial_time": 3 * one_way})


def sync_rows(w: Writer, devices: list[int]) -> None:
    for d in devices:
        for mode, (latency, busy) in {"spin": (1.2, 100.0), "blocking_sync": (18.0, 2.0)}.items():
            for api in ("cudaStreamSynchronize", "cudaEventSynchronize"):
                w.case("sync", "wakeup", [d], {"mode": mode, "api": api},
                       {"wakeup_latency": latency, "waiter_cpu_time": 1000 * busy / 100, "cpu_busy": busy,
                        "wait_time": 1000.0})
        for api, t in {"cudaDeviceSynchronize": 2.4, "cudaStreamSynchronize": 1.9, "cudaEventSynchronize": 1.8,
                       "cudaEventQuery": 0.6}.items():
            w.case("sync", "sync_cost", [d], {"api": api}, {"call_time": t})
        for api, t in {"cudaEventSynchronize": 205.0, "cudaStreamSynchronize": 605.0, "cudaDeviceSynchronize": 1205.0}.items():
            w.case("sync", "wait_for_need", [d], {"api": api, "streams": 2}, {"wait_time": t, "resume_delay": 2.0})
        for api, gap in {"same_stream": 1.1, "cudaStreamWaitEvent": 1.9, "host_sync_then_launch": 14.0}.items():
            w.case("sync", "dependency", [d], {"api": api, "streams": 2 if api != "same_stream" else 1}, {"gap": gap})
        for kernels in (10, 100):
            w.case("sync", "graph", [d], {"api": "launches", "kernels": kernels}, {"total_time": 2.2 * kernels + 5})
            w.case("sync", "graph", [d], {"api": "graph", "kernels": kernels},
                   {"total_time": 0.9 * kernels + 6, "instantiate_time": 3.0 * kernels})
        w.case("sync", "launch", [d], {"api": "empty_kernel"}, {"launch_time": 2.1, "launch_sync_time": 6.5})
        for every, ratio in {1: 0.24, 8: 0.72, 64: 0.96}.items():
            w.case("sync", "trap", [d], {"api": "readback_pageable", "every": every},
                   {"relative_throughput": ratio, "step_kernel_time": 5.0})
            w.case("sync", "trap", [d], {"api": "readback_async", "every": every},
                   {"relative_throughput": min(1.0, ratio * 1.4)})
        w.case("sync", "trap", [d], {"api": "readback_pageable"}, {"relative_throughput": 1.0})  # never reads back
        w.case("sync", "trap", [d], {"api": "keep_on_gpu"}, {"relative_throughput": 0.99})


def p2p_rows(w: Writer, gpus: int) -> None:
    for src in range(gpus):
        for dst in range(gpus):
            if src == dst:
                continue
            for size in (MIB, 64 * MIB):
                for api, rate in {"ce_peer": 380.0, "staged": 40.0}.items():
                    t = 6.0 + size / (rate * 1e3)
                    w.case("p2p", "bandwidth", [src, dst], {"api": api, "direction": "uni", "src": src, "dst": dst,
                                                            "size_bytes": size}, {"bandwidth": size / t / 1e3})
    for d in range(gpus):
        for size in (MIB, 64 * MIB):
            t = 12.0 + size / 45e3
            w.case("p2p", "bandwidth", [d], {"api": "staged", "direction": "loopback", "src": d, "dst": d,
                                             "size_bytes": size}, {"bandwidth": size / t / 1e3})
    for chunk, rate in {2 * MIB: 30.0, 8 * MIB: 44.0, 32 * MIB: 38.0}.items():
        w.case("p2p", "chunk_sweep", [0, 1], {"api": "staged", "direction": "uni", "src": 0, "dst": 1,
                                              "size_bytes": 64 * MIB, "chunk_bytes": chunk}, {"bandwidth": rate})
    for api, lat in {"ce_peer": 8.0, "staged": 20.0}.items():
        for size in (1, 64):
            w.case("p2p", "latency", [0, 1], {"api": api, "direction": "uni", "src": 0, "dst": 1, "size_bytes": size},
                   {"latency": lat, "host_latency": lat + 6})


def allreduce_rows(w: Writer, gpus: int, links: list[int]) -> None:
    counts = [n for n in (1, 2, 4, 8) if n <= gpus]
    for n in counts:
        line = min(links[:n]) * PER_LINK
        for api, factor in {"all_reduce": 2 * (n - 1) / n, "reduce_scatter": (n - 1) / n, "all_gather": (n - 1) / n}.items():
            for size in (8, MIB, 256 * MIB):
                latency = 6.0 + 2.0 * n
                if n == 1:
                    t = 3.0 + size / 2000e3
                    metrics = {"time": t, "algbw": size / t / 1e3}
                else:
                    t = latency + size * factor / (0.75 * line * 1e3)
                    metrics = {"time": t, "algbw": size / t / 1e3, "busbw": size / t / 1e3 * factor}
                w.case("allreduce", "collective", list(range(n)), {"api": api, "dtype": "float", "placement": "out_of_place",
                                                                   "interconnect": "default", "ranks": n,
                                                                   "size_bytes": size}, metrics)
    for size in (MIB, 256 * MIB):
        t = 30.0 + size / 20e3
        w.case("allreduce", "collective", [0, 1], {"api": "all_reduce", "dtype": "float", "placement": "out_of_place",
                                                   "interconnect": "p2p_disabled", "ranks": 2, "size_bytes": size},
               {"time": t, "algbw": size / t / 1e3, "busbw": size / t / 1e3})
    w.case("allreduce", "overlap", list(range(gpus)), {"api": "all_reduce", "dtype": "float", "placement": "out_of_place",
                                                       "interconnect": "default", "ranks": gpus, "size_bytes": 64 * MIB},
           {"comm_time": 900.0, "compute_time": 1000.0, "overlapped_time": 1300.0, "comm_slowdown": 1.3,
            "compute_slowdown": 1.1, "comm_hidden": 0.6})


def write_fixture(hdbench: Path, name: str, gpus: int, samples: bool, node: bool = False) -> None:
    leading, trailing = core_columns(hdbench)
    manifest = json.loads((REPO / "harness" / "suite.json").read_text(encoding="utf-8"))
    entries = manifest["families"]
    declarations = {e["name"]: json.loads((REPO / e["folder"] / "schema.json").read_text(encoding="utf-8"))
                    for e in entries}
    params: list[str] = []
    for e in entries:  # manifest order, each family's declaration order, first appearance wins
        params += [p for p in declarations[e["name"]]["parameters"] if p not in params]
    run_id = name.replace("run_", "fixture-")  # fixture-2gpu, fixture-8gpu, fixture-node8
    uuids = [f"GPU-fixture{gpus}-{i}" for i in range(gpus)]
    links = [12 if gpus == 8 and i == 7 and not node else 18 for i in range(gpus)]
    w = Writer(run_id, uuids, declarations, samples)
    devices = list(range(gpus)) if gpus <= 2 or node else [0, gpus - 1]  # the one-GPU families
    copy_rows(w, gpus, devices)
    overlap_rows(w, devices)
    sync_rows(w, devices)
    p2p_rows(w, gpus)
    allreduce_rows(w, gpus, links)
    out = FIXTURES / name
    out.mkdir(parents=True, exist_ok=True)
    with (out / "results.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=leading + params + trailing, restval="",
                                lineterminator="\n")
        writer.writeheader()
        writer.writerows(w.rows)
    node_gpus = [{"index": i, "name": "NVIDIA H200", "uuid": uuids[i], "hbm_peak_GBps": 4800.0, "compute_capability": "9.0",
                  "pcie": {"gen_max": 5, "width_max": 16, "gen_current": 5, "width_current": 16},
                  "nvlink": {"links_active": links[i], "per_link_GBps": PER_LINK}} for i in range(gpus)]
    pairs = [{"src": s, "dst": d, "can_access_peer": True, "performance_rank": 0, "native_atomics": True,
              "link": {"type": "nvlink", "links": min(links[s], links[d]), "per_link_GBps": PER_LINK,
                       "via": "nvswitch", "source": "fixture"}}
             for s in range(gpus) for d in range(gpus) if s != d]
    families = {e["name"]: {"family": e["name"], "status": "ok", "plots": e["plots"], "schema": declarations[e["name"]]}
                for e in entries}
    meta = {"schema_version": 3, "run_id": run_id, "node": {
        "hostname": run_id, "driver_release": "580.00.00", "cuda_runtime": "13.0", "gpu_count": gpus,
        "gpus": node_gpus, "topology": {"gpus": [{"index": i, "uuid": uuids[i]} for i in range(gpus)], "pairs": pairs}},
        "families": families}
    if node:
        meta["tiers"] = tiers(gpus)
        check = check_report(run_id, gpus)
        (out / "check.json").write_text(json.dumps(check, indent=1) + "\n", encoding="utf-8")
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    record_harness_tables(hdbench, out)
    print(f"{out}: {len(w.rows)} rows")


def tiers(gpus: int) -> dict:
    """One class of alike GPUs and one of alike pairs, as the harness records them; a run of
    mode "full" still swept every GPU, so --per-gpu-plots has every GPU's figures to draw."""
    pairs = [[s, d] for s in range(gpus) for d in range(gpus) if s != d]
    return {"mode": "full",
            "classes": [{"key": "NVIDIA H200 · PCIe Gen5 x16 · NVLinks 18", "gpus": list(range(gpus)), "representative": 0}],
            "sweep_devices": [0],
            "pair_classes": [{"key": "NVLink 18 via nvswitch", "pairs": pairs, "representative": [0, 1]}],
            "sweep_pairs": [[0, 1]]}


SLOW_GPU = 5  # planted: its pinned h2d copies run 20 % slow
# (family, check label, unit, better, the set's centre): the headline figures of one GPU.
NODE_FIGURES = (
    ("copy", "pinned h2d 1 GiB", "GB/s", "higher", 55.35),
    ("copy", "pinned d2h 1 GiB", "GB/s", "higher", 55.30),
    ("copy", "pinned bidirectional 1 GiB", "GB/s", "higher", 97.6),
    ("copy", "pageable h2d 1 GiB", "GB/s", "higher", 7.18),
    ("copy", "pageable d2h 1 GiB", "GB/s", "higher", 14.4),
    ("copy", "h2d 1 B latency (device-timed)", "us", "lower", 2.22),
    ("copy", "d2h 1 B latency (device-timed)", "us", "lower", 1.62),
    ("overlap", "pipeline speedup, 4 streams x 32 chunks, balanced", "ratio", "higher", 2.53),
    ("sync", "graph of 100 empty kernels, launch until idle", "us", "lower", 78.0),
    ("p2p", "staged loopback 1 GiB", "GB/s", "higher", 49.6),
)


def graded(family: str, label: str, gpus: list[int], unit: str, better: str, centre: float, value: float) -> dict:
    """One figure line as check.cpp grades it against a band: worse than the band FAIL, better WARN."""
    low, high = centre * 0.993, centre * 1.007
    change = f"{(value / centre - 1) * 100:+.1f} % from the set's centre {centre:g}"
    worse = value < low if better == "higher" else value > high
    better_than = value > high if better == "higher" else value < low
    grade = "FAIL" if worse else "WARN" if better_than else "PASS"
    reason = {"FAIL": f"{change}, worse than a healthy node of this kind reads (detectable 0.6 %)",
              "WARN": f"{change}, better than the set's band: a faster node than the set's runs, or a set to renew",
              "PASS": f"within the band ({change})"}[grade]
    return {"family": family, "figure": label, "gpus": gpus, "grade": grade, "value": round(value, 4), "unit": unit,
            "reading": "", "reason": reason,
            "expected": {"centre": centre, "low": round(low, 4), "high": round(high, 4), "detectable": 0.006, "runs": 7}}


def check_report(run_id: str, gpus: int) -> dict:
    """check.json of run_node8: every GPU's headline figures, every pair's direct copy, the
    node-wide figures (one line each: no node figure) and health lines (never drawn)."""
    lines = []
    for family, label, unit, better, centre in NODE_FIGURES:
        for d in range(gpus):
            jitter = 0.001 * ((d * 3) % 5 - 2)  # -0.2 … +0.2 %: well inside the ± 0.7 % band
            slow = 0.8 if (d, label) == (SLOW_GPU, "pinned h2d 1 GiB") else 1.0
            lines.append(graded(family, label, [d], unit, better, centre, centre * (1 + jitter) * slow))
    lines.append(graded("copy", "bandwidth_all_gpus bandwidth (api=async direction=h2d host_kind=pinned size_bytes=1 GiB "
                                "streams=1)", list(range(gpus)), "GB/s", "higher", 400.0, 401.0))
    for src in range(gpus):
        for dst in range(gpus):
            if src != dst:
                jitter = 0.001 * ((src + 2 * dst) % 5 - 2)
                lines.append(graded("p2p", f"bandwidth (api=ce_peer direction=uni dst={dst} size_bytes=1 GiB src={src})",
                                    [src, dst], "GB/s", "higher", 396.0, 396.0 * (1 + jitter)))
    lines.append(graded("allreduce", "collective busbw (api=all_reduce dtype=float interconnect=default launch=stream "
                                     f"placement=out_of_place ranks={gpus} size_bytes=4 GiB)", list(range(gpus)),
                        "GB/s", "higher", 360.0, 361.0))
    for d in range(gpus):
        lines.append({"family": "health", "figure": "PCIe link", "gpus": [d], "grade": "PASS", "value": None, "unit": "",
                      "reading": "Gen5 x16", "reason": "the link trained to its maximum", "expected": None})
    counts = {g: sum(1 for line in lines if line["grade"] == g) for g in ("PASS", "WARN", "FAIL", "INFO")}
    return {"exit_code": 1 if counts["FAIL"] else 0, "node_kind": f"NVIDIA H200 x{gpus}, PCIe Gen5 x16, NVLinks 18",
            "reference": {"name": f"h200-x{gpus}", "dir": f"results/reference/h200-x{gpus}", "runs": 7},
            "run": run_id, "notes": [], "lines": lines,
            "summary": {"grade": "FAIL" if counts["FAIL"] else "WARN" if counts["WARN"] else "PASS",
                        "pass": counts["PASS"], "warn": counts["WARN"], "fail": counts["FAIL"],
                        "not_graded": counts["INFO"]}}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hdbench", type=Path, required=True, help="the built hdbench (build/ci/bin/hdbench)")
    hdbench = parser.parse_args().hdbench
    write_fixture(hdbench, "run_2gpu", 2, samples=True)
    write_fixture(hdbench, "run_8gpu", 8, samples=False)
    write_fixture(hdbench, "run_node8", 8, samples=False, node=True)
