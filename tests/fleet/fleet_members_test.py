#!/usr/bin/env python3
"""Done-when of issue 31 on the committed h200 members as a fleet (docs/evidence.md, "Fleet, Slurm and Prometheus tested").

--mode peer: each member's check.json made against peaks only (--reference an empty directory), so
fleet grades every figure against the member's peers; --mode set: check.json against the h200 set
(results/reference), which fleet keeps. In both: the 12 members -> 0 FAIL (names "vm (<run id>)",
the committed hostnames repeat); then hostnames gpu01..gpu12, gpu02's pinned copies 5 % slower and
gpu05's link read at Gen4 -> exactly gpu02 and gpu05 FAIL, --nodelist prints gpu[02,05], junit
has one testcase per node. peer mode also learns a set (--learn) and checks a member against it.
"""
import argparse
import json
import os
import shutil
import sys
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fleet_common import (copy_members, plant_gen4, plant_slow_pinned, figures_seen, run, set_hostname,  # noqa: E402
                          write_check_json)


def fleet_json(hdbench, dirs, reference, out, extra=(), expect=None):
    cmd = [hdbench, "fleet", *dirs, "--format", "json", "--out", out, "--no-plots", *extra]
    if reference:
        cmd += ["--reference", reference]
    status, stdout, _ = run(cmd, expect)
    return status, json.loads(stdout)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--hdbench", required=True)
    parser.add_argument("--members", required=True, help="results/reference/h200/runs")
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--mode", choices=["peer", "set"], required=True)
    args = parser.parse_args()
    work = os.path.join(args.workdir, args.mode)
    shutil.rmtree(work, ignore_errors=True)  # a run before this one leaves its sets and outputs
    empty = os.path.join(work, "no-sets")
    os.makedirs(empty, exist_ok=True)
    check_ref = empty if args.mode == "peer" else None
    fleet_ref = empty if args.mode == "peer" else os.path.dirname(os.path.dirname(os.path.abspath(args.members)))
    fleet_dir = os.path.join(work, "fleet")
    dirs = copy_members(args.members, fleet_dir)
    if len(dirs) != 12:
        raise SystemExit(f"FAIL: expected the 12 committed members, found {len(dirs)}")
    for d in dirs:
        write_check_json(args.hdbench, d, check_ref)

    # 1. The members as they are: 0 FAIL; repeated hostnames name the run directory.
    _, report = fleet_json(args.hdbench, [fleet_dir], fleet_ref, os.path.join(work, "out1"), expect=0)
    basis = report["kinds"][0]["basis"]
    want_basis = "peers" if args.mode == "peer" else "set"
    if len(report["kinds"]) != 1 or basis != want_basis:
        raise SystemExit(f"FAIL: one kind graded against {want_basis} expected, got {report['kinds']}")
    failed = [n["name"] for n in report["nodes"] if n["fail"] > 0]
    if failed or report["summary"]["fail"] != 0:
        raise SystemExit(f"FAIL: the 12 members FAIL: {failed}")
    names = sorted(n["name"] for n in report["nodes"])
    if names != sorted(f"vm ({os.path.basename(d)})" for d in dirs):
        raise SystemExit(f"FAIL: names {names}")
    graded = sum(1 for n in report["nodes"] for l in n["lines"] if l["basis"] == ("peers" if args.mode == "peer" else "set"))
    warned = sum(n["warn"] for n in report["nodes"])
    print(f"12 members ({args.mode}): 0 FAIL, {warned} WARN line(s), {graded} figure lines graded against {want_basis}")

    # 2. Planted: gpu02 pinned copies 5 % slower, gpu05 link at Gen4.
    for i, d in enumerate(dirs, start=1):
        set_hostname(d, f"gpu{i:02d}")
    plant_slow_pinned(dirs[1])
    plant_gen4(dirs[4])
    plant_slow_pinned(dirs[6], 1.10)  # gpu07 10 % faster: a WARN, which --learn keeps
    for d in dirs:
        write_check_json(args.hdbench, d, check_ref)
    _, report = fleet_json(args.hdbench, [fleet_dir], fleet_ref, os.path.join(work, "out2"), expect=1)
    failed = sorted(n["name"] for n in report["nodes"] if n["fail"] > 0)
    if failed != ["gpu02", "gpu05"]:
        raise SystemExit(f"FAIL: expected exactly gpu02 and gpu05 to FAIL, got {failed}")
    lines = {n["name"]: [f"{l['family']} {l['figure']}" for l in n["lines"] if l["grade"] == "FAIL"] for n in report["nodes"]}
    if not any("pinned h2d" in l for l in lines["gpu02"]) or not any("pinned d2h" in l for l in lines["gpu02"]):
        raise SystemExit(f"FAIL: gpu02's FAIL lines {lines['gpu02']}")
    if lines["gpu05"] != ["health PCIe link"]:
        raise SystemExit(f"FAIL: gpu05's FAIL lines {lines['gpu05']}")
    if report["nodes"][0]["name"] not in ("gpu02", "gpu05"):
        raise SystemExit("FAIL: worst node not first")
    warned_nodes = sorted(n["name"] for n in report["nodes"] if n["fail"] == 0 and n["warn"] > 0)
    if "gpu07" not in warned_nodes:
        raise SystemExit(f"FAIL: gpu07's 10 % faster pinned copies not a WARN node: {warned_nodes}")
    # check.json carries each figure's direction, and fleet grades by it.
    directions = []
    for d in dirs:
        with open(os.path.join(d, "check.json")) as f:
            directions += [l.get("better") for l in json.load(f)["lines"] if l["family"] != "health" and l["value"] is not None]
    if not directions or any(b not in ("higher", "lower") for b in directions):
        raise SystemExit(f"FAIL: check.json's figure lines without a better: {sorted(set(map(str, directions)))}")
    print(f"better: on all {len(directions)} figure lines of the 12 check.json")
    cmd = [args.hdbench, "fleet", fleet_dir, "--nodelist", "--out", os.path.join(work, "out3"), "--no-plots"]
    _, stdout, _ = run(cmd + ["--reference", fleet_ref], expect=1)
    if stdout.strip() != "gpu[02,05]":
        raise SystemExit(f"FAIL: --nodelist printed {stdout!r}")
    _, stdout, _ = run([args.hdbench, "fleet", fleet_dir, "--format", "junit", "--out", os.path.join(work, "out4"),
                        "--no-plots", "--reference", fleet_ref], expect=1)
    suite = ET.fromstring(stdout)
    cases = suite.findall("testcase")
    failing = sorted(c.get("name") for c in cases if c.find("failure") is not None)
    if len(cases) != 12 or failing != ["gpu02", "gpu05"]:
        raise SystemExit(f"FAIL: junit {len(cases)} testcases, failing {failing}")
    for name in ("gpu02", "gpu05"):
        print(f"planted ({args.mode}): {name} FAIL: {'; '.join(lines[name])}")
    if args.mode == "peer":
        # The figures a user opens, as drawn: the heatmap and one dot plot per graded figure; gpu02's
        # pinned copies named FAIL dots and, 5 % under the centre against a 3 % tolerance, about 1.7
        # tolerances worse on the heatmap, whose first rows are gpu02 and gpu05.
        out = os.path.join(work, "out-plots")
        run([args.hdbench, "fleet", fleet_dir, "--reference", fleet_ref, "--out", out], expect=1)
        seen = figures_seen(out)
        for figure in ("copy pinned h2d 1 GiB", "copy pinned d2h 1 GiB"):
            if "gpu02" not in seen["labels"].get(figure, []):
                raise SystemExit(f"FAIL: {figure}: gpu02 not named ({seen['labels'].get(figure)})")
        cells = {k: v for k, v in seen["heatmap_fail_cells"].items() if k.startswith("gpu02 GPU 0 copy pinned")}
        if len(cells) != 2 or not all(1.4 < v < 2 for v in cells.values()):
            raise SystemExit(f"FAIL: the heatmap's cells of gpu02's pinned copies: {cells}")
        if list(seen["heatmap_rows"])[:2] != ["gpu02 FAIL", "gpu05 FAIL"]:
            raise SystemExit(f"FAIL: the heatmap's first rows {list(seen['heatmap_rows'])[:3]}")
        print(f"figures: fleet_heatmap.png and {seen['figures']} dot plots, as drawn; gpu02 named on both pinned "
              f"copies, {', '.join(f'{v:.1f}' for v in cells.values())} tolerances on the heatmap, its first rows "
              f"gpu02 and gpu05")

    print("--nodelist: gpu[02,05]")

    # The committed holdout round 2 (four fresh H200s; their check.json by an older hdbench, version 1,
    # and no results.csv beside it): refused in one line naming the first and what to run.
    holdout = os.path.join(os.path.dirname(os.path.abspath(args.members)), "holdout")
    four = [os.path.join(holdout, r) for r in ("20261202T032812Z-vm", "20261202T033323Z-vm", "20261202T033829Z-vm",
                                               "20261202T034338Z-vm")]
    _, _, err = run([args.hdbench, "fleet", *four, "--reference", fleet_ref, "--out", os.path.join(work, "out-holdout"),
                     "--no-plots"], expect=2)
    want = f"{four[0]}/check.json: check.json version 1 (no \"version\"); this hdbench reads version 2: run `hdbench check"
    if len(err.strip().splitlines()) != 1 or want not in err:
        raise SystemExit(f"FAIL: the holdout's older check.json: not one line naming it: {err!r}")
    print(f"holdout round 2 (older check.json): exit 2, {err.strip()}")

    if args.mode != "peer":
        return
    # 3. --learn: the ten that did not FAIL (gpu07's WARN among them) become a set; the two are
    # kept out, and check has a band.
    set_root = os.path.join(work, "sets")
    run([args.hdbench, "fleet", fleet_dir, "--reference", fleet_ref, "--learn", set_root, "--out",
         os.path.join(work, "out5"), "--no-plots"], expect=1)
    set_dir = os.path.join(set_root, "h200")
    members = sorted(os.listdir(os.path.join(set_dir, "runs")))
    with open(os.path.join(set_dir, "KEPT_OUT.md")) as f:
        kept = f.read()
    if len(members) != 10 or "gpu02" not in kept or "gpu05" not in kept or "gpu07" in kept:
        raise SystemExit(f"FAIL: learned {len(members)} members; KEPT_OUT.md:\n{kept}")
    status, stdout, _ = run([args.hdbench, "check", dirs[0], "--reference", set_dir, "--format", "json"], expect=0)
    check = json.loads(stdout)
    banded = [l for l in check["lines"] if l["expected"] and "low" in l["expected"]]
    if check["reference"] is None or not banded:
        raise SystemExit("FAIL: check against the learned set has no band")
    print(f"--learn: {len(members)} members in {set_dir}, gpu02 and gpu05 kept out; check of gpu01 against it: "
          f"{check['summary']['grade']}, {len(banded)} figures with a band")


if __name__ == "__main__":
    main()
