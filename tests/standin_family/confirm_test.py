#!/usr/bin/env python3
"""`hdbench run` confirms a FAIL before it stands, end to end on the stand-in family (no GPU).

    confirm_test.py --hdbench BIN/hdbench --bin-dir DIR --manifest tests/standin_family/suite.json
                    --workdir WORK

A reference set of the stand-in's kind (make_standin_set: its planted STANDIN_BANDWIDTH, so a run
slowed by FAULT_SLOWDOWN FAILs however loaded the machine), then, each a verdict run graded
against that set:
1. a transient: slow while a file exists, which the first try removes (--slow-while), so the
   confirmation reads the set's bandwidth: the run and check exit 0; the gated figures are WARN
   lines that say "first try ..., confirmed ...: a transient, not the node"; check.json calls them
   transient with both attempts; results.csv holds attempt 1 of every case and attempt 2 of exactly
   the cases behind the FAILs; `hdbench compare SET RUN` reads the confirmed figure (no SLOWER);
   `hdbench check RUN` again gives the same lines;
2. slow on every try: check exits 1, each gated figure FAILs "confirmed: failed on every try" with
   three attempts in check.json and results.csv; compare against the set exits 1;
3. slow with --confirm=off: check exits 1, its FAIL lines say "not confirmed: measured once" and
   there is no attempt 2;
4. against peaks (no set, as a kind without one): reporting 20 GB/s (190 % of its peak: 3 bytes
   cross per output byte) but a tenth of that (19 %) on the first try (--slow-while), the run and
   check exit 0 and the figures are WARN transients; at 2 GB/s on every try they FAIL, confirmed.
The pauses are short (--confirm=0.2,0.2): what is tested is the rule, not the clock.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
from hdb_test_support import FAULT_SLOWDOWN, STANDIN_BANDWIDTH, Checks, make_standin_set  # noqa: E402

RUN_TIMEOUT = 240
PAUSES = "0.2,0.2"
TRIES = 3


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hdbench", type=Path, required=True)
    parser.add_argument("--bin-dir", type=Path, required=True)
    parser.add_argument("--manifest", type=Path, required=True)
    parser.add_argument("--workdir", type=Path, required=True)
    return parser.parse_args()


class Harness:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.env = dict(os.environ, HDBENCH_PLOTS_DIR=str(args.workdir / "no-plots"))

    def hdbench(self, *command: str, sets: str = "set") -> subprocess.CompletedProcess:
        env = dict(self.env, HDBENCH_REFERENCE_DIR=str(self.args.workdir / sets))
        result = subprocess.run([str(self.args.hdbench), *command], capture_output=True, text=True, env=env,
                                timeout=RUN_TIMEOUT)
        print(f"$ hdbench {' '.join(command)}  -> exit {result.returncode}")
        for line in (result.stdout + result.stderr).splitlines()[-30:]:
            print(f"    {line}")
        return result

    def run(self, name: str, *flags: str, sets: str = "set") -> tuple[subprocess.CompletedProcess, Path]:
        run_dir_file = self.args.workdir / f"{name}.run-dir"
        result = self.hdbench("run", "--verdict", "--bin-dir", str(self.args.bin_dir), "--manifest", str(self.args.manifest),
                              "--out", str(self.args.workdir / "runs"), "--run-dir-file", str(run_dir_file), *flags, sets=sets)
        return result, Path(run_dir_file.read_text().strip())


def attempts_by_case(run_dir: Path) -> dict[tuple, set[int]]:
    with (run_dir / "results.csv").open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    cases: dict[tuple, set[int]] = {}
    for row in rows:
        if row["case"] == "-":
            continue
        key = (row["case"], row["device"], row["access"], row["lanes"], row["size_bytes"])
        cases.setdefault(key, set()).add(int(row["attempt"]))
    return cases


def figure_lines(run_dir: Path) -> list[dict]:
    lines = json.loads((run_dir / "check.json").read_text())["lines"]
    return [line for line in lines if line["family"] == "standin"]


def gated(line: dict) -> bool:
    return line["key"] is not None and line["key"]["params"].get("size_bytes") == str(4 << 20)


def check_transient(h: Harness, checks: Checks) -> None:
    flag = h.args.workdir / "slow-first-try"
    flag.touch()
    result, run_dir = h.run("transient", f"--confirm={PAUSES}", "--", STANDIN_BANDWIDTH, FAULT_SLOWDOWN, f"--slow-while={flag}")
    checks.check(result.returncode == 0, "transient: hdbench run exits 0")
    checks.check("measuring them again" in result.stderr, "transient: the run says it measures the FAILs again")
    checks.check(not flag.exists(), "transient: the first try removed the plant")
    check = h.hdbench("check", str(run_dir), "--no-files")
    checks.check(check.returncode == 0, "transient: check exits 0")
    lines = figure_lines(run_dir)
    transient = [line for line in lines if line["confirmation"] == "transient"]
    checks.check(len(transient) >= 1 and all(gated(line) or line["check"] for line in transient),
                 f"transient: {len(transient)} figure(s) a transient, each a gated or checked figure")
    checks.check(all(line["grade"] == "WARN" and [a["grade"] for a in line["attempts"]][0] == "FAIL"
                     and [a["attempt"] for a in line["attempts"]] == [1, 2] for line in transient),
                 "transient: each a WARN whose first attempt FAILed and whose second decided")
    checks.check(all(line["grade"] != "FAIL" for line in lines), "transient: no figure FAILs")
    text = (run_dir / "check.txt").read_text()
    checks.check("a transient, not the node" in text and "first try " in text and ", confirmed " in text,
                 "transient: check.txt names both readings")
    cases = attempts_by_case(run_dir)
    again = {key for key, tries in cases.items() if 2 in tries}
    failed_first = {("triad", str(line["key"]["device"]), line["key"]["params"]["access"], line["key"]["params"]["lanes"],
                     line["key"]["params"]["size_bytes"]) for line in transient}
    checks.check(all(1 in tries for tries in cases.values()), "transient: results.csv keeps the first try of every case")
    checks.check(again == failed_first, f"transient: attempt 2 holds exactly the {len(failed_first)} case(s) whose figures FAILed")
    compare = h.hdbench("compare", str(h.args.workdir / "set" / "standin"), str(run_dir))
    verdicts = [line.split()[0] for line in compare.stdout.splitlines() if line.split()[:1] in (["SLOWER"], ["SAME"], ["FASTER"])]
    checks.check(compare.returncode == 0 and verdicts and "SLOWER" not in verdicts,
                 f"transient: compare against the set reads the confirmed figures (exit 0, no SLOWER: {verdicts})")
    regraded = h.hdbench("check", str(run_dir), "--no-files")
    checks.check(regraded.stdout == check.stdout, "transient: check on the finished run gives the same lines")


def check_persistent(h: Harness, checks: Checks) -> None:
    result, run_dir = h.run("persistent", f"--confirm={PAUSES}", "--", STANDIN_BANDWIDTH, FAULT_SLOWDOWN)
    checks.check(result.returncode == 0, "persistent: hdbench run exits 0 (every family ran)")
    check = h.hdbench("check", str(run_dir), "--no-files")
    checks.check(check.returncode == 1, "persistent: check exits 1")
    failed = [line for line in figure_lines(run_dir) if line["grade"] == "FAIL"]
    checks.check(len(failed) >= 1 and all(line["confirmation"] == "confirmed" for line in failed),
                 f"persistent: {len(failed)} FAIL line(s), each confirmed")
    checks.check(all([a["attempt"] for a in line["attempts"]] == list(range(1, TRIES + 1)) for line in failed),
                 f"persistent: each measured {TRIES} times")
    checks.check("confirmed: failed on every try" in check.stdout, "persistent: the FAIL line says it failed on every try")
    cases = attempts_by_case(run_dir)
    checks.check(any(tries == set(range(1, TRIES + 1)) for tries in cases.values()),
                 "persistent: results.csv holds every try of the failing cases")
    compare = h.hdbench("compare", str(h.args.workdir / "set" / "standin"), str(run_dir))
    checks.check(compare.returncode == 1 and "SLOWER" in compare.stdout, "persistent: compare against the set exits 1, SLOWER")


def check_unconfirmed(h: Harness, checks: Checks) -> None:
    result, run_dir = h.run("unconfirmed", "--confirm=off", "--", STANDIN_BANDWIDTH, FAULT_SLOWDOWN)
    checks.check(result.returncode == 0 and "measuring them again" not in result.stderr,
                 "unconfirmed: hdbench run exits 0 and measures nothing again")
    check = h.hdbench("check", str(run_dir), "--no-files")
    checks.check(check.returncode == 1, "unconfirmed: check exits 1")
    failed = [line for line in figure_lines(run_dir) if line["grade"] == "FAIL"]
    checks.check(len(failed) >= 1 and all(line["confirmation"] == "unconfirmed" for line in failed),
                 "unconfirmed: every FAIL line is unconfirmed")
    checks.check("not confirmed: measured once" in check.stdout, "unconfirmed: check says the FAIL was measured once")
    checks.check(all(tries == {1} for tries in attempts_by_case(run_dir).values()), "unconfirmed: no attempt 2")


def check_against_peaks(h: Harness, checks: Checks) -> None:
    (h.args.workdir / "no-sets").mkdir()
    flag = h.args.workdir / "slow-first-try-peaks"
    flag.touch()
    result, run_dir = h.run("peaks-transient", f"--confirm={PAUSES}", "--", "--standin.bandwidth=20", "--standin.slowdown=900",
                            f"--standin.slow-while={flag}", sets="no-sets")
    check = h.hdbench("check", str(run_dir), "--no-files", sets="no-sets")
    lines = figure_lines(run_dir)
    transient = [line for line in lines if line["confirmation"] == "transient"]
    checks.check(result.returncode == 0 and check.returncode == 0, "peaks transient: hdbench run and check exit 0")
    checks.check(len(transient) >= 1 and all(line["basis"] == "peak" and line["grade"] == "WARN"
                                             and [a["grade"] for a in line["attempts"]] == ["FAIL", "PASS"] for line in transient),
                 f"peaks transient: {len(transient)} figure(s) graded by peak FAILed on the first try only: WARN")
    checks.check(all(line["grade"] != "FAIL" for line in lines), "peaks transient: no figure FAILs")
    checks.check("first try 2 GB/s, confirmed 20 GB/s: a transient, not the node" in check.stdout,
                 "peaks transient: check names both readings")
    result, run_dir = h.run("peaks-persistent", f"--confirm={PAUSES}", "--", "--standin.bandwidth=2", sets="no-sets")
    check = h.hdbench("check", str(run_dir), "--no-files", sets="no-sets")
    failed = [line for line in figure_lines(run_dir) if line["grade"] == "FAIL"]
    checks.check(check.returncode == 1 and len(failed) >= 1 and all(
        line["basis"] == "peak" and line["confirmation"] == "confirmed" and len(line["attempts"]) == TRIES for line in failed),
                 f"peaks persistent: check exits 1, {len(failed)} FAIL line(s) graded by peak, each confirmed on {TRIES} tries")


def main() -> int:
    args = parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    for old in args.workdir.iterdir():
        if old.is_dir():
            shutil.rmtree(old)
        else:
            old.unlink()
    make_standin_set(args.hdbench, args.bin_dir, args.manifest, args.workdir, RUN_TIMEOUT)
    h = Harness(args)
    checks = Checks()
    check_transient(h, checks)
    check_persistent(h, checks)
    check_unconfirmed(h, checks)
    check_against_peaks(h, checks)
    if checks.failures:
        print(f"{len(checks.failures)} check(s) failed")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
