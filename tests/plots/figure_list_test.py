#!/usr/bin/env python3
"""The figures drawn for a run are exactly the figures its families declare for it.

For one run directory (a committed reference or a fixture) this checks, through plot_run.py run
as the harness runs it, on a private copy of the run (results.csv, meta.json, and check.json
where the run has one: it adds the node figures):
  1. `plot_run.py DIR --list-expected` (computed from the modules' FIGURES and the CSV only)
     equals the committed list tests/plots/expected/<name>.txt, so a figure that stops being
     expected (a renamed parameter no `Need` matches any more) fails here too;
  2. `plot_run.py DIR --strict` draws every one of them and nothing else: the PNG files written
     and printed equal the expected list, no figure "failed" or had "nothing to draw".
Exit 0 = pass, 1 = fail (the differences are printed).

    figure_list_test.py --plot-run plots/plot_run.py --run results/reference/h200-x2 \
                        --expected tests/plots/expected/reference_h200-x2.txt --workdir DIR [--update]

--update rewrites the expected list from --list-expected (review the diff before committing it).
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path


def run_plot(plot_run: Path, *args: str) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, str(plot_run), *args], capture_output=True, text=True, timeout=280)
    print(f"$ plot_run.py {' '.join(args)}  -> exit {result.returncode}")
    return result


def differences(label: str, got: set[str], want: set[str]) -> list[str]:
    lines = []
    if want - got:
        lines.append(f"{label}: missing {', '.join(sorted(want - got))}")
    if got - want:
        lines.append(f"{label}: unexpected {', '.join(sorted(got - want))}")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plot-run", type=Path, required=True)
    parser.add_argument("--run", type=Path, required=True, help="run directory (results.csv, meta.json)")
    parser.add_argument("--expected", type=Path, required=True, help="committed list of figure names")
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--update", action="store_true", help="rewrite --expected from --list-expected")
    args = parser.parse_args()

    run_dir = args.workdir / args.expected.stem
    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir(parents=True)
    for name in ("results.csv", "meta.json", "check.json"):
        if (args.run / name).is_file():
            shutil.copy2(args.run / name, run_dir / name)

    listed = run_plot(args.plot_run, str(run_dir), "--list-expected")
    print(listed.stderr, end="", file=sys.stderr)
    expected = [line.strip() for line in listed.stdout.splitlines() if line.strip()]
    if args.update:
        args.expected.write_text("".join(f"{name}\n" for name in expected), encoding="utf-8")
        print(f"wrote {len(expected)} names to {args.expected}")
        return 0 if listed.returncode == 0 else 1

    failures = []
    if listed.returncode != 0:
        failures.append(f"--list-expected exited {listed.returncode}")
    committed = [line.strip() for line in args.expected.read_text(encoding="utf-8").splitlines() if line.strip()]
    if not committed:
        failures.append(f"{args.expected} lists no figure: a run with data must expect some")
    if len(set(expected)) != len(expected):
        failures.append("--list-expected names a figure twice")
    failures += differences(f"expected figures vs {args.expected.name}", set(expected), set(committed))

    drawn = run_plot(args.plot_run, str(run_dir), "--format", "png", "--dpi", "50", "--strict")
    print(drawn.stderr, end="", file=sys.stderr)
    printed = {Path(line).stem for line in drawn.stdout.splitlines() if line.strip()}
    written = {p.stem for p in (run_dir / "plots").glob("*.png") if p.stat().st_size > 500}
    if drawn.returncode != 0:
        failures.append(f"plot_run --strict exited {drawn.returncode}")
    for marker in ("nothing to draw", " failed:", " is broken: ", "no plots for family"):
        if marker in drawn.stderr:
            failures.append(f"plot_run reported {marker.strip()!r} (see stderr above)")
    failures += differences("figures written vs expected", written, set(expected))
    failures += differences("paths printed vs expected", printed, set(expected))

    if failures:
        print(f"FAIL {args.run}:", *failures, sep="\n  ")
        return 1
    print(f"PASS {args.run}: {len(expected)} figures, each declared, expected and drawn")
    return 0


if __name__ == "__main__":
    sys.exit(main())
