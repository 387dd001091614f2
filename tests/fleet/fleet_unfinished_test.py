#!/usr/bin/env python3
"""A fleet in which no node finished, as its operator sees it (docs/evidence.md, "Fleet, Slurm and Prometheus tested").

The 12 committed h200 members copied as run directories with meta.json and results.csv but no
check.json (each run stopped before its check), hostnames gpu01..gpu12, then `hdbench fleet` with
its figures: exit 1, every node a FAIL "no check.json: the run did not finish"; the heatmap drawn
(fleet_figures_check.py: every node a named row with that reason across it), no dot plot, as
none is expected without a graded figure; and no "exited with status" line, which is what
hdbench printed when plot_fleet.py drew nothing.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fleet_common import copy_members, figures_seen, run, set_hostname  # noqa: E402

REASON = "no check.json: the run did not finish"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--hdbench", required=True)
    parser.add_argument("--members", required=True, help="results/reference/h200/runs")
    parser.add_argument("--workdir", required=True)
    args = parser.parse_args()
    fleet_dir = os.path.join(args.workdir, "fleet")
    dirs = copy_members(args.members, fleet_dir)
    if len(dirs) != 12 or any(os.path.exists(os.path.join(d, "check.json")) for d in dirs):
        raise SystemExit(f"FAIL: expected the 12 committed members without check.json, found {len(dirs)}")
    for i, d in enumerate(dirs, start=1):
        set_hostname(d, f"gpu{i:02d}")
    empty = os.path.join(args.workdir, "no-sets")
    os.makedirs(empty, exist_ok=True)
    out = os.path.join(args.workdir, "out")
    _, stdout, stderr = run([args.hdbench, "fleet", fleet_dir, "--reference", empty, "--out", out], expect=1)
    if "exited with status" in stdout + stderr:
        raise SystemExit(f"FAIL: hdbench fleet says the figures failed:\n{stdout}{stderr}")
    with open(os.path.join(out, "fleet.json")) as f:
        report = json.load(f)
    worst = {n["name"]: (n["grade"], n["lines"][0]["reason"]) for n in report["nodes"]}
    if worst != {f"gpu{i:02d}": ("FAIL", REASON) for i in range(1, 13)}:
        raise SystemExit(f"FAIL: the nodes' grades and worst lines {worst}")
    if not os.path.isfile(os.path.join(out, "plots", "fleet_heatmap.png")):
        raise SystemExit("FAIL: no fleet_heatmap.png")
    seen = figures_seen(out)
    rows = seen["heatmap_rows"]
    if seen["figures"] != 0 or rows != {f"gpu{i:02d} FAIL": REASON for i in range(1, 13)}:
        raise SystemExit(f"FAIL: the heatmap's rows {rows}, {seen['figures']} dot plots")
    print(f"12 nodes without check.json: exit 1, fleet_heatmap.png with every node a row saying "
          f"{REASON!r}, no dot plot, no 'exited with status' line")


if __name__ == "__main__":
    main()
