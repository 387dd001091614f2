#!/usr/bin/env python3
"""`hdbench reference validate` says what `hdbench compare` says, on the committed holdouts.

    validate_agrees_test.py --hdbench BIN/hdbench --set results/reference/h200

For every run under SET/holdout/ (machines the set never saw: healthy ones, co-tenants, planted
faults), `hdbench compare SET RUN` exits 0 or 1, and it exits 1 exactly where one
`hdbench reference validate SET RUN...` of all of them condemns the run: a line of check's section
("  RUN_ID: FAIL ...") or of compare's false verdicts ("  RUN_ID: false SLOWER ...") names its run
id, and its directory beside it where that is named otherwise ("  RUN_ID (DIR): FAIL ..."). A false verdict of validate is a SLOWER or FASTER of compare against the same set, and a
healthy run outside the band within its tolerance is neither (the SAME compare prints with a note).
The set's own members, left out one at a time in that same validate, must be condemned nowhere:
one that is would make validate's verdicts on the holdouts suspect.
Exit 0 = they agree on every run, 1 = they do not (each run named).
"""
from __future__ import annotations

import argparse
import csv
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

# A run validate condemns: check's FAIL lines and compare's false verdicts, each under its run id
# and, where the run's directory is named otherwise, that directory.
CONDEMNING = re.compile(r"^  (\S+(?: \(.+?\))?): (?:FAIL|false) ")


def run_id(run: Path) -> str:
    """The name validate gives the run: its results.csv's run id, which need not be the directory's."""
    with (run / "results.csv").open(newline="") as f:
        return next(csv.DictReader(f))["run_id"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hdbench", type=Path, required=True)
    parser.add_argument("--set", type=Path, required=True)
    args = parser.parse_args()
    runs = sorted(p for p in (args.set / "holdout").iterdir() if (p / "results.csv").is_file())
    if not runs:
        print(f"no holdout runs under {args.set / 'holdout'}")
        return 1
    ids = {run: run_id(run) for run in runs}
    labels = {run: ids[run] if run.name == ids[run] else f"{ids[run]} ({run})" for run in runs}
    if len(set(labels.values())) != len(runs):
        print("holdout runs share a name, so validate's lines cannot be told apart: " + ", ".join(labels.values()))
        return 1

    def hdbench(*command: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(args.hdbench), *command], capture_output=True, text=True, timeout=120)

    # validate learns the set's leave-one-out models once for all the runs; it starts first, and the
    # compares share the other cores beside it.
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        validating = pool.submit(hdbench, "reference", "validate", str(args.set), *map(str, runs))
        compares = list(pool.map(lambda run: hdbench("compare", str(args.set), str(run)), runs))
        validate = validating.result()
    verdict = (validate.stdout.strip().splitlines() or ["(no output)"])[-1]
    if validate.returncode not in (0, 1):
        print(f"FAIL validate exit {validate.returncode} ({verdict}): {validate.stderr.strip()}")
        return 1
    condemned: dict[str, list[str]] = {}
    for line in validate.stdout.splitlines():
        if match := CONDEMNING.match(line):
            condemned.setdefault(match.group(1), []).append(line.strip())
    members = sorted(set(condemned) - set(labels.values()))
    for member in members:
        print(f"FAIL set member {member} condemned in leave-one-out: every verdict of validate is suspect")
        for line in condemned[member]:
            print(f"       {line}")
    disagreements = 0
    for run, compare in zip(runs, compares):
        lines = condemned.get(labels[run], [])
        agree = compare.returncode in (0, 1) and (compare.returncode == 1) == bool(lines)
        print(f"{'ok  ' if agree else 'FAIL'} {run.name}: compare exit {compare.returncode}, validate "
              f"{f'condemns it ({len(lines)} lines)' if lines else 'does not condemn it'}")
        disagreements += 0 if agree else 1
    print(f"{len(runs)} holdout runs, {disagreements} disagreement(s), {len(members)} set member(s) condemned ({verdict})")
    return 1 if disagreements or members else 0


if __name__ == "__main__":
    sys.exit(main())
