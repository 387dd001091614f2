#!/usr/bin/env python3
"""CTest checks for plots/plot_run.py, run as a subprocess exactly as the harness runs it.

Each check copies the fixture run into its own fresh directory under --workdir (so the source
tree is never written and checks can run in parallel), runs plot_run.py and asserts on exit
status, files and messages. Exit 0 = pass, 1 = fail (the reason is printed).

    smoke_test.py --plot-run plots/plot_run.py --fixture tests/plots/fixtures/run_copy \
                  --workdir build/tests/plots CHECK
"""
from __future__ import annotations

import argparse
import csv
import io
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Callable

# Every figure the copy fixture must produce; a missing one means a figure silently broke.
EXPECTED_FIGURES = (
    "copy_bandwidth_h2d", "copy_bandwidth_d2h", "copy_bandwidth_bidir", "copy_bandwidth_d2d",
    "copy_fit_h2d", "copy_fit_d2h", "copy_fit_d2d",
    "copy_pinned_speedup", "copy_latency", "copy_alloc",
)


class CheckFailed(Exception):
    pass


def expect(condition: bool, message: str) -> None:
    if not condition:
        raise CheckFailed(message)


def fresh_run(fixture: Path, workdir: Path, name: str) -> Path:
    """A private copy of the fixture run, named after the check."""
    run_dir = workdir / name
    shutil.rmtree(run_dir, ignore_errors=True)
    shutil.copytree(fixture, run_dir)
    return run_dir


def plot(plot_run: Path, *args: str) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, str(plot_run), *args], capture_output=True, text=True,
                            timeout=240)
    print(f"$ plot_run.py {' '.join(args)}  -> exit {result.returncode}")
    print(result.stdout, end="")
    print(result.stderr, end="", file=sys.stderr)
    return result


def rewrite_csv(path: Path, change: Callable[[list[dict[str, str]]], list[dict[str, str]]]) -> None:
    """Edit a results.csv through the csv module, keeping its header and quoting."""
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        fields, rows = reader.fieldnames, list(reader)
    out = io.StringIO()
    writer = csv.DictWriter(out, fields, lineterminator="\n")
    writer.writeheader()
    writer.writerows(change(rows))
    path.write_text(out.getvalue(), encoding="utf-8")


def check_figures(ctx: argparse.Namespace) -> None:
    """Default run: every expected figure in PNG and SVG, non-empty, paths on stdout."""
    run_dir = fresh_run(ctx.fixture, ctx.workdir, "figures")
    result = plot(ctx.plot_run, str(run_dir))
    expect(result.returncode == 0, f"exit {result.returncode}, expected 0")
    printed = {Path(line) for line in result.stdout.split()}
    for name in EXPECTED_FIGURES:
        for fmt in ("png", "svg"):
            path = run_dir / "plots" / f"{name}.{fmt}"
            expect(path.is_file() and path.stat().st_size > 1000, f"{path} missing or empty")
            expect(path in printed, f"{path} not printed on stdout")
    expect(" failed:" not in result.stderr, "a figure reported a failure")
    expect("skipped: copy/alloc" in result.stderr, "the skipped fixture case is not listed on stderr")


def check_output_and_format(ctx: argparse.Namespace) -> None:
    """-o and --format: only the asked format, only in the asked directory."""
    run_dir = fresh_run(ctx.fixture, ctx.workdir, "output_and_format")
    out = run_dir / "elsewhere"
    result = plot(ctx.plot_run, str(run_dir), "-o", str(out), "--format", "svg")
    expect(result.returncode == 0, f"exit {result.returncode}, expected 0")
    expect(not (run_dir / "plots").exists(), "wrote into DIR/plots despite -o")
    expect(sorted(p.suffix for p in out.iterdir()) == [".svg"] * len(EXPECTED_FIGURES),
           f"expected {len(EXPECTED_FIGURES)} SVG files only in {out}")


def check_unknown_family(ctx: argparse.Namespace) -> None:
    """A family without a module is listed, not an error; the copy figures are still drawn."""
    run_dir = fresh_run(ctx.fixture, ctx.workdir, "unknown_family")
    rewrite_csv(run_dir / "results.csv",
                lambda rows: rows + [dict(rows[0], family="teleport", case="beam")])
    result = plot(ctx.plot_run, str(run_dir), "--format", "png")
    expect(result.returncode == 0, f"exit {result.returncode}, expected 0")
    expect("no plots for family teleport" in result.stderr, "unknown family not listed")


def check_bad_schema(ctx: argparse.Namespace) -> None:
    """schema_version 2: exit 2 with exactly one line that says why, nothing drawn."""
    run_dir = fresh_run(ctx.fixture, ctx.workdir, "bad_schema")
    rewrite_csv(run_dir / "results.csv", lambda rows: [dict(r, schema_version="2") for r in rows])
    result = plot(ctx.plot_run, str(run_dir))
    expect(result.returncode == 2, f"exit {result.returncode}, expected 2")
    lines = result.stderr.strip().splitlines()
    expect(len(lines) == 1 and "schema_version 2" in lines[0], f"expected one clear line, got {lines}")
    expect(not result.stdout.strip(), "printed output paths for a refused run")


def check_missing_csv(ctx: argparse.Namespace) -> None:
    """No results.csv: exit 2 with one line naming the file."""
    run_dir = fresh_run(ctx.fixture, ctx.workdir, "missing_csv")
    (run_dir / "results.csv").unlink()
    result = plot(ctx.plot_run, str(run_dir))
    expect(result.returncode == 2, f"exit {result.returncode}, expected 2")
    lines = result.stderr.strip().splitlines()
    expect(len(lines) == 1 and "results.csv" in lines[0], f"expected one clear line, got {lines}")


def check_no_meta(ctx: argparse.Namespace) -> None:
    """meta.json is optional: without it every figure is still drawn (no GPU name, no peaks)."""
    run_dir = fresh_run(ctx.fixture, ctx.workdir, "no_meta")
    (run_dir / "meta.json").unlink()
    result = plot(ctx.plot_run, str(run_dir), "--format", "png")
    expect(result.returncode == 0, f"exit {result.returncode}, expected 0")
    expect(len(list((run_dir / "plots").glob("*.png"))) == len(EXPECTED_FIGURES), "figures missing")


CHECKS = {
    "figures": check_figures,
    "output_and_format": check_output_and_format,
    "unknown_family": check_unknown_family,
    "bad_schema": check_bad_schema,
    "missing_csv": check_missing_csv,
    "no_meta": check_no_meta,
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plot-run", type=Path, required=True)
    parser.add_argument("--fixture", type=Path, required=True)
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("check", choices=sorted(CHECKS))
    ctx = parser.parse_args()
    ctx.workdir.mkdir(parents=True, exist_ok=True)
    try:
        CHECKS[ctx.check](ctx)
    except CheckFailed as failure:
        print(f"FAIL {ctx.check}: {failure}", file=sys.stderr)
        return 1
    print(f"PASS {ctx.check}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
