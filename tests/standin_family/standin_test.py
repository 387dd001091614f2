#!/usr/bin/env python3
"""End-to-end test of adding a family: the stand-in family of this folder through the real CLI.

    standin_test.py --hdbench BIN/hdbench --bin-dir DIR --family-dir tests/standin_family
                    --plot-run plots/plot_run.py --workdir WORK

1. `hdbench run --manifest suite.json --bin-dir DIR` (its binary, schema/standin.json and a stand-in
   hdbench-probe with two GPUs) exits 0; results.csv has the stand-in's own parameters as
   columns (`lanes` is no real family's), a row per repetition and a median per case and metric,
   its traffic class on the bandwidth rows, no `extra` or `benchmark` column; meta.json carries
   its declaration and plot module.
2. `hdbench report` shows the headline's % of peak from the family's OWN traffic class
   (standin_triad_link: PCIe, the slower GPU, 3 bytes per output byte: 3 x 8.4 / 31.5 = 80 %).
3. A second run with the stand-in's planted slowdown (`-- --standin.slowdown=10`, routed to it
   alone): `hdbench compare BASE SLOW` says SLOWER for the headline and exits 1; the run against
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
import subprocess
import sys
from pathlib import Path

SKIP = 77
CASES = 8  # access x lanes x sizes in main.cpp
REPETITIONS = 5
HEADLINE = {"access": "linear", "lanes": "8", "size_bytes": str(1 << 30)}


class Checks:
    def __init__(self) -> None:
        self.failures: list[str] = []

    def check(self, condition: bool, what: str) -> bool:
        print(("ok   " if condition else "FAIL ") + what)
        if not condition:
            self.failures.append(what)
        return condition


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
    result = hdbench(args, "run", "--manifest", str(args.family_dir / "suite.json"), "--bin-dir", str(args.bin_dir),
                     "--out", str(out), *flags)
    checks.check(result.returncode == 0, f"{name}: hdbench run exits 0")
    runs = [p for p in out.iterdir() if p.is_dir()] if out.is_dir() else []
    if not checks.check(len(runs) == 1, f"{name}: one run directory under {out}"):
        return None
    return runs[0]


def read_csv(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with path.open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        return list(reader.fieldnames or []), list(reader)


def check_results(checks: Checks, run: Path) -> None:
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
        samples = [r for r in standin if r["metric"] == metric and r["statistic"] == "sample"]
        checks.check(len(medians) == CASES, f"{metric}: one median per case ({len(medians)} of {CASES})")
        checks.check(len(samples) == CASES * REPETITIONS,
                     f"{metric}: one sample row per repetition ({len(samples)} of {CASES * REPETITIONS})")
    checks.check({r["statistic"] for r in standin} <= {"sample", "median"},
                 "only sample and median rows (no mean/min/max/stddev/cv, no fit without a fit_metric)")
    headline = [r for r in standin if r["metric"] == "triad_bandwidth" and r["statistic"] == "median"
                and all(r[k] == v for k, v in HEADLINE.items())]
    if checks.check(len(headline) == 1, "the headline case's median row is there"):
        row = headline[0]
        checks.check(float(row["value"]) == 8.4, f"its median is the middle repetition, 8.4 GB/s ({row['value']})")
        checks.check(row["unit"] == "GB/s" and row["better"] == "higher" and row["headline"] == "yes",
                     "unit, better and headline come from the declaration and the label")
        checks.check(row["traffic"] == "standin_triad_link", "its traffic is the family's own class")
        checks.check(row["device"] == "0" and row["gpus"] == "2" and row["gpu_uuid"] == "GPU-standin-0,GPU-standin-1",
                     "device = first GPU, gpus = 2, gpu_uuid in device order")
    neutral = [r for r in standin if r["metric"] == "lanes_used"]
    checks.check(bool(neutral) and all(r["better"] == "neutral" and r["traffic"] == "-" for r in neutral),
                 "lanes_used is neutral and carries no traffic (the not-applicable token `-`)")
    checks.check(all(r["lanes"].isdigit() for r in standin), "lanes holds integers on every row")
    meta = json.loads((run / "meta.json").read_text(encoding="utf-8"))
    family = meta.get("families", {}).get("standin", {})
    schema = family.get("schema")
    if isinstance(schema, str):
        schema = json.loads(schema)
    checks.check(family.get("plots") == "standin", "meta.json names the family's plot module")
    checks.check(isinstance(schema, dict) and "standin_triad_link" in schema.get("traffic_classes", {}),
                 "meta.json carries the family's declaration with its traffic class")


def check_report(args: argparse.Namespace, checks: Checks, run: Path) -> None:
    result = hdbench(args, "report", str(run))
    checks.check(result.returncode == 0, "hdbench report exits 0")
    report = (run / "report.md").read_text(encoding="utf-8")
    lines = [line for line in report.splitlines() if "triad_bandwidth" in line and "8.4" in line]
    for line in lines:
        print(f"    report: {line}")
    checks.check(any(re.search(r"\| 80(\.0)? ?% \|", line) for line in lines),
                 "report.md shows the headline at 80 % of peak (3 x 8.4 / 31.5: the slower GPU, x3 traffic)")
    checks.check("PCIe per direction of the slower GPU" in report, "report.md names the class's basis")


def check_compare(args: argparse.Namespace, checks: Checks, base: Path, slow: Path) -> None:
    same = hdbench(args, "compare", str(base), str(base))
    checks.check(same.returncode == 0, "compare of a run with itself exits 0")
    slower = hdbench(args, "compare", str(base), str(slow))
    checks.check(slower.returncode == 1, "compare against the 10 % slower run exits 1")
    lines = [line for line in slower.stdout.splitlines() if "triad_bandwidth" in line]
    checks.check(any("SLOWER" in line for line in lines), "it names triad_bandwidth SLOWER")
    every = hdbench(args, "compare", "--all", str(base), str(slow))
    neutral = [line for line in every.stdout.splitlines() if "lanes_used" in line]
    checks.check(len(neutral) == CASES and not any("SLOWER" in l or "FASTER" in l for l in neutral),
                 "the neutral lanes_used, doubled in the slow run, gets no verdict (compare --all)")


def plotting_python() -> str | None:
    candidates = [os.environ.get("HDBENCH_PYTHON"), shutil.which("python3"), "/usr/bin/python3"]
    for candidate in candidates:
        if candidate and subprocess.run([candidate, "-c", "import matplotlib, numpy"],
                                        capture_output=True).returncode == 0:
            return candidate
    return None


def check_plots(args: argparse.Namespace, checks: Checks, run: Path) -> bool:
    """False when no Python can draw (the step is skipped, not passed)."""
    python = plotting_python()
    if python is None:
        print("skip plot step: no Python with matplotlib and numpy (HDBENCH_PYTHON, python3, /usr/bin/python3)")
        return False
    plots = run / "plots"
    shutil.rmtree(plots, ignore_errors=True)
    result = hdbench(args, "plot", str(run))
    checks.check(result.returncode == 0, "hdbench plot exits 0")
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
    slow = run_once(args, checks, "slow", "--", "--standin.slowdown=10")
    drew = True
    if base is not None:
        check_results(checks, base)
        check_report(args, checks, base)
        if slow is not None:
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
