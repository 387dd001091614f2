#!/usr/bin/env python3
"""Draws every overlap figure from a synthetic run and checks exactly the declared ones are written.

The run is built here rather than stored, so it always carries the schema version of the plot
loader and the columns of the family's declaration (bench/overlap/schema.json, passed as
--schema; results.csv schema 3) with the core columns the harness lists (`hdbench schema-doc
--json`), and the harness records its tables in its meta.json as it does before it plots a run
(make_fixtures.record_harness_tables). Its numbers come from a toy pipeline simulation (one H2D engine,
the SMs and one D2H engine, each serving one operation at a time), which is enough for plausible
Gantt charts; they are not measurements. The test passes when `plot_run.py --list-expected`
(from the module's FIGURES) lists the five overlap figures and `--strict` draws exactly those.

    plot_test.py --plot-run plots/plot_run.py --hdbench BIN/hdbench --schema bench/overlap/schema.json --workdir DIR
Exit 0 = every expected figure written, 1 = not (the reason is printed).
"""
from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
from pathlib import Path

# One pipeline simulator for every synthetic overlap run: the plot fixtures' generator owns it.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "plots"))
from make_fixtures import core_columns, record_harness_tables, simulate  # noqa: E402

EXPECTED = ("overlap_timeline", "overlap_speedup", "overlap_efficiency", "overlap_movement_tax",
            "overlap_stream_semantics")
SIZE = 1 << 30


def rows_for(case: str, labels: dict[str, str], metrics: dict[str, list[float]], units: dict[str, str]) -> list[dict]:
    """Sample and median rows of one case; its parameters and metrics must be declared."""
    declared = SCHEMA["cases"][case]
    unknown = (set(labels) - set(declared["parameters"])) | (set(metrics) - set(declared["metrics"]))
    if unknown:
        raise SystemExit(f"plot_test.py: {case}: not in bench/overlap/schema.json: {sorted(unknown)}")
    rows = []
    for metric, values in metrics.items():
        spec = SCHEMA["metrics"][metric]
        base = {"schema_version": SCHEMA_VERSION, "run_id": "test-run", "family": "overlap", "case": case,
                "device": "0", "gpus": "1", "gpu_uuid": "GPU-synthetic", **labels, "metric": metric,
                "unit": spec.get("unit", units.get(metric, "us")), "better": spec.get("better", "lower"),
                "headline": "no", "traffic": "", "status": "ok", "reason": ""}
        for i, v in enumerate(values):
            rows.append({**base, "statistic": "sample", "sample_index": str(i), "value": repr(v)})
        ordered = sorted(values)
        rows.append({**base, "statistic": "median", "sample_index": "", "value": repr(ordered[len(ordered) // 2])})
    return rows


def synthetic_rows() -> list[dict]:
    one_way = SIZE / 54e3  # us at 54 GB/s
    rows = []
    regimes = {"balanced": 1.0, "compute_heavy": 4.0, "copy_heavy": 0.25}
    units = {"speedup": "ratio", "ideal_speedup": "ratio", "efficiency": "%", "throughput": "GB/s", "tax_ratio": "ratio"}
    for regime, ratio in regimes.items():
        serial = one_way * (2 + ratio)
        for streams in (1, 2, 3, 4, 8):
            for chunks in sorted({streams, 4 * streams, 32}):
                ideal = serial if streams == 1 else max(serial / min(streams, 3) * 1.05, one_way * max(1.14, ratio) * 1.04)
                measured = [ideal * (1.03 + 0.01 * j) if streams > 1 else serial * (1 + 0.005 * j) for j in range(5)]
                metrics = {"pipeline_time": measured, "ideal_time": [ideal] * 5, "serial_time": [serial] * 5,
                           "speedup": [serial / m for m in measured], "ideal_speedup": [serial / ideal] * 5}
                if streams > 1:
                    metrics["efficiency"] = [100 * (serial - m) / (serial - ideal) for m in measured]
                rows += rows_for("pipeline", {"regime": regime, "host_kind": "pinned", "api": "nonblocking",
                                              "streams": str(streams), "chunks": str(chunks), "size_bytes": str(SIZE)},
                                 metrics, units)
    for streams in (1, 2, 4):
        serial = SIZE / 7e3 + one_way + SIZE / 14e3
        rows += rows_for("pipeline", {"regime": "balanced", "host_kind": "pageable", "api": "nonblocking",
                                      "streams": str(streams), "chunks": str(4 * streams), "size_bytes": str(SIZE)},
                         {"pipeline_time": [serial] * 3, "speedup": [1.0] * 3, "ideal_speedup": [1.3] * 3,
                          "ideal_time": [serial / 1.3] * 3, "serial_time": [serial] * 3}, units)
    for host, (h, k, d) in {"pinned": (one_way, one_way, one_way), "pageable": (SIZE / 7e3, one_way, SIZE / 14e3)}.items():
        for streams in (1, 4):
            passes = [simulate(streams, 16, h * (1 + 0.01 * j), k, d, host == "pageable") for j in range(5)]
            for chunk in range(16):
                metrics = {m: [p[chunk][m] for p in passes] for m in passes[0][chunk]}
                metrics["pipeline_time"] = [p[-1]["d2h_end"] for p in passes]
                metrics["ideal_time"] = [one_way * 1.2 if streams > 1 else h + k + d] * 5
                rows += rows_for("timeline", {"regime": "balanced", "host_kind": host, "streams": str(streams),
                                              "chunks": "16", "chunk": str(chunk), "size_bytes": str(SIZE)},
                                 metrics, units)
    for regime, ratio in regimes.items():
        kernel = one_way / 4 * ratio
        for api, factor in {"resident": 1, "round_trip": 1 + 8 / ratio, "host_generated": 1 + 10 / ratio,
                            "device_generated": 1.05}.items():
            rows += rows_for("movement_tax", {"regime": regime, "host_kind": "pinned", "api": api,
                                              "size_bytes": str(SIZE // 4)},
                             {"device_call_time": [kernel * factor] * 3, "tax_ratio": [factor] * 3}, units)
    for api, factor in {"nonblocking": 1.0, "legacy_default": 1.9, "per_thread_default": 1.05, "host_sync": 2.0}.items():
        t = one_way * 1.6 * factor
        rows += rows_for("stream_semantics", {"regime": "balanced", "host_kind": "pinned", "api": api, "streams": "2",
                                              "chunks": "8", "size_bytes": str(SIZE)},
                         {"pipeline_time": [t] * 3, "speedup": [3 * one_way / t] * 3, "ideal_time": [one_way * 1.5] * 3,
                          "serial_time": [3 * one_way] * 3}, units)
    for api, t in {"nonblocking": one_way * 1.25, "graph": one_way * 1.24}.items():
        rows += rows_for("graph", {"regime": "balanced", "host_kind": "pinned", "api": api, "streams": "4",
                                   "chunks": "32", "size_bytes": str(SIZE)},
                         {"pipeline_time": [t] * 3, "speedup": [3 * one_way / t] * 3, "ideal_time": [one_way * 1.2] * 3,
                          "serial_time": [3 * one_way] * 3}, units)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--plot-run", type=Path, required=True)
    parser.add_argument("--hdbench", type=Path, required=True, help="the built hdbench")
    parser.add_argument("--schema", type=Path, required=True, help="bench/overlap/schema.json")
    parser.add_argument("--workdir", type=Path, required=True)
    args = parser.parse_args()
    sys.path.insert(0, str(args.plot_run.resolve().parent))
    global SCHEMA_VERSION, SCHEMA
    from hdbplots.results_csv import SCHEMA_VERSION  # the version this checkout's loader reads
    SCHEMA = json.loads(args.schema.read_text(encoding="utf-8"))

    run_dir = args.workdir / "run_overlap"
    run_dir.mkdir(parents=True, exist_ok=True)
    for old in (run_dir / "plots").glob("*") if (run_dir / "plots").is_dir() else []:
        old.unlink()
    rows = synthetic_rows()
    with (run_dir / "results.csv").open("w", newline="", encoding="utf-8") as handle:
        leading, trailing = core_columns(args.hdbench)
        writer = csv.DictWriter(handle, fieldnames=[*leading, *SCHEMA["parameters"], *trailing], restval="",
                                lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    (run_dir / "meta.json").write_text(json.dumps({"run_id": "test-run", "node": {"gpus": [
        {"index": 0, "uuid": "GPU-synthetic", "name": "synthetic GPU", "pcie": {"gen_max": 5, "width_max": 16}}]},
        "families": {"overlap": {"plots": "overlap", "schema": SCHEMA}}}), encoding="utf-8")
    record_harness_tables(args.hdbench, run_dir)
    listed = subprocess.run([sys.executable, str(args.plot_run), str(run_dir), "--list-expected"],
                            capture_output=True, text=True, timeout=240)
    expected = listed.stdout.split()
    result = subprocess.run([sys.executable, str(args.plot_run), str(run_dir), "--format", "png", "--strict"],
                            capture_output=True, text=True, timeout=240)
    print(result.stdout, end="")
    print(listed.stderr + result.stderr, end="", file=sys.stderr)
    written = {Path(line).stem for line in result.stdout.splitlines()}
    problems = []
    if listed.returncode != 0 or sorted(expected) != sorted(EXPECTED):
        problems.append(f"--list-expected (exit {listed.returncode}) gave {expected}, the module should expect {list(EXPECTED)}")
    if result.returncode != 0 or written != set(expected) or "failed" in result.stderr or "nothing to draw" in result.stderr:
        problems.append(f"exit {result.returncode}, drawn {sorted(written)}")
    if problems:
        print("FAIL: " + "; ".join(problems))
        return 1
    print(f"ok: {len(EXPECTED)} overlap figures in {run_dir / 'plots'}")
    return 0


SCHEMA_VERSION = ""
SCHEMA: dict = {}

if __name__ == "__main__":
    sys.exit(main())
