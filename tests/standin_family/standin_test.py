#!/usr/bin/env python3
"""End-to-end test of adding a family: the stand-in family of this folder through the real CLI.

    standin_test.py --hdbench BIN/hdbench --bin-dir DIR --family-dir tests/standin_family
                    --plot-run plots/plot_run.py --workdir WORK

The stand-in is a family on family_main's CPU backend: it measures a triad over host memory on the
CPU, so its numbers are real and vary; every check below holds for any honest measurement.
1. `hdbench run --manifest suite.json --bin-dir DIR` (its binary, schema/standin.json and a stand-in
   hdbench-probe with two GPUs) exits 0; the binary ran on the CPU backend (its context says so
   and holds no GPU fingerprint); results.csv has the stand-in's own parameters as columns
   (`lanes` is no real family's), a row per repetition (family_main's defaults: 10 for the gated
   largest size, 5 for the others) and a median per case and metric, its traffic class on the
   bandwidth rows, no `extra` or `benchmark` column; every sample's bandwidth is its size over its
   time; meta.json carries its declaration and plot module.
2. `hdbench report` shows the headline's % of peak from the family's OWN traffic class
   (standin_triad_link: PCIe, the slower GPU, 3 bytes per output byte: 3 x median / 31.5 GB/s),
   and the family's own report rules from the registry: its footnote and section, and its lanes
   anomaly in the slow run's report only.
3. A second run with the stand-in's planted slowdown (`-- --standin.slowdown=400`, routed to it
   alone): `hdbench compare BASE SLOW` says SLOWER for a headline and exits 1; the run against
   itself exits 0; the neutral metric (doubled in the slow run) gets no verdict.
4. `hdbench plot` draws the figure its plot module declares (found via HDBENCH_PLOT_MODULES),
   and what plot_run expects for the run is exactly what was drawn.

Exit 0 = all passed, 1 = a check failed (each failure is printed), 77 = everything but the plot
step passed and no Python with matplotlib is available to draw (reported as skipped).
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
from hdb_test_support import Checks, plotting_python, stopping_counts  # noqa: E402

SKIP = 77
LARGEST = str(4 << 20)  # the largest of the default --sizes of standin.cpp: 64K,512K,4M
CASES = 12  # access x lanes x sizes in standin.cpp
GATED_CASES = 4  # access x lanes at the largest size
HEADLINE = {"access": "linear", "lanes": "8", "size_bytes": LARGEST}
# Five times slower: more than a loaded 2-core machine moves one timed run against another.
SLOWDOWN_PERCENT = 400
PEAK_GBPS = 16 * 16 * 128 / 130 / 8  # GPU 1 of the stand-in probe: PCIe Gen4 x16 per direction (16 GT/s, 128b/130b), the slower of the two: 31.51 GB/s
LANES_ANOMALY = "ran with other lanes than asked"


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hdbench", type=Path, required=True)
    parser.add_argument("--bin-dir", type=Path, required=True)
    parser.add_argument("--family-dir", type=Path, required=True)
    parser.add_argument("--plot-run", type=Path, required=True)
    parser.add_argument("--workdir", type=Path, required=True)
    return parser.parse_args()


def environment(family_dir: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["HDBENCH_PLOT_MODULES"] = str(family_dir / "plots")
    env.setdefault("MPLBACKEND", "Agg")
    return env


def hdbench(args: argparse.Namespace, *command: str) -> subprocess.CompletedProcess:
    result = subprocess.run([str(args.hdbench), *command], capture_output=True, text=True,
                            env=environment(args.family_dir), timeout=240)
    print(f"$ hdbench {' '.join(command)}  -> exit {result.returncode}")
    for line in (result.stdout + result.stderr).splitlines()[-40:]:
        print(f"    {line}")
    return result


def run_once(args: argparse.Namespace, checks: Checks, name: str, *flags: str) -> Path | None:
    out = args.workdir / name
    # The stand-in's strided cases read below half their peak, so check FAILs them: measured once
    # here, where the rows of one try are counted (confirm_test.py confirms).
    result = hdbench(args, "run", "--manifest", str(args.family_dir / "suite.json"), "--bin-dir", str(args.bin_dir),
                     "--out", str(out), "--confirm=off", *flags)
    checks.check(result.returncode == 0, f"{name}: hdbench run exits 0")
    runs = [p for p in out.iterdir() if p.is_dir()] if out.is_dir() else []
    if not checks.check(len(runs) == 1, f"{name}: one run directory under {out}"):
        return None
    return runs[0]


def read_csv(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with path.open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        return list(reader.fieldnames or []), list(reader)


def check_backend(checks: Checks, run: Path) -> None:
    """The raw JSON's context: family_main's CPU backend, no GPU fingerprint, no warm-up."""
    try:
        context = json.loads((run / "raw" / "standin.json").read_text(encoding="utf-8")).get("context", {})
    except (OSError, json.JSONDecodeError) as e:
        checks.check(False, f"raw/standin.json reads as JSON ({e})")
        return
    checks.check(context.get("hdbench.backend") == "cpu", "the binary ran on family_main's CPU backend (hdbench.backend=cpu)")
    gpu_keys = sorted(k for k in context if k.startswith(("gpu.", "node.", "warmup")))
    checks.check(not gpu_keys, f"its context holds no GPU or node fingerprint and no warm-up ({gpu_keys[:3]})")
    checks.check(context.get("hdbench.devices") == "0,1", "its stand-in devices are 0,1")


def check_results(checks: Checks, run: Path, repetitions: dict[str, int]) -> dict[str, float]:
    """The CSV's checks; the medians of triad_bandwidth by (access, lanes, size_bytes)."""
    header, rows = read_csv(run / "results.csv")
    checks.check(bool(rows) and all(r["schema_version"] == "3" for r in rows), "results.csv is schema 3")
    for column in ("access", "lanes", "size_bytes"):
        checks.check(column in header, f"results.csv has the declared parameter `{column}` as its own column")
    if all(c in header for c in ("device", "gpus", "metric", "access", "lanes", "size_bytes")):
        checks.check(header.index("gpus") < header.index("access") < header.index("lanes") < header.index("metric"),
                     "parameter columns sit between the core columns, in declaration order")
    checks.check("extra" not in header and "benchmark" not in header, "no `extra` or `benchmark` column")
    standin = [r for r in rows if r["family"] == "standin"]
    checks.check(all(r["status"] == "ok" for r in standin),
                 "every stand-in row is ok: " + "; ".join({r["reason"] for r in standin if r["status"] != "ok"}))
    for metric in ("triad_bandwidth", "triad_time", "lanes_used"):
        medians = [r for r in standin if r["metric"] == metric and r["statistic"] == "median"]
        checks.check(len(medians) == CASES, f"{metric}: one median per case ({len(medians)} of {CASES})")
        for gated in (True, False):
            want = repetitions["gated" if gated else "other"] * (GATED_CASES if gated else CASES - GATED_CASES)
            samples = [r for r in standin if r["metric"] == metric and r["statistic"] == "sample"
                       and (r["size_bytes"] == LARGEST) == gated]
            checks.check(len(samples) == want, f"{metric}: one sample row per repetition of the "
                         f"{'gated largest size' if gated else 'other sizes'} ({len(samples)} of {want})")
    # A full run keeps the fixed counts (--stopping=auto without --verdict), and says so on every row.
    measured = [r for r in standin if r["statistic"] in ("sample", "median")]
    checks.check(bool(measured) and all(r["stopped_by"] == "fixed" for r in measured),
                 "every measured row says its case stopped by the fixed count (stopped_by = fixed)")
    checks.check(all(int(r["repetitions"]) == repetitions["gated" if r["size_bytes"] == LARGEST else "other"]
                     for r in measured if r["repetitions"].isdigit()) and all(r["repetitions"].isdigit() for r in measured),
                 f"every measured row's repetitions is its case's count ({repetitions['gated']} gated, {repetitions['other']} others)")
    # The declaration's "fit" of triad_time: its rows exist where the host's times give a fit (alpha >= 0).
    fit_metrics = {"triad_fit_bandwidth", "triad_fit_latency", "triad_fit_n_half"}
    checks.check({r["statistic"] for r in standin if r["metric"] not in fit_metrics} <= {"sample", "median"},
                 "only sample and median rows besides the declared fit (no mean/min/max/stddev/cv)")
    checks.check(all(r["statistic"] == "fit" for r in standin if r["metric"] in fit_metrics),
                 "the declared fit's metrics are fit rows only")
    checks.check(all(r["headline"] == ("yes" if r["metric"] == "triad_bandwidth" and r["size_bytes"] == LARGEST else "no")
                     for r in standin), "the gate (size_bytes: largest) makes triad_bandwidth of the largest size the headline")
    case_of = lambda r: (r["access"], r["lanes"], r["size_bytes"])  # noqa: E731
    samples: dict[tuple, dict[str, float]] = {}
    for r in standin:
        if r["statistic"] == "sample":
            samples.setdefault(case_of(r) + (r["sample_index"],), {})[r["metric"]] = float(r["value"])
    consistent = [abs(s["triad_bandwidth"] * s["triad_time"] * 1e3 / int(k[2]) - 1) < 1e-9
                  for k, s in samples.items() if "triad_bandwidth" in s and "triad_time" in s]
    checks.check(bool(consistent) and all(consistent), "every sample's bandwidth is its size over its time")
    checks.check(all(float(r["value"]) > 0 for r in standin if r["metric"] == "triad_bandwidth"), "every bandwidth is measured (> 0)")
    medians: dict[str, float] = {}
    for r in standin:
        if r["metric"] == "triad_bandwidth" and r["statistic"] == "median":
            values = [s["triad_bandwidth"] for k, s in samples.items() if k[:3] == case_of(r)]
            checks.check(bool(values) and abs(float(r["value"]) - statistics.median(values)) <= 1e-9 * float(r["value"]),
                         f"the median row of {case_of(r)} is the median of its samples")
            medians["/".join(case_of(r))] = float(r["value"])
    headline = [r for r in standin if r["metric"] == "triad_bandwidth" and r["statistic"] == "median"
                and all(r[k] == v for k, v in HEADLINE.items())]
    if checks.check(len(headline) == 1, "the headline case's median row is there"):
        row = headline[0]
        checks.check(row["unit"] == "GB/s" and row["better"] == "higher" and row["headline"] == "yes",
                     "unit, better and headline come from the declaration and the gate")
        checks.check(row["traffic"] == "standin_triad_link", "its traffic is the family's own class")
        checks.check(row["device"] == "0" and row["gpus"] == "2" and row["gpu_uuid"] == "GPU-standin-0,GPU-standin-1",
                     "device = first stand-in device, gpus = 2, gpu_uuid in device order")
    lanes = [r for r in standin if r["metric"] == "lanes_used"]
    checks.check(bool(lanes) and all(r["better"] == "neutral" and r["traffic"] == "-" for r in lanes),
                 "lanes_used is neutral and carries no traffic (the not-applicable token `-`)")
    checks.check(all(float(r["value"]) == float(r["lanes"]) for r in lanes), "lanes_used is the lanes asked for")
    checks.check(all(r["lanes"].isdigit() for r in standin), "lanes holds integers on every row")
    meta = json.loads((run / "meta.json").read_text(encoding="utf-8"))
    family = meta.get("families", {}).get("standin", {})
    schema = family.get("schema")
    if isinstance(schema, str):
        schema = json.loads(schema)
    checks.check(family.get("plots") == "standin", "meta.json names the family's plot module")
    checks.check(isinstance(schema, dict) and "standin_triad_link" in schema.get("traffic_classes", {}),
                 "meta.json carries the family's declaration with its traffic class")
    return medians


def report_cells(report: str, params: str, metric: str) -> list[str] | None:
    """The cells of the family table's row for the case described by `params` and `metric`."""
    for line in report.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 7 and cells[0] == "triad" and cells[1].endswith(params) and cells[2] == metric:
            return cells
    return None


def check_report(args: argparse.Namespace, checks: Checks, run: Path, medians: dict[str, float]) -> None:
    result = hdbench(args, "report", str(run))
    checks.check(result.returncode == 0, "hdbench report exits 0")
    report = (run / "report.md").read_text(encoding="utf-8")
    cells = report_cells(report, " ".join(f"{k}={v}" for k, v in HEADLINE.items()), "triad_bandwidth")
    median = medians.get("/".join(HEADLINE.values()))
    if checks.check(cells is not None and median is not None, "report.md has the headline's row"):
        print(f"    report: {' | '.join(cells)}")
        expected = 3 * median / PEAK_GBPS * 100
        shown = re.fullmatch(r"([0-9.]+) %", cells[5])
        checks.check(shown is not None and abs(float(shown.group(1)) - expected) <= 0.051,
                     f"its % of peak is 3 x {median:.4g} / {PEAK_GBPS:.4g} = {expected:.2f} % "
                     f"(the slower GPU, x3 traffic; report: {cells[5]})")
        checks.check("PCIe per direction of the slower GPU" in cells[6], "and names the class's basis")
    # The family's own rules, found through the registry the harness build generated.
    checks.check("Stand-in figures are triads over host memory" in report, "report.md has the family's footnote (report.cpp)")
    checks.check("Stand-in triad bandwidth (medians" in report, "report.md has the family's own section (report.cpp)")
    checks.check(LANES_ANOMALY not in report, "the base run has no lanes anomaly")


def check_slow_report(checks: Checks, slow: Path) -> None:
    report = (slow / "report.md").read_text(encoding="utf-8")
    lines = [line for line in report.splitlines() if LANES_ANOMALY in line]
    for line in lines:
        print(f"    slow report: {line}")
    checks.check(len(lines) == 1 and f"standin: {CASES} triad cases" in lines[0],
                 f"the slow run's report flags its doubled lanes, one anomaly line for all {CASES} cases (report.cpp)")


def check_compare(args: argparse.Namespace, checks: Checks, base: Path, slow: Path) -> None:
    same = hdbench(args, "compare", str(base), str(base))
    checks.check(same.returncode == 0, "compare of a run with itself exits 0")
    slower = hdbench(args, "compare", str(base), str(slow))
    checks.check(slower.returncode == 1, f"compare against the run {SLOWDOWN_PERCENT} % longer a pass exits 1")
    lines = [line for line in slower.stdout.splitlines() if "triad_bandwidth" in line]
    checks.check(any("SLOWER" in line for line in lines), "it names triad_bandwidth SLOWER")
    every = hdbench(args, "compare", "--all", str(base), str(slow))
    neutral = [line for line in every.stdout.splitlines() if "lanes_used" in line]
    checks.check(len(neutral) == CASES and not any("SLOWER" in l or "FASTER" in l for l in neutral),
                 "the neutral lanes_used, doubled in the slow run, gets no verdict (compare --all)")


def check_plots(args: argparse.Namespace, checks: Checks, run: Path) -> bool:
    """False when no Python can draw (the step is skipped, not passed)."""
    python = plotting_python("matplotlib, numpy")
    if python is None:
        print("skip plot step: no Python with matplotlib and numpy (HDBENCH_PYTHON, python3, /usr/bin/python3)")
        return False
    plots = run / "plots"
    shutil.rmtree(plots, ignore_errors=True)
    graded = run / "check.json"
    graded_before = graded.stat().st_mtime_ns
    result = hdbench(args, "plot", str(run))
    checks.check(result.returncode == 0, "hdbench plot exits 0")
    checks.check(graded.stat().st_mtime_ns == graded_before, "hdbench plot kept the run's own check.json")
    drawn = sorted(p.stem for p in plots.glob("*.png")) if plots.is_dir() else []
    # The declared figure, and the node's own figure that every run with a check.json gets.
    checks.check(drawn == ["node_at_a_glance", "standin_triad"],
                 f"hdbench plot drew the declared figure standin_triad and node_at_a_glance (drew {drawn})")
    checks.check((plots / "standin_triad.svg").is_file(), "and its SVG")
    expected = subprocess.run([python, str(args.plot_run), str(run), "--list-expected"], capture_output=True,
                              text=True, env=environment(args.family_dir))
    checks.check(expected.returncode == 0 and sorted(expected.stdout.split()) == drawn,
                 f"plot_run --list-expected names what was drawn ({expected.stdout.split()}, exit {expected.returncode})")
    return True


def main() -> int:
    args = parse_args()
    shutil.rmtree(args.workdir, ignore_errors=True)
    args.workdir.mkdir(parents=True)
    checks = Checks()
    base = run_once(args, checks, "base")
    slow = run_once(args, checks, "slow", "--", f"--standin.slowdown={SLOWDOWN_PERCENT}")
    drew = True
    if base is not None:
        check_backend(checks, base)
        medians = check_results(checks, base, stopping_counts(args.bin_dir / "hdbench-standin"))
        check_report(args, checks, base, medians)
        if slow is not None:
            check_slow_report(checks, slow)
            check_compare(args, checks, base, slow)
        drew = check_plots(args, checks, base)
    if checks.failures:
        print(f"\n{len(checks.failures)} check(s) failed:")
        for failure in checks.failures:
            print(f"  {failure}")
        return 1
    return 0 if drew else SKIP


if __name__ == "__main__":
    sys.exit(main())
