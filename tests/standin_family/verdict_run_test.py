#!/usr/bin/env python3
"""The verdict run's selection and stopping rule, pinned where they act (issue 46, items 2 and 4).

    verdict_run_test.py --hdbench BIN/hdbench --bin-dir DIR --family-dir tests/standin_family --workdir WORK

`hdbench run --verdict` of the stand-in, whose repetitions report a planted bandwidth of 20 GB/s
alternately PERCENT above and below it (--bandwidth, --spread), so each case's interval of the
median is exactly [20 (1 - d), 20 (1 + d)] and the stopping rule's outcome is exact: a case stops
`precise` at the floor (5) when d <= a quarter of the tolerance that judges it, else at the
ceiling (20). results.csv's `stopped_by` and `repetitions` are asserted on every row, exactly.
- --sizes=4M,8M: the gated headlines are the four 8 MiB cases (the metric's tolerance, 0.5: a
  quarter is 0.125); check's own check (strided, 8 lanes, 4 MiB) is no headline there, so its own
  tolerance (0.6, not the metric's: 0.15) alone judges it.
  - d = 10 %, between an eighth and a quarter of both tolerances: every case precise after 5;
  - d = 14 %, between a quarter of the metric's and of the check's: the headlines go to the
    ceiling (20), the checked case is precise after 5.
- The time ceiling, in seconds: one headline (64 KiB, --benchmark_filter), d = 40 % (never
  precise), each repetition sleeping 0.7 s: past the 4 s after the 6th (4.2 s; the 5th ends at
  3.5 s, so a loaded machine needs 0.1 s more per repetition to stop it sooner): `time`, 6.
- Skipped for memory at the gate's largest size (--memory=20M: 8 MiB needs 24 MiB): the verdict
  run keeps the 4 MiB cases, the largest that can run, as the headlines, and the 8 MiB ones as
  skipped rows that say why.

Exit 0 = all passed, 1 = a check failed (each failure is printed).
"""
from __future__ import annotations

import argparse
import csv
import os
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
from hdb_test_support import Checks, finish, stopping_counts  # noqa: E402

HANG_GUARD = 240  # any one command: a hang guard, never a measurement
MIB = 1 << 20
CHECKED = ("strided", "8", str(4 * MIB))  # schema.json's check: access, lanes, size_bytes


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hdbench", type=Path, required=True)
    parser.add_argument("--bin-dir", type=Path, required=True)
    parser.add_argument("--family-dir", type=Path, required=True)
    parser.add_argument("--workdir", type=Path, required=True)
    return parser.parse_args()


def verdict_run(args: argparse.Namespace, name: str, *flags: str) -> list[dict[str, str]]:
    """The stand-in's rows of results.csv of `hdbench run --verdict -- FLAGS`."""
    out = args.workdir / name
    env = dict(os.environ, HDBENCH_PLOTS_DIR=str(args.workdir / "no-plots"), HDBENCH_REFERENCE_DIR=str(args.workdir / "no-sets"))
    command = [str(args.hdbench), "run", "--verdict", "--manifest", str(args.family_dir / "suite.json"), "--bin-dir",
               str(args.bin_dir), "--out", str(out), "--", "--standin.bandwidth=20", *flags]
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=HANG_GUARD)
    print(f"$ hdbench run --verdict ... -- --standin.bandwidth=20 {' '.join(flags)}  -> exit {result.returncode}")
    if result.returncode != 0:
        print(result.stdout + result.stderr)
        return []
    runs = [p for p in out.iterdir() if p.is_dir()]
    with (runs[0] / "results.csv").open(newline="", encoding="utf-8") as f:
        return [r for r in csv.DictReader(f) if r["family"] == "standin"]


def case_of(row: dict[str, str]) -> tuple[str, str, str]:
    return row["access"], row["lanes"], row["size_bytes"]


def stopping(rows: list[dict[str, str]]) -> dict[tuple[str, str, str], set[tuple[str, str, int]]]:
    """Per case, the (stopped_by, repetitions, sample rows) its measured rows say: one element when they agree."""
    by_case: dict[tuple, list[dict[str, str]]] = {}
    for row in rows:
        if row["metric"] == "triad_bandwidth" and row["statistic"] in ("sample", "median"):
            by_case.setdefault(case_of(row), []).append(row)
    return {case: {(r["stopped_by"], r["repetitions"], sum(1 for s in case_rows if s["statistic"] == "sample"))
                   for r in case_rows} for case, case_rows in by_case.items()}


def expect_stops(checks: Checks, what: str, rows: list[dict[str, str]], expected: dict[tuple, tuple[str, int]]) -> None:
    got = stopping(rows)
    checks.check(set(got) == set(expected), f"{what}: the verdict run measured exactly {sorted(expected)} (got {sorted(got)})")
    for case, (reason, count) in sorted(expected.items()):
        checks.check(got.get(case) == {(reason, str(count), count)},
                     f"{what}: {'/'.join(case)} stopped_by {reason} after {count} repetitions, on every row "
                     f"(got {sorted(got.get(case, set()))})")


def gated(size: int, reason: str, count: int) -> dict[tuple, tuple[str, int]]:
    return {(access, lanes, str(size)): (reason, count) for access in ("linear", "strided") for lanes in ("4", "8")}


def main() -> int:
    args = parse_args()
    args.workdir = args.workdir.resolve()
    shutil.rmtree(args.workdir, ignore_errors=True)
    for empty in ("no-plots", "no-sets"):
        (args.workdir / empty).mkdir(parents=True)
    checks = Checks()
    counts = stopping_counts(args.bin_dir / "hdbench-standin")

    narrow = verdict_run(args, "spread-10", "--standin.sizes=4M,8M", "--standin.spread=10")
    expect_stops(checks, "spread 10 %", narrow, {**gated(8 * MIB, "precise", counts["floor"]), CHECKED: ("precise", counts["floor"])})
    headline = {r["headline"] for r in narrow if case_of(r) == CHECKED}
    checks.check(headline == {"no"}, f"spread 10 %: the checked case is no headline at these sizes ({headline})")

    wider = verdict_run(args, "spread-14", "--standin.sizes=4M,8M", "--standin.spread=14")
    expect_stops(checks, "spread 14 %", wider, {**gated(8 * MIB, "ceiling", counts["ceiling"]), CHECKED: ("precise", counts["floor"])})

    timed = verdict_run(args, "time", "--standin.sizes=64K", "--standin.spread=40", "--standin.repetition-seconds=0.7",
                        "--benchmark_filter=linear/lanes:4/")
    expect_stops(checks, "0.7 s a repetition", timed, {("linear", "4", str(64 << 10)): ("time", 6)})

    short = verdict_run(args, "memory", "--standin.sizes=4M,8M", "--standin.memory=20M")
    measured = {case_of(r) for r in short if r["status"] == "ok" and r["statistic"] == "median" and r["metric"] == "triad_bandwidth"}
    headlines = {case_of(r) for r in short if r["headline"] == "yes" and r["statistic"] == "median"}
    skipped = {case_of(r): r["reason"] for r in short if r["status"] == "skipped"}
    want = set(gated(4 * MIB, "", 0))
    checks.check(measured == want and headlines == want,
                 f"memory short of 8 MiB: the four 4 MiB cases, the largest that can run, are measured and gate ({sorted(headlines)})")
    checks.check(set(skipped) == set(gated(8 * MIB, "", 0)) and all(
        why == "not enough memory: its three arrays need 24 MiB, 20 MiB free (--memory)" for why in skipped.values()),
                 f"and the four 8 MiB cases are skipped rows saying why ({sorted(set(skipped.values()))})")

    return finish(checks, args.workdir)


if __name__ == "__main__":
    sys.exit(main())
