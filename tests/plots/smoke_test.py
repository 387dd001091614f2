#!/usr/bin/env python3
"""CTest checks for plots/plot_run.py, run as a subprocess exactly as the harness runs it.

Each check copies a fixture run into its own fresh directory under --workdir (so the source
tree is never written and checks can run in parallel), runs plot_run.py and asserts on exit
status, files and messages. `run_model` instead calls hdbplots.run and hdbplots.results_csv
directly, for the per-GPU helpers that no fixture exercises fully, and `node_two_gpus`
hdbplots.node, to read the titles of figures it need not write. Exit 0 = pass, 1 = fail (the
reason is printed).

    smoke_test.py --plot-run plots/plot_run.py --hdbench BIN/hdbench --fixture tests/plots/fixtures/run_copy \
                  --two-gpu-fixture tests/plots/fixtures/run_copy_2gpu --references results/reference \
                  --workdir build/tests/plots CHECK

The core columns and the link rates come from the harness (--hdbench: `schema-doc --json`, and
what `plot` records in a run's meta.json before it draws: make_fixtures.record_harness_tables).
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_fixtures import harness_record, record_harness_tables  # noqa: E402

# Every figure the copy fixture must produce; a missing one means a figure silently broke.
# A single-GPU run keeps these names (no _gpu0), so it stays comparable with results/reference/.
COPY_FIGURES = (
    "copy_bandwidth_h2d", "copy_bandwidth_d2h", "copy_bandwidth_bidir", "copy_bandwidth_d2d",
    "copy_fit_h2d", "copy_fit_d2h", "copy_fit_d2d",
    "copy_pinned_speedup", "copy_latency", "copy_alloc",
)
LADDER = "ladder_moving_data"  # hdbplots.teaching: every run with a pinned h2d copy draws it
GLANCE = "node_at_a_glance"    # hdbplots.node: every run with a check.json draws it, one GPU or more
EXPECTED_FIGURES = COPY_FIGURES + (LADDER,)
# The two-GPU fixture: each single-GPU figure once per GPU, plus all GPUs copying at once.
EXPECTED_TWO_GPU_FIGURES = tuple(f"{name}_gpu{gpu}" for gpu in (0, 1) for name in COPY_FIGURES) + (
    "copy_bandwidth_all_gpus", LADDER,
)


# The node figures of fixtures/run_node8: one per headline figure every GPU (or pair) measured;
# the node-wide lines (all GPUs copying at once, the 8-rank all-reduce) and health lines none.
NODE8_FIGURES = (
    "node_copy_pinned_h2d_1_gib", "node_copy_pinned_d2h_1_gib", "node_copy_pinned_bidirectional_1_gib",
    "node_copy_pageable_h2d_1_gib", "node_copy_pageable_d2h_1_gib",
    "node_copy_h2d_1_b_latency_device_timed", "node_copy_d2h_1_b_latency_device_timed",
    "node_overlap_pipeline_speedup_4_streams_x_32_chunks_balanced",
    "node_sync_graph_of_100_empty_kernels_launch_until_idle",
    "node_p2p_staged_loopback_1_gib",
    "node_p2p_bandwidth_api_ce_peer_direction_uni_size_bytes_1_gib",
)
NODE8_SLOW = ("node_copy_pinned_h2d_1_gib", "pinned h2d 1 GiB: GPU 5 is 20 % below the others (FAIL)")
# results/reference/h200-x2 with the check.json `hdbench check --format json` wrote for it
# (fixtures/check/): graded against peaks, no reference set of two H200s.
NODE_TWO_GPU_FIGURES = (
    "node_copy_bandwidth_api_async_direction_h2d_host_kind_pinned_size_bytes_1_gib_streams_1",
    "node_copy_bandwidth_api_async_direction_d2h_host_kind_pinned_size_bytes_1_gib_streams_1",
    "node_copy_bandwidth_api_async_direction_bidir_host_kind_pinned_size_bytes_1_gib_streams_2",
    "node_copy_latency_api_async_direction_h2d_host_kind_pinned_size_bytes_1_b_streams_1",
    "node_copy_latency_api_async_direction_d2h_host_kind_pinned_size_bytes_1_b_streams_1",
    "node_overlap_pipeline_efficiency_api_nonblocking_chunks_32_host_kind_pinned_regime_balanced_size_bytes_1_gib_streams_4",
    "node_sync_trap_relative_throughput_api_readback_async_every_64",
    "node_p2p_bandwidth_api_staged_direction_uni_size_bytes_1_gib",
    "node_p2p_bandwidth_api_staged_direction_loopback_size_bytes_1_gib",
    "node_p2p_bandwidth_api_ce_peer_direction_uni_size_bytes_1_gib",
    "node_p2p_latency_api_ce_peer_direction_uni_size_bytes_1_b",
    "node_p2p_bandwidth_api_sm_read_direction_uni_size_bytes_1_gib",
    "node_p2p_bandwidth_api_sm_write_direction_uni_size_bytes_1_gib",
    "node_p2p_latency_api_sm_write_direction_uni_size_bytes_1_b",
)
PER_GPU = re.compile(r"_gpu(\d+)$")


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


def plot(plot_run: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if k != "HDBENCH_PLOT_MODULES"}
    result = subprocess.run([sys.executable, str(plot_run), *args], capture_output=True, text=True,
                            timeout=240, env={**environment, **(env or {})})
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
    """One GPU: the copy figures expected (drawing them is the figure-list test's job), under
    their plain names, and the skipped fixture case listed on stderr."""
    run_dir = fresh_run(ctx.fixture, ctx.workdir, "figures")
    result = plot(ctx.plot_run, str(run_dir), "--list-expected")
    expect(result.returncode == 0, f"exit {result.returncode}, expected 0")
    expect(result.stdout.split() == list(EXPECTED_FIGURES), f"expected figures: {result.stdout.split()}")
    expect("skipped: copy/alloc" in result.stderr, "the skipped fixture case is not listed on stderr")
    check_docs_table(ctx)


DOC_ROW = re.compile(r"^\|\s*([a-z0-9_]+)\s*\|([^|]*)\|")
PLACEHOLDER = re.compile(r"`([a-z0-9_]*)<([a-z]+)>([a-z0-9_]*)`\s*\(([^)]*)\)")


def docs_table(path: Path) -> dict[str, str]:
    """docs/plots.md's figure table ("Figures per family"): figure name → family, with
    `copy_fit_<dir>` (h2d, d2h, …) expanded; names left as a pattern (`node_<family>_<figure>`,
    drawn from check.json lines) are kept as written."""
    text = path.read_text(encoding="utf-8")
    start = text.index("## Figures per family")
    table: dict[str, str] = {}
    for line in text[start:].splitlines()[1:]:
        if line.startswith("## "):
            break
        match = DOC_ROW.match(line)
        if not match or match.group(1) == "family":
            continue
        family, cell = match.groups()
        for head, _slot, tail, values in PLACEHOLDER.findall(cell):
            for value in (v.strip() for v in values.split(",")):
                table[f"{head}{value}{tail}"] = family
        for name in re.findall(r"`([^`]+)`", PLACEHOLDER.sub("", cell)):
            table[name] = family
    return table


def module_figures(plot_run: Path) -> dict[str, str]:
    """Every figure name the plot modules can draw: each family module's FIGURES, the teaching
    figures and the node figures (node_<family>_<figure> as its pattern)."""
    sys.path.insert(0, str(plot_run.resolve().parent))
    import importlib

    from hdbplots import node, teaching
    found: dict[str, str] = {}
    for path in sorted((plot_run.resolve().parent / "hdbplots").glob("[a-z]*.py")):
        module = importlib.import_module(f"hdbplots.{path.stem}")
        for figure in getattr(module, "FIGURES", None) or ():
            found[figure.name] = path.stem
    found.update({name: teaching.FAMILY for name in teaching.FIGURE_NAMES})
    found[node.GLANCE] = node.FAMILY
    found["node_<family>_<figure>"] = node.FAMILY
    return found


def check_docs_table(ctx: argparse.Namespace) -> None:
    """docs/plots.md's figure table lists exactly the figures the modules declare, each under its
    family: a figure added or renamed without the table fails here."""
    docs = ctx.references.resolve().parent.parent / "docs" / "plots.md"
    table, modules = docs_table(docs), module_figures(ctx.plot_run)
    missing = sorted(set(modules) - set(table))
    extra = sorted(set(table) - set(modules))
    moved = sorted(n for n in set(table) & set(modules) if table[n] != modules[n])
    expect(not missing and not extra and not moved,
           f"{docs} figure table vs the plot modules: not in the table {missing}, not drawn by any module "
           f"{extra}, under another family {moved}")


def check_output_and_format(ctx: argparse.Namespace) -> None:
    """-o and --format: every figure in only the asked format, only in the asked directory, each
    path printed on stdout."""
    run_dir = fresh_run(ctx.fixture, ctx.workdir, "output_and_format")
    out = run_dir / "elsewhere"
    result = plot(ctx.plot_run, str(run_dir), "-o", str(out), "--format", "svg")
    expect(result.returncode == 0, f"exit {result.returncode}, expected 0")
    expect(not (run_dir / "plots").exists(), "wrote into DIR/plots despite -o")
    expect(sorted(p.name for p in out.iterdir()) == sorted([f"{n}.svg" for n in EXPECTED_FIGURES] + ["figures.json"]),
           f"expected {len(EXPECTED_FIGURES)} SVG files and figures.json only in {out}: "
           f"{sorted(p.name for p in out.iterdir())}")
    index = json.loads((out / "figures.json").read_text(encoding="utf-8"))["figures"]
    expect([(f["name"], f["files"]) for f in index] == [(n, [f"{n}.svg"]) for n in EXPECTED_FIGURES]
           and all(f["title"] and f["family"] == ("teaching" if f["name"] == LADDER else "copy") for f in index)
           and all(isinstance(f["title_lines"], int) and isinstance(f["panels"], list) and isinstance(f["claims"], list)
                   for f in index), f"figures.json: {index}")
    printed = {Path(line) for line in result.stdout.split()}
    for name in EXPECTED_FIGURES:
        path = out / f"{name}.svg"
        expect(path.stat().st_size > 1000 and path in printed, f"{path} empty or not printed on stdout")
    expect(" failed:" not in result.stderr, "a figure reported a failure")


def check_unknown_family(ctx: argparse.Namespace) -> None:
    """A family without a module is listed, not an error; the copy figures are still expected."""
    run_dir = fresh_run(ctx.fixture, ctx.workdir, "unknown_family")
    rewrite_csv(run_dir / "results.csv",
                lambda rows: rows + [dict(rows[0], family="teleport", case="beam")])
    result = plot(ctx.plot_run, str(run_dir), "--list-expected")
    expect(result.returncode == 0, f"exit {result.returncode}, expected 0")
    expect("no plots for family teleport" in result.stderr, "unknown family not listed")
    expect(result.stdout.split() == list(EXPECTED_FIGURES), "the copy figures are no longer expected")


def check_bad_schema(ctx: argparse.Namespace) -> None:
    """An older CSV: exit 2 with exactly one line that names its version and the one read (schema 1
    also how to rebuild it: `hdbench collect DIR`), nothing drawn."""
    for version, command in (("2", None), ("1", "hdbench collect")):
        run_dir = fresh_run(ctx.fixture, ctx.workdir, f"bad_schema_{version}")
        rewrite_csv(run_dir / "results.csv", lambda rows: [dict(r, schema_version=version) for r in rows])
        result = plot(ctx.plot_run, str(run_dir))
        expect(result.returncode == 2, f"schema {version}: exit {result.returncode}, expected 2")
        lines = result.stderr.strip().splitlines()
        expect(len(lines) == 1 and f"schema_version {version}" in lines[0] and "schema_version 3 only" in lines[0],
               f"schema {version}: expected one clear line, got {lines}")
        expect(f"`{command} {run_dir}`" in lines[0] if command else "`" not in lines[0],
               f"schema {version}: the line names no command, or the wrong one: {lines}")
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
    """meta.json records results.csv's core columns (results_csv): without one, or with one written
    before it did, plot_run exits 2 with one line naming the hdbench command that adds it. With the
    meta.json `hdbench plot` writes for a run that has none (results_csv alone), the
    declarations come from the checkout's manifest and every figure is drawn (no GPU name, no peaks)."""
    run_dir = fresh_run(ctx.fixture, ctx.workdir, "no_meta")
    meta = json.loads((run_dir / "meta.json").read_text(encoding="utf-8"))
    del meta["results_csv"]
    (run_dir / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
    for state in ("has no results_csv", "not found"):
        refused = plot(ctx.plot_run, str(run_dir), "--format", "png")
        lines = refused.stderr.strip().splitlines()
        expect(refused.returncode == 2 and len(lines) == 1 and state in lines[0]
               and f"`hdbench plot {run_dir}`" in lines[0], f"meta.json {state}: exit {refused.returncode}, {lines}")
        (run_dir / "meta.json").unlink(missing_ok=True)
    record_harness_tables(ctx.hdbench, run_dir)
    written = json.loads((run_dir / "meta.json").read_text(encoding="utf-8"))
    expect(sorted(written) == ["results_csv", "schema_version"], f"hdbench plot wrote {sorted(written)}")
    result = plot(ctx.plot_run, str(run_dir), "--format", "png", "--dpi", "50", "--strict")
    expect(result.returncode == 0, f"exit {result.returncode}, expected 0")
    expect(sorted(p.stem for p in (run_dir / "plots").glob("*.png")) == sorted(EXPECTED_FIGURES), "figures missing")
    expect("harness/suite.json" in result.stderr, "the fallback to the manifest is not said")


def check_two_gpus(ctx: argparse.Namespace) -> None:
    """Two GPUs: every figure once per GPU (_gpu<N>), none under its single-GPU name, the all-GPUs
    figure, and skipped cases listed per GPU."""
    run_dir = fresh_run(ctx.two_gpu_fixture, ctx.workdir, "two_gpus")
    result = plot(ctx.plot_run, str(run_dir), "--list-expected")
    expect(result.returncode == 0, f"exit {result.returncode}, expected 0")
    expect(sorted(result.stdout.split()) == sorted(EXPECTED_TWO_GPU_FIGURES), f"expected: {result.stdout.split()}")
    for gpu in (0, 1):
        expect(f"api=cudaHostRegister device={gpu} " in result.stderr, f"GPU {gpu}'s skipped case is not listed")


def check_run_model(ctx: argparse.Namespace) -> None:
    """hdbplots.run's per-GPU helpers on a node whose GPUs differ (no fixture has one), and the
    typed rows of hdbplots.results_csv."""
    sys.path.insert(0, str(ctx.plot_run.resolve().parent))
    from hdbplots.figures import per_device_name
    from hdbplots.results_csv import CoreColumns, Row
    from hdbplots.run import Run, node_info
    from hdbplots.selection import devices_in

    # Each PCIe rate is the one meta.json records (made-up numbers here: the plots compute none).
    fast, slow = 60.0, 15.0
    meta = {"driver_release": "575.57.08", "gpus": [
        {"index": 0, "name": "NVIDIA H200", "uuid": "GPU-a", "pcie": {"gen_max": 5, "width_max": 16, "peak_GBps": fast}},
        {"index": 1, "name": "NVIDIA H200", "uuid": "GPU-b", "pcie": {"gen_max": 5, "width_max": 16, "peak_GBps": fast}},
        {"index": 2, "name": "NVIDIA H200", "uuid": "GPU-c", "pcie": {"gen_max": 5, "width_max": 16, "peak_GBps": fast}},
        {"index": 3, "name": "NVIDIA H200", "uuid": "GPU-d", "pcie": {"gen_current": 4, "width_current": 8,
                                                                      "peak_GBps": slow}}]}
    run = Run(Path("."), "r1", node_info({"node": meta}), ())
    expect(run.subtitle().startswith("GPUs 0–2: NVIDIA H200, PCIe Gen5 x16; GPU 3: NVIDIA H200, PCIe Gen4 x8  ·  "
                                     "driver 575.57.08"), f"mixed-GPU subtitle: {run.subtitle()!r}")
    alike = Run(Path("."), "r2", node_info({"node": {"gpus": meta["gpus"][:2]}}), ())
    expect(alike.subtitle() == "2 × NVIDIA H200, PCIe Gen5 x16 each  ·  run r2", f"subtitle: {alike.subtitle()!r}")
    expect(run.device_subtitle("3").startswith("GPU 3: NVIDIA H200, PCIe Gen4 x8  ·  "),
           f"device subtitle: {run.device_subtitle('3')!r}")
    expect(run.device_subtitle("7").startswith("GPU 7: unknown GPU"), "an unknown GPU is not said to be unknown")
    expect(run.pcie_peak("3") == slow and run.pcie_peak(1) == fast, "peak by index")
    # CUDA may number the cards differently from nvidia-smi: the UUID decides when it is known.
    expect(run.pcie_peak("0", "GPU-d") == slow, "peak by UUID")
    columns = CoreColumns.from_record(harness_record(ctx.hdbench))
    row = Row.of(columns, family="copy", case="bandwidth_all_gpus", device=0, gpus=2, gpu_uuid="GPU-a,GPU-d",
                        direction="h2d", host_kind="pinned", api="async", size_bytes=1 << 30, streams=1,
                        metric="bandwidth", unit="GB/s", statistic="median", value=1.0)
    expect([g.index if g else None for g in run.row_gpus(row)] == [0, 3], "row_gpus of a case spanning GPUs (by UUID)")
    unknown = row.replace(gpu_uuid="")
    expect(run.row_devices(unknown) == [0, 1], "row_devices without UUIDs: device, device+1, …")
    rows = [row, row.replace(device=10), row.replace(device=2)]
    expect(devices_in(rows) == [0, 2, 10], f"devices_in: {devices_in(rows)}")
    expect(per_device_name("copy_alloc", 1, True) == "copy_alloc_gpu1", "per-device name")
    expect(per_device_name("copy_alloc", 0, False) == "copy_alloc", "single-GPU name")
    # The generic row: every column by name, a misspelt one fails loudly, an empty one is None.
    expect(row["size_bytes"] == 1 << 30 and row.get("regime") is None and row.get("regime", "-") == "-", "row access")
    try:
        row["sise_bytes"]
        expect(False, "a column the CSV does not have must raise KeyError")
    except KeyError:
        pass
    # NVLink: the slowest GPU's links_active × data_per_link_GBps, both from meta.json (no rate in the code).
    nv = {"gpus": [{"index": i, "uuid": f"GPU-{i}", "nvlink": {"links_active": links, "data_per_link_GBps": 50.0}}
                   for i, links in enumerate((18, 18, 6))]}
    rate = Run(Path("."), "r3", node_info({"node": nv}), ()).nvlink_bus_rate()
    expect(rate is not None and rate[0] == 300.0 and rate[1].index == 2, f"nvlink_bus_rate: {rate}")
    # An older meta.json has the per-link rate in node.topology only: the harness copies it to
    # node.gpus before the plots read the run (hdbench plot), the plots read node.gpus alone.
    old = {"gpus": [{"index": 0, "uuid": "GPU-0", "compute_capability": "8.0", "nvlink": {"links_active": 4}}],
           "topology": {"gpus": [{"index": 0, "uuid": "GPU-0", "nvlink": {"per_link_GBps": 25.0}}]}}
    expect(Run(Path("."), "r4", node_info({"node": old}), ()).nvlink_bus_rate() is None,
           "the plots read node.topology's per-link rate themselves")
    older = ctx.workdir / "run_model_older_meta"
    shutil.rmtree(older, ignore_errors=True)
    older.mkdir(parents=True)
    (older / "meta.json").write_text(json.dumps({"node": old}), encoding="utf-8")
    record_harness_tables(ctx.hdbench, older)
    recorded = json.loads((older / "meta.json").read_text(encoding="utf-8"))
    rate = Run(Path("."), "r4", node_info(recorded), ()).nvlink_bus_rate()
    expect(rate is not None and rate[0] == 100.0, f"per-link rate of an older meta.json, as hdbench records it: {rate}")
    none = Run(Path("."), "r5", node_info({"node": {"gpus": [{"index": 0}]}}), ()).nvlink_bus_rate()
    expect(none is None, "no NVLink facts in meta.json: no line rate")
    # PCIe through the host: the slower link of the GPUs a path crosses; unknown if one is unknown.
    limit = run.pcie_limit(run.pair_gpus(0, 3))
    expect(limit is not None and limit[0] == slow and limit[1].index == 3, f"pcie_limit of a mixed pair: {limit}")
    limit = run.pcie_limit(run.pair_gpus(0, 1, "GPU-a,GPU-d"))
    expect(limit is not None and limit[1].uuid == "GPU-d", f"pair_gpus by the row's UUIDs: {limit}")
    expect(run.pcie_limit(run.pair_gpus(2, 2)) == (fast, run.gpu_info(2)), "a loopback: its GPU's own link")
    expect(run.pcie_limit(run.pair_gpus(0, 7)) is None, "a pair with a GPU meta.json does not list has no limit")
    unrecorded = node_info({"node": {"gpus": [{"index": 0, "pcie": {"gen_max": 5, "width_max": 16}}]}})
    expect(unrecorded.gpus[0].pcie_peak_gbps is None and unrecorded.gpus[0].link == "PCIe Gen5 x16",
           "the plots turned a PCIe link into a rate themselves (only meta.json's peak_GBps may give one)")
    check_columns(columns)
    sources = sorted((ctx.plot_run.resolve().parent / "hdbplots").glob("*.py"))
    for path in sources:
        text = path.read_text(encoding="utf-8")
        for rate_literal in ("26.56", "NVLINK_LINK_GBPS", "128 / 130", "128/130", "GT/s per lane ×"):
            expect(rate_literal not in text, f"{path.name} holds a link rate or its formula ({rate_literal!r}); "
                                             f"read meta.json")
        for column_list in ("LEADING_COLUMNS", "TRAILING_COLUMNS", '"sample", "median"'):
            expect(column_list not in text, f"{path.name} holds a list of core columns or statistics "
                                            f"({column_list!r}); read meta.json's results_csv")


def check_columns(columns) -> None:
    """Parameter columns are the ones the families declare; every other column is core (`columns`,
    the harness's list). A column that is neither is read as text and named in a warning, never a
    parameter."""
    from hdbplots.declarations import FamilyDeclaration
    from hdbplots.results_csv import parameter_columns, parse_rows

    declarations = {"copy": FamilyDeclaration("copy", "copy", {"parameters": {
        "direction": {"type": "text"}, "size_bytes": {"type": "int"}}})}
    header = list(columns.leading) + ["direction", "size_bytes"] + list(columns.trailing) + ["node_kind"]
    params, notes = parameter_columns(header, declarations, columns)
    expect(params == {"direction": "text", "size_bytes": "int"}, f"parameter columns: {params}")
    expect(len(notes) == 1 and "node_kind" in notes[0] and "results_csv" in notes[0], f"warnings: {notes}")
    values = {**{c: "" for c in header}, "schema_version": "3", "run_id": "r", "family": "copy", "case": "bandwidth",
              "device": "0", "gpus": "1", "direction": "h2d", "size_bytes": "1024", "metric": "bandwidth",
              "statistic": "median", "value": "1.5", "status": "ok", "node_kind": "42"}
    _, rows = parse_rows(Path("results.csv"), header, [[values[c] for c in header]], params, columns)
    expect(rows[0].params() == {"direction": "h2d", "size_bytes": 1024} and rows[0]["node_kind"] == "42",
           f"an unknown core column is no parameter and stays text: {rows[0]!r}")
    expect(rows[0].value == 1.5 and rows[0].device == 0 and rows[0].sample_index is None,
           f"core columns typed as results_csv says: {rows[0]!r}")
    # A family that declares nothing: a column no declaration names may be its parameter.
    bare = {"standin": FamilyDeclaration("standin", None, {})}
    params, notes = parameter_columns(header, bare, columns)
    expect(list(params) == ["direction", "size_bytes", "node_kind"] and len(notes) == 1
           and "declares no parameters" in notes[0], f"an undeclared family's columns: {params}, {notes}")


def check_p2p_mixed_links(ctx: argparse.Namespace) -> None:
    """A 2-GPU node whose GPUs have different PCIe links (GPU 0 Gen5 x16, GPU 1 Gen4 x16): every
    p2p figure's PCIe limit of a pair is the smaller link, 31.5 GB/s (the p2p report's rule,
    bench/p2p/report.cpp), not the first GPU's 63 GB/s; each loopback has its own GPU's; the
    ladder's staged rung the smaller. The same fixture with alike links keeps the plain label.
    The rates are the harness's: GPU 1's link is changed in meta.json and the harness records its
    peak (record_harness_tables), as `hdbench plot` does before it draws."""
    sys.path.insert(0, str(ctx.plot_run.resolve().parent))
    from hdbplots import p2p, teaching
    from hdbplots.figures import plan
    from hdbplots.run import load_run

    def limits(run_dir: Path) -> dict[str, list[tuple[float, str]]]:
        """The PCIe lines each p2p figure draws: (GB/s, label) per axes, from the reference lines."""
        run, _ = load_run(run_dir)
        jobs = {p.file_name: p for p in plan(run, "p2p", p2p.FIGURES)}
        found: dict[str, list[tuple[float, str]]] = {}
        for name in ("p2p_bandwidth_pairs", "p2p_chunk_sweep", "p2p_loopback"):
            expect(name in jobs, f"{name} is not expected for {run_dir.name}: {sorted(jobs)}")
            figure = jobs[name].figure.draw(jobs[name].scope)
            for index, ax in enumerate(figure.axes):
                lines = [(t.xy[1], t.get_text()) for t in ax.texts if t.get_text().startswith("PCIe")]
                if lines:
                    found[f"{name}[{index}]"] = lines
        staged = [r for r in teaching.rungs(run, run.ok_rows("copy") + run.ok_rows("p2p"), 0) if r.key == "staged"]
        expect(len(staged) == 1, f"the ladder has no staged rung for {run_dir.name}")
        found["ladder staged"] = [(staged[0].limit, staged[0].limit_label)]
        return found

    alike_dir = fresh_run(ctx.two_gpu_fixture.parent / "run_2gpu", ctx.workdir, "p2p_alike_links")
    gen5 = json.loads((alike_dir / "meta.json").read_text(encoding="utf-8"))["node"]["gpus"][0]["pcie"]["peak_GBps"]
    alike = limits(alike_dir)
    expect(alike["p2p_bandwidth_pairs[0]"] == [(gen5, "PCIe Gen5 x16: 63.0 GB/s")]
           and alike["p2p_loopback[0]"] == [(gen5, "PCIe Gen5 x16, one direction: 63.0 GB/s")]
           and alike["ladder staged"][0][0] == gen5, f"alike links: {alike}")

    run_dir = fresh_run(ctx.two_gpu_fixture.parent / "run_2gpu", ctx.workdir, "p2p_mixed_links")
    meta = json.loads((run_dir / "meta.json").read_text(encoding="utf-8"))
    meta["node"]["gpus"][1]["pcie"] = {"gen_max": 4, "width_max": 16, "gen_current": 4, "width_current": 16}
    (run_dir / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
    record_harness_tables(ctx.hdbench, run_dir)
    gen4 = json.loads((run_dir / "meta.json").read_text(encoding="utf-8"))["node"]["gpus"][1]["pcie"]["peak_GBps"]
    expect(round(gen4, 2) == 31.51 and round(gen5, 2) == 63.02, f"the harness's peaks: Gen4 x16 {gen4}, Gen5 x16 {gen5}")
    mixed = limits(run_dir)
    pairs = [v for k, v in mixed.items() if k.startswith("p2p_bandwidth_pairs")]
    expect(len(pairs) == 2 and all(len(v) == 1 and v[0][0] == gen4 and "PCIe Gen4 x16: 31.5 GB/s" in v[0][1]
                                   and "GPU 1's, the slower link" in v[0][1] for v in pairs),
           f"p2p_bandwidth_pairs: each pair's limit must be the smaller link (31.5 GB/s): {pairs}")
    chunk = mixed.get("p2p_chunk_sweep[0]", [])
    expect(len(chunk) == 1 and chunk[0][0] == gen4, f"p2p_chunk_sweep (GPU 0 → 1): {chunk}")
    loop = sorted(mixed.get("p2p_loopback[0]", []))
    expect([v for v, _ in loop] == [gen4, gen5] and "(GPU 1)" in loop[0][1] and "(GPU 0)" in loop[1][1],
           f"p2p_loopback: each GPU against its own link: {loop}")
    expect(mixed["ladder staged"][0][0] == gen4, f"ladder staged rung: {mixed['ladder staged']}")


def check_recorded_tables(ctx: argparse.Namespace) -> None:
    """Every committed run's meta.json (results/reference/**, tests/plots/fixtures/*) already holds
    what the harness records before it plots a run (results_csv, each GPU's PCIe peak, NVLink rates
    copied from node.topology): recording them on a copy (record_harness_tables) changes nothing,
    so plot_run draws them directly with the harness's columns and rates of today."""
    fixtures = Path(__file__).resolve().parent / "fixtures"
    metas = sorted(ctx.references.glob("**/meta.json")) + sorted(fixtures.glob("run_*/meta.json"))
    expect(len(metas) > 20, f"only {len(metas)} committed meta.json files found")
    stale = []
    for index, meta in enumerate(metas):
        copy = ctx.workdir / "recorded_tables" / str(index)
        shutil.rmtree(copy, ignore_errors=True)
        copy.mkdir(parents=True)
        shutil.copy2(meta, copy / "meta.json")
        record_harness_tables(ctx.hdbench, copy)
        if json.loads((copy / "meta.json").read_text(encoding="utf-8")) != json.loads(meta.read_text(encoding="utf-8")):
            stale.append(str(meta.parent))
    expect(not stale, f"meta.json lacks what hdbench records today; run `hdbench plot DIR` (it records them "
                      f"before it draws) for: {', '.join(stale)}")


def write_csv(path: Path, header: list[str], rows: list[dict[str, str]]) -> None:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, header, restval="", lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def standin_header(ctx: argparse.Namespace) -> list[str]:
    """The core columns (the harness's list) around the stand-in's parameters."""
    record = harness_record(ctx.hdbench)
    return ([c["name"] for c in record["leading_columns"]] + ["knob", "label"]
            + [c["name"] for c in record["trailing_columns"]])


def standin_run(ctx: argparse.Namespace, name: str, plots: str | None, types: dict[str, str] | None) -> Path:
    """A run of one family no module in plots/ knows: parameter `knob` (digits), `label` (text)."""
    run_dir = ctx.workdir / name
    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir(parents=True)
    rows = []
    for knob in (1, 2, 4):
        for k, v in enumerate((10.0 * knob, 10.5 * knob, 9.5 * knob)):
            rows.append({"schema_version": "3", "run_id": name, "family": "standin", "case": "probe", "device": "0",
                         "gpus": "1", "gpu_uuid": "GPU-s", "knob": str(knob), "label": "007" if knob == 1 else "x",
                         "metric": "speed", "unit": "GB/s", "better": "higher", "headline": "no",
                         "statistic": "sample", "sample_index": str(k), "value": str(v), "status": "ok"})
        rows.append(dict(rows[-1], statistic="median", sample_index="", value=str(10.0 * knob)))
    write_csv(run_dir / "results.csv", standin_header(ctx), rows)
    family: dict = {"family": "standin"}
    if plots:
        family["plots"] = plots
    if types is not None:
        family["schema"] = {"family": "standin", "parameters": {k: {"type": v} for k, v in types.items()}}
    (run_dir / "meta.json").write_text(json.dumps({"run_id": name, "families": {"standin": family}}), encoding="utf-8")
    record_harness_tables(ctx.hdbench, run_dir)
    return run_dir


def check_layout(ctx: argparse.Namespace) -> None:
    """plots/hdbplots' shared helpers (hdbplots._NOT_PLOT_MODULES) are files of their own, import
    no family's module, and no two modules of the package import each other, directly or round a
    cycle (docs/plots.md, "Adding plots for another family")."""
    import ast
    sys.path.insert(0, str(ctx.plot_run.resolve().parent))
    import hdbplots
    package = ctx.plot_run.resolve().parent / "hdbplots"
    imports: dict[str, set[str]] = {}
    for path in sorted(package.glob("[a-z]*.py")):
        found = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                found |= {node.module} if node.module else {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("hdbplots."):
                found.add(node.module.split(".")[1])
        imports[path.stem] = found
    helpers = set(hdbplots._NOT_PLOT_MODULES)
    expect(helpers <= set(imports), f"helpers without a file: {sorted(helpers - set(imports))}")
    for helper in sorted(helpers & set(imports)):
        expect(imports[helper] <= helpers, f"{helper}.py imports {sorted(imports[helper] - helpers)}, not a helper")

    def cycle(module: str, path: tuple[str, ...]) -> tuple[str, ...] | None:
        if module in path:
            return path[path.index(module):] + (module,)
        return next((c for m in sorted(imports.get(module, ())) if (c := cycle(m, path + (module,)))), None)

    cycles = [c for m in sorted(imports) if (c := cycle(m, ()))]
    expect(not cycles, f"hdbplots modules import each other: {' -> '.join(cycles[0]) if cycles else ''}")


def check_discovery(ctx: argparse.Namespace) -> None:
    """plot_run imports the module meta.json names, found through HDBENCH_PLOT_MODULES when it is
    not in plots/hdbplots; its FIGURES alone decide what is drawn; columns are typed from the
    declaration; nothing is imported by the `family` column."""
    modules = Path(__file__).resolve().parent / "modules"
    env = {"HDBENCH_PLOT_MODULES": f"{ctx.workdir / 'no_such_dir'}{os.pathsep}{modules}"}
    run_dir = standin_run(ctx, "discovery", "standin_plots", {"knob": "int", "label": "text"})
    expected = plot(ctx.plot_run, str(run_dir), "--list-expected", env=env)
    expect(expected.returncode == 0 and expected.stdout.split() == ["standin_probe"],
           f"--list-expected: {expected.stdout.split()} (exit {expected.returncode})")
    result = plot(ctx.plot_run, str(run_dir), "--format", "png", "--strict", env=env)
    expect(result.returncode == 0, f"exit {result.returncode}, expected 0")
    expect([Path(p).name for p in result.stdout.split()] == ["standin_probe.png"], f"drew {result.stdout.split()}")
    expect("knob int, label str" in result.stderr, "the stand-in module did not see typed columns")

    # Without the module directory the module is not found: listed, nothing drawn.
    missing = plot(ctx.plot_run, str(run_dir), "--format", "png")
    expect(missing.returncode == 1 and "no plots for family standin" in missing.stderr
           and "HDBENCH_PLOT_MODULES" in missing.stderr, f"module not found: exit {missing.returncode}")
    # meta.json names no module: the family column is never used to guess one.
    unnamed = standin_run(ctx, "discovery_unnamed", None, {"knob": "int", "label": "text"})
    none = plot(ctx.plot_run, str(unnamed), "--format", "png", env={"HDBENCH_PLOT_MODULES": str(modules)})
    expect(none.returncode == 1 and "no plots for family standin" in none.stderr, "a module was guessed")
    # A copy run whose meta.json names another module draws with that one, not with plots/hdbplots/copy.py.
    renamed = fresh_run(ctx.fixture, ctx.workdir, "discovery_renamed")
    meta = json.loads((renamed / "meta.json").read_text(encoding="utf-8"))
    meta["families"]["copy"]["plots"] = "no_such_module"
    (renamed / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
    other = plot(ctx.plot_run, str(renamed), "--format", "png")
    drawn = sorted(p.stem for p in (renamed / "plots").glob("*.png"))
    expect("no plots for family copy: plot module 'no_such_module' not found" in other.stderr and drawn == [LADDER],
           f"the copy module was imported by the family column: exit {other.returncode}, drew {drawn} "
           f"(only the run-wide {LADDER} may be drawn)")
    # Undeclared columns: all digits -> int, else text ('007' keeps `label` text).
    guessed = standin_run(ctx, "discovery_guessed", "standin_plots", None)
    typed = plot(ctx.plot_run, str(guessed), "--format", "png", "--strict", env=env)
    expect(typed.returncode == 0 and "knob int, label str" in typed.stderr, "undeclared columns typed wrongly")


def check_nvlink_line(ctx: argparse.Namespace) -> None:
    """The all-reduce busbw line rate comes from meta.json: change data_per_link_GBps, the label follows."""
    run_dir = fresh_run(ctx.two_gpu_fixture.parent / "run_2gpu", ctx.workdir, "nvlink_line")
    meta = json.loads((run_dir / "meta.json").read_text(encoding="utf-8"))
    for gpu in meta["node"]["gpus"]:
        gpu["nvlink"] = {"links_active": 4, "data_per_link_GBps": 12.5}
    (run_dir / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
    sys.path.insert(0, str(ctx.plot_run.resolve().parent))
    from hdbplots import allreduce
    from hdbplots.figures import plan
    from hdbplots.run import load_run
    run, _ = load_run(run_dir)
    jobs = {p.file_name: p for p in plan(run, "allreduce", allreduce.FIGURES)}
    expect("allreduce_busbw" in jobs, f"busbw not expected: {sorted(jobs)}")
    figure = jobs["allreduce_busbw"].figure.draw(jobs["allreduce_busbw"].scope)
    texts = [t.get_text() for ax in figure.axes for t in ax.texts]
    expect(any("4 links × 12.5 GB/s per direction = 50 GB/s" in t for t in texts), f"line label: {texts}")


def run_with_check(ctx: argparse.Namespace, reference: str, name: str) -> Path:
    """A copy of results/reference/<reference> with the check.json `hdbench check` wrote for it."""
    run_dir = ctx.workdir / name
    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir(parents=True)
    for file in ("results.csv", "meta.json"):
        shutil.copy2(ctx.references / reference / file, run_dir / file)
    shutil.copy2(Path(__file__).resolve().parent / "fixtures" / "check" / f"reference_{reference}.json",
                 run_dir / "check.json")
    return run_dir


def node_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("plot_run: no node figures:")]


def check_node_figures(ctx: argparse.Namespace) -> None:
    """8 GPUs, GPU 5 planted slow: one node figure per headline figure, its title naming GPU 5
    (read back from plots/figures.json), the others 'within the band'; per-GPU figures for the
    one class's representative, GPU 0, only."""
    run_dir = fresh_run(ctx.fixture.parent / "run_node8", ctx.workdir, "node_figures")
    result = plot(ctx.plot_run, str(run_dir), "--format", "png", "--dpi", "40", "--strict")
    expect(result.returncode == 0, f"exit {result.returncode}, expected 0")
    index = json.loads((run_dir / "plots" / "figures.json").read_text(encoding="utf-8"))["figures"]
    titles = {f["name"]: f["title"] for f in index if f["family"] == "node"}
    expect(sorted(titles) == sorted(NODE8_FIGURES + (GLANCE,)), f"node figures: {sorted(titles)}")
    name, title = NODE8_SLOW
    expect(titles[name] == title, f"{name}: title {titles[name]!r}, expected {title!r}")
    expect("FAIL" in titles[GLANCE] and "worst:" in titles[GLANCE], f"glance: {titles[GLANCE]!r}")
    for other in set(NODE8_FIGURES) - {name}:
        expect(titles[other].endswith(("all 8 GPUs within the band", "all 56 pairs within the band")),
               f"{other}: a healthy figure names an outlier: {titles[other]!r}")
    devices = {int(m.group(1)) for f in index if (m := PER_GPU.search(f["name"]))}
    expect(devices == {0}, f"per-GPU figures drawn for GPUs {sorted(devices)}, expected GPU 0 only")


def check_node_tiers(ctx: argparse.Namespace) -> None:
    """meta.json tiers: per-GPU figures for GPU 0 only; --per-gpu-plots: the same figures for all
    8 GPUs, under the same names; a meta.json without tiers: every GPU (the committed lists of
    run_8gpu and the references say so)."""
    run_dir = fresh_run(ctx.fixture.parent / "run_node8", ctx.workdir, "node_tiers")
    tiered = plot(ctx.plot_run, str(run_dir), "--list-expected")
    every = plot(ctx.plot_run, str(run_dir), "--list-expected", "--per-gpu-plots")
    expect(tiered.returncode == 0 and every.returncode == 0, f"exit {tiered.returncode}, {every.returncode}")
    per_gpu = {n for n in tiered.stdout.split() if PER_GPU.search(n)}
    expect(per_gpu and all(n.endswith("_gpu0") for n in per_gpu), f"tiered per-GPU figures: {sorted(per_gpu)}")
    wanted = {PER_GPU.sub(f"_gpu{gpu}", n) for n in per_gpu for gpu in range(8)}
    expect({n for n in every.stdout.split() if PER_GPU.search(n)} == wanted,
           f"--per-gpu-plots: {sorted(set(every.stdout.split()) ^ wanted)} differ")
    rest = sorted(n for n in tiered.stdout.split() if not PER_GPU.search(n))
    expect(rest == sorted(n for n in every.stdout.split() if not PER_GPU.search(n)),
           "--per-gpu-plots changed the figures that are not per GPU")


def check_node_one_gpu(ctx: argparse.Namespace) -> None:
    """One GPU (results/reference/h200 and its check.json): no side-by-side node figure, one line
    saying why, but the node at a glance (every checked figure against its band)."""
    run_dir = run_with_check(ctx, "h200", "node_one_gpu")
    result = plot(ctx.plot_run, str(run_dir), "--list-expected")
    expect(result.returncode == 0, f"exit {result.returncode}, expected 0")
    expect([n for n in result.stdout.split() if n.startswith("node_")] == [GLANCE],
           f"node figures: {result.stdout.split()}")
    lines = node_lines(result.stderr)
    expect(len(lines) == 1 and "more than one GPU" in lines[0], f"why no node figures: {lines}")


def check_node_two_gpus(ctx: argparse.Namespace) -> None:
    """Two GPUs graded against peaks (results/reference/h200-x2 and its check.json): a node figure
    per per-GPU and per-pair path, bars for GPUs, a heatmap for pairs; with GPU 1 planted slow on
    pinned h2d and the pair 1 → 0 on ce_peer, the titles name them."""
    run_dir = run_with_check(ctx, "h200-x2", "node_two_gpus")
    sys.path.insert(0, str(ctx.plot_run.resolve().parent))
    from hdbplots import node
    from hdbplots.run import load_run

    def titles() -> dict[str, str]:
        run, _ = load_run(run_dir)
        jobs, notes = node.plan(run)
        expect(not notes, f"notes: {notes}")
        drawn = {}
        for job in jobs:
            if job.file_name == GLANCE:
                continue
            figure = job.figure.draw(job.scope)
            pairs = job.file_name.startswith("node_p2p") and "loopback" not in job.file_name
            expect(bool(figure.axes[0].images) == pairs, f"{job.file_name}: heatmap for pairs, bars for GPUs")
            drawn[job.file_name] = figure.get_label()
        return drawn

    healthy = titles()
    expect(list(healthy) == list(NODE_TWO_GPU_FIGURES), f"node figures: {list(healthy)}")
    expect(all(" both " in t and " within " in t for t in healthy.values()), f"titles: {healthy}")
    check = json.loads((run_dir / "check.json").read_text(encoding="utf-8"))
    for line in check["lines"]:
        h2d = line["figure"].startswith("bandwidth (api=async direction=h2d") and line["gpus"] == [1]
        peer = line["figure"] == "bandwidth (api=ce_peer direction=uni dst=0 size_bytes=1 GiB src=1)"
        if h2d or peer:
            line["value"] *= 0.8
            line["grade"] = "WARN"
    (run_dir / "check.json").write_text(json.dumps(check), encoding="utf-8")
    slow = titles()
    h2d_title = slow[NODE_TWO_GPU_FIGURES[0]]
    expect(h2d_title.endswith(": GPU 1 is 20 % below the others (WARN)"), f"h2d: {h2d_title!r}")
    peer_title = slow["node_p2p_bandwidth_api_ce_peer_direction_uni_size_bytes_1_gib"]
    expect(peer_title.endswith(": GPU 1 → GPU 0 is 20 % below the others (WARN)"), f"ce_peer: {peer_title!r}")


def check_node_no_check(ctx: argparse.Namespace) -> None:
    """No check.json (or a broken one): no node figures and one line saying why, not an error."""
    run_dir = fresh_run(ctx.two_gpu_fixture, ctx.workdir, "node_no_check")
    for content, why in ((None, "check.json not found"), ("{not json", "check.json unreadable")):
        if content is not None:
            (run_dir / "check.json").write_text(content, encoding="utf-8")
        result = plot(ctx.plot_run, str(run_dir), "--list-expected")
        expect(result.returncode == 0, f"{why}: exit {result.returncode}, expected 0")
        expect(sorted(result.stdout.split()) == sorted(EXPECTED_TWO_GPU_FIGURES), f"{why}: {result.stdout.split()}")
        lines = node_lines(result.stderr)
        expect(len(lines) == 1 and why in lines[0], f"{why}: {lines}")


CHECKS = {
    "figures": check_figures,
    "discovery": check_discovery,
    "layout": check_layout,
    "nvlink_line": check_nvlink_line,
    "two_gpus": check_two_gpus,
    "run_model": check_run_model,
    "p2p_mixed_links": check_p2p_mixed_links,
    "recorded_tables": check_recorded_tables,
    "output_and_format": check_output_and_format,
    "unknown_family": check_unknown_family,
    "bad_schema": check_bad_schema,
    "missing_csv": check_missing_csv,
    "no_meta": check_no_meta,
    "node_figures": check_node_figures,
    "node_tiers": check_node_tiers,
    "node_one_gpu": check_node_one_gpu,
    "node_two_gpus": check_node_two_gpus,
    "node_no_check": check_node_no_check,
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plot-run", type=Path, required=True)
    parser.add_argument("--hdbench", type=Path, required=True, help="the built hdbench (the harness's tables)")
    parser.add_argument("--fixture", type=Path, required=True, help="the single-GPU run")
    parser.add_argument("--two-gpu-fixture", type=Path, required=True, help="the two-GPU run")
    parser.add_argument("--references", type=Path, required=True, help="results/reference: the committed runs")
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
