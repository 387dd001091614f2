#!/usr/bin/env python3
"""`hdbench reference validate` says what `hdbench compare` says, on the committed holdouts.

    validate_agrees_test.py --hdbench BIN/hdbench --set results/reference/h200

For every run under SET/holdout/ (machines the set never saw: healthy ones, co-tenants, planted
faults), `hdbench compare SET RUN` and `hdbench reference validate SET RUN` must exit alike: a
false verdict of validate is a SLOWER or FASTER of compare against the same set, and a healthy
run outside the band within its tolerance is neither (the SAME compare prints with a note).
Exit 0 = they agree on every run, 1 = they do not (each run named).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hdbench", type=Path, required=True)
    parser.add_argument("--set", type=Path, required=True)
    args = parser.parse_args()
    runs = sorted(p for p in (args.set / "holdout").iterdir() if (p / "results.csv").is_file())
    if not runs:
        print(f"no holdout runs under {args.set / 'holdout'}")
        return 1
    def exits(run: Path) -> tuple[subprocess.CompletedProcess, subprocess.CompletedProcess]:
        return tuple(subprocess.run([str(args.hdbench), *command, str(args.set), str(run)], capture_output=True, text=True,
                                    timeout=120) for command in (["compare"], ["reference", "validate"]))

    # Every run on its own core: validate learns the set's leave-one-out models again for each.
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        results = list(pool.map(exits, runs))
    disagreements = 0
    for run, (compare, validate) in zip(runs, results):
        verdict = (validate.stdout.strip().splitlines() or ["(no output)"])[-1]
        agree = compare.returncode == validate.returncode and compare.returncode in (0, 1)
        print(f"{'ok  ' if agree else 'FAIL'} {run.name}: compare exit {compare.returncode}, validate exit "
              f"{validate.returncode} ({verdict})")
        disagreements += 0 if agree else 1
    print(f"{len(runs)} holdout runs, {disagreements} disagreement(s)")
    return 1 if disagreements else 0


if __name__ == "__main__":
    sys.exit(main())
