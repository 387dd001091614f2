#!/usr/bin/env python3
"""CTest checks for plots/plot_run.py, run as a subprocess exactly as the harness runs it.

Each check copies a fixture run into its own fresh directory under --workdir (so the source
tree is never written and checks can run in parallel), runs plot_run.py and asserts on exit
status, files and messages. `common` instead calls hdbplots.common directly, for the per-GPU
helpers that no fixture exercises fully. Exit 0 = pass, 1 = fail (the reason is printed).

    smoke_test.py --plot-run plots/plot_run.py --fixture tests/plots/fixtures/run_copy \
                  --two-gpu-fixture tests/plots/fixtures/run_copy_2gpu --workdir build/tests/plots CHECK
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
# A single-GPU run keeps these names (no _gpu0), so it stays comparable with results/reference/.
EXPECTED_FIGURES = (
    "copy_bandwidth_h2d", "copy_bandwidth_d2h", "copy_bandwidth_bidir", "copy_bandwidth_d2d",
    "copy_fit_h2d", "copy_fit_d2h", "copy_fit_d2d",
    "copy_pinned_speedup", "copy_latency", "copy_alloc",
)
# The two-GPU fixture: each single-GPU figure once per GPU, plus all GPUs copying at once.
EXPECTED_TWO_GPU_FIGURES = tuple(f"{name}_gpu{gpu}" for gpu in (0, 1) for name in EXPECTED_FIGURES) + (
    "copy_bandwidth_all_gpus",
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
    """A schema 1 CSV (no device/gpu_uuid columns): exit 2 with exactly one line that says why
    and how to rebuild it, nothing drawn."""
    run_dir = fresh_run(ctx.fixture, ctx.workdir, "bad_schema")
    path = run_dir / "results.csv"
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        fields = [f for f in reader.fieldnames or [] if f not in ("device", "gpu_uuid")]
        rows = [dict(r, schema_version="1") for r in reader]
    out = io.StringIO()
    writer = csv.DictWriter(out, fields, lineterminator="\n", extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)
    path.write_text(out.getvalue(), encoding="utf-8")
    result = plot(ctx.plot_run, str(run_dir))
    expect(result.returncode == 2, f"exit {result.returncode}, expected 2")
    lines = result.stderr.strip().splitlines()
    expect(len(lines) == 1 and "schema_version 1" in lines[0] and "schema_version 2 only" in lines[0],
           f"expected one clear line, got {lines}")
    expect(f"hdbench collect {run_dir}" in lines[0], f"the line does not say how to rebuild the CSV: {lines}")
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


def check_two_gpus(ctx: argparse.Namespace) -> None:
    """Two GPUs: every figure once per GPU (_gpu<N>), none under its single-GPU name, the all-GPUs
    figure, and skipped cases listed per GPU."""
    run_dir = fresh_run(ctx.two_gpu_fixture, ctx.workdir, "two_gpus")
    result = plot(ctx.plot_run, str(run_dir))
    expect(result.returncode == 0, f"exit {result.returncode}, expected 0")
    printed = {Path(line) for line in result.stdout.split()}
    for name in EXPECTED_TWO_GPU_FIGURES:
        for fmt in ("png", "svg"):
            path = run_dir / "plots" / f"{name}.{fmt}"
            expect(path.is_file() and path.stat().st_size > 1000, f"{path} missing or empty")
            expect(path in printed, f"{path} not printed on stdout")
    expect(len(printed) == 2 * len(EXPECTED_TWO_GPU_FIGURES), f"unexpected figures: {sorted(printed)}")
    expect(" failed:" not in result.stderr, "a figure reported a failure")
    for gpu in (0, 1):
        expect(f"api=cudaHostRegister device={gpu} " in result.stderr, f"GPU {gpu}'s skipped case is not listed")


def check_common(ctx: argparse.Namespace) -> None:
    """hdbplots.common's per-GPU helpers on a node whose GPUs differ (no fixture has one)."""
    sys.path.insert(0, str(ctx.plot_run.resolve().parent))
    from hdbplots import common

    meta = {"driver_release": "575.57.08", "gpus": [
        {"index": 0, "name": "NVIDIA H200", "uuid": "GPU-a", "pcie": {"gen_max": 5, "width_max": 16}},
        {"index": 1, "name": "NVIDIA H200", "uuid": "GPU-b", "pcie": {"gen_max": 5, "width_max": 16}},
        {"index": 2, "name": "NVIDIA H200", "uuid": "GPU-c", "pcie": {"gen_max": 5, "width_max": 16}},
        {"index": 3, "name": "NVIDIA H200", "uuid": "GPU-d", "pcie": {"gen_current": 4, "width_current": 8}}]}
    run = common.Run(Path("."), "r1", common.node_info({"node": meta}), ())
    expect(run.subtitle().startswith("GPUs 0–2: NVIDIA H200, PCIe Gen5 x16; GPU 3: NVIDIA H200, PCIe Gen4 x8  ·  "
                                     "driver 575.57.08"), f"mixed-GPU subtitle: {run.subtitle()!r}")
    alike = common.Run(Path("."), "r2", common.node_info({"node": {"gpus": meta["gpus"][:2]}}), ())
    expect(alike.subtitle() == "2 × NVIDIA H200, PCIe Gen5 x16 each  ·  run r2", f"subtitle: {alike.subtitle()!r}")
    expect(run.device_subtitle("3").startswith("GPU 3: NVIDIA H200, PCIe Gen4 x8  ·  "),
           f"device subtitle: {run.device_subtitle('3')!r}")
    expect(run.device_subtitle("7").startswith("GPU 7: unknown GPU"), "an unknown GPU is not said to be unknown")
    gen4_x8 = common.pcie_peak_gbps(4, 8)
    expect(run.pcie_peak("3") == gen4_x8 and run.pcie_peak(1) == common.pcie_peak_gbps(5, 16), "peak by index")
    # CUDA may number the cards differently from nvidia-smi: the UUID decides when it is known.
    expect(run.pcie_peak("0", "GPU-d") == gen4_x8, "peak by UUID")
    row = common.Row(family="copy", case="bandwidth_all_gpus", direction="h2d", host_kind="pinned", api="async",
                     size_bytes=1 << 30, streams=1, extra="", metric="bandwidth", unit="GB/s", statistic="median",
                     value=1.0, status="ok", reason="", device="0,3", gpu_uuid="GPU-a,GPU-d")
    expect([g.index if g else None for g in run.row_gpus(row)] == [0, 3], "row_gpus of a case spanning GPUs")
    rows = [row, common.Row(**{**row.__dict__, "device": "10"}), common.Row(**{**row.__dict__, "device": "2"})]
    expect(common.devices_in(rows) == ["2", "10"], f"devices_in: {common.devices_in(rows)}")
    expect(common.devices_in(rows, spanning=True) == ["0,3"], "devices_in spanning")
    expect(common.per_device_name("copy_alloc", "1", True) == "copy_alloc_gpu1", "per-device name")
    expect(common.per_device_name("copy_alloc", "0", False) == "copy_alloc", "single-GPU name")


CHECKS = {
    "figures": check_figures,
    "two_gpus": check_two_gpus,
    "common": check_common,
    "output_and_format": check_output_and_format,
    "unknown_family": check_unknown_family,
    "bad_schema": check_bad_schema,
    "missing_csv": check_missing_csv,
    "no_meta": check_no_meta,
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plot-run", type=Path, required=True)
    parser.add_argument("--fixture", type=Path, required=True, help="the single-GPU run")
    parser.add_argument("--two-gpu-fixture", type=Path, required=True, help="the two-GPU run")
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
