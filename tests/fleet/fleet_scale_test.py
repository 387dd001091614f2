#!/usr/bin/env python3
"""Scale of `hdbench fleet` (issue 31 item 5; docs/evidence.md, "Scale of hdbench fleet").

Makes a synthetic fleet of N nodes x G GPUs from the committed h200 members: each member's
check.json (`hdbench check --reference <empty>`, peaks only, into a copy), then per figure the
members' geometric centre and spread (SD of ln value between members); every synthetic node and GPU
reads centre x exp(spread x z), z ~ N(0, 1) with a fixed seed, and carries the members' health
lines. 10 planted faults: 5 nodes with one GPU's pinned h2d and d2h 5 % slower, 5 with one GPU's
PCIe link a health FAIL (read Gen4 under load). fleet must name exactly those 10 nodes (exit 1),
within --max-seconds (of wall time or of its processes' CPU time) and --max-rss-mib (measured with
/usr/bin/time -v where it exists); with
--plots it runs again drawing the figures, within the same bounds, and the figures must show the 5
slow nodes named on their dot plots and the 10 planted nodes as the heatmap's first rows
(fleet_figures_check.py). The measured numbers of docs/evidence.md (Scale of hdbench fleet) come from this script
(--nodes 1000 --plots), not from a timed test: the CTest's bounds are a generous hang guard.
"""
import argparse
import json
import math
import os
import random
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fleet_common import copy_members, figures_seen, write_check_json  # noqa: E402


def member_figures(dirs):
    """(family, figure) -> list of the members' values, and one member's line as the template; the
    health lines; the version of check.json this hdbench writes (fleet reads no other)."""
    values, template, health = {}, {}, []
    for d in dirs:
        with open(os.path.join(d, "check.json")) as f:
            check = json.load(f)
        version = check["version"]
        for line in check["lines"]:
            if line["family"] == "health":
                if d == dirs[0]:
                    health.append(line)
                continue
            if line["value"] is None or line["value"] <= 0:
                continue
            key = (line["family"], line["figure"])
            values.setdefault(key, []).append(line["value"])
            template.setdefault(key, line)
    figures = []
    for key, vals in sorted(values.items()):
        if len(vals) < 3:
            continue
        logs = [math.log(v) for v in vals]
        mean = sum(logs) / len(logs)
        sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (len(logs) - 1))
        figures.append((template[key], math.exp(mean), sd))
    return figures, health, version


def make_fleet(members, out, nodes, gpus, seed):
    figures, health, version = member_figures(members)
    with open(os.path.join(members[0], "meta.json")) as f:
        meta = json.load(f)
    gpu0 = meta["node"]["gpus"][0]
    rng = random.Random(seed)
    planted = rng.sample(range(nodes), 10)
    slow, gen4 = set(planted[:5]), set(planted[5:])
    width = max(4, len(str(nodes)))
    os.makedirs(out)
    for n in range(nodes):
        host = f"gpu{n + 1:0{width}d}"
        node_meta = dict(meta)
        node_meta["run_id"] = f"20261202T120000Z-{host}"
        node_meta["node"] = dict(meta["node"], hostname=host, gpu_count=gpus,
                                 gpus=[dict(gpu0, index=g, uuid=f"GPU-{n:06d}-{g}") for g in range(gpus)])
        node_meta["host"] = dict(meta["host"], hostname=host)
        bad_gpu = rng.randrange(gpus)
        lines = []
        for g in range(gpus):
            for template, centre, sd in figures:
                value = centre * math.exp(sd * rng.gauss(0, 1))
                if n in slow and g == bad_gpu and template["figure"] in ("pinned h2d 1 GiB", "pinned d2h 1 GiB"):
                    value *= 0.95
                lines.append(dict(template, gpus=[g], value=value, grade="INFO", expected=None,
                                  reason="peaks only (synthetic)"))
            for template in health:
                line = dict(template, gpus=[g])
                if n in gen4 and g == bad_gpu and template["figure"] == "PCIe link":
                    line.update(grade="FAIL", reading="Gen4 x16",
                                reason="trained below its maximum Gen5 x16 while copying (synthetic)")
                lines.append(line)
        fails = sum(1 for line in lines if line["grade"] == "FAIL")
        check = {"version": version, "run": node_meta["run_id"], "node_kind": "synthetic", "reference": None, "notes": [], "lines": lines,
                 "summary": {"grade": "FAIL" if fails else "PASS", "fail": fails}, "exit_code": 1 if fails else 0}
        d = os.path.join(out, host, node_meta["run_id"])
        os.makedirs(d)
        with open(os.path.join(d, "meta.json"), "w") as f:
            json.dump(node_meta, f)
        with open(os.path.join(d, "check.json"), "w") as f:
            json.dump(check, f)
    name = lambda n: f"gpu{n + 1:0{width}d}"  # noqa: E731
    return sorted(name(n) for n in planted), sorted(name(n) for n in slow), len(figures)


def check_textfile(path: str, nodes: int, figure_lines: int, planted: list[str]) -> None:
    """The fleet's textfile: a verdict per node (2 exactly for the planted ones) and a grade per figure line."""
    verdicts: dict[str, float] = {}
    grades = 0
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("hdbench_node_grade{"):
                verdicts[line.split('node="', 1)[1].split('"', 1)[0]] = float(line.rsplit(" ", 1)[1])
            elif line.startswith("hdbench_figure_grade{") and 'family="health"' not in line:
                grades += 1
    failing = sorted(n for n, v in verdicts.items() if v == 2)
    if len(verdicts) != nodes or failing != planted or grades != figure_lines:
        raise SystemExit(f"FAIL: {path}: {len(verdicts)} node verdicts of {nodes}, FAIL {failing} (planted {planted}), "
                         f"{grades} figure grades of {figure_lines}")
    print(f"textfile: {os.path.getsize(path) / 1e6:.0f} MB, {nodes} node verdicts, the planted {len(planted)} at 2, "
          f"{grades} figure grades")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--hdbench", required=True)
    parser.add_argument("--members", required=True)
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--nodes", type=int, default=200)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--seed", type=int, default=31)
    parser.add_argument("--max-seconds", type=float, default=10,
                        help="each fleet call: fails when its wall time and its processes' CPU time both pass it")
    parser.add_argument("--hang-seconds", type=float, default=60, help="each fleet call: fails past this wall time")
    parser.add_argument("--max-rss-mib", type=float, default=1024)
    parser.add_argument("--plots", action="store_true",
                        help="then again with the figures (timed apart, the same bounds), and check what they show")
    parser.add_argument("--prometheus", action="store_true",
                        help="each fleet call also writes node_exporter's textfile (--prometheus DIR), timed with it; "
                             "the textfile must hold every node's verdict and every figure line's grade")
    parser.add_argument("--repeat", type=int, default=1,
                        help="each fleet call this many times, the least wall and CPU time and the most memory kept "
                             "(other load on the machine only adds time): for docs/evidence.md (Scale of hdbench fleet), not the CTest")
    args = parser.parse_args()
    work = os.path.join(args.workdir, f"scale{args.nodes}")
    empty = os.path.join(work, "no-sets")
    members = copy_members(args.members, os.path.join(work, "members"))
    os.makedirs(empty, exist_ok=True)
    for d in members:
        write_check_json(args.hdbench, d, empty)
    fleet = os.path.join(work, "fleet")
    if os.path.exists(fleet):
        shutil.rmtree(fleet)
    planted, slow, figures = make_fleet(members, fleet, args.nodes, args.gpus, args.seed)
    hosts = sorted(os.path.join(fleet, h) for h in os.listdir(fleet))
    for plots in ([False, True] if args.plots else [False]):
        out = os.path.join(work, "out-plots" if plots else "out")
        cmd = [args.hdbench, "fleet", *hosts, "--reference", empty, "--out", out, "--format", "json"]
        if not plots:
            cmd.append("--no-plots")
        textfiles = os.path.join(work, "textfiles")
        if args.prometheus:
            os.makedirs(textfiles, exist_ok=True)
            cmd += ["--prometheus", textfiles]
        what = ("with the figures" if plots else "--no-plots") + (" and --prometheus" if args.prometheus else "")
        best = None  # (wall s, CPU s or None, max RSS MiB of one process or None, PSS MiB held together)
        for attempt in range(args.repeat):
            if os.path.exists(out):
                shutil.rmtree(out)
            proc, seconds, cpu, rss, together = measured(cmd, work)
            if proc.returncode != 1:
                raise SystemExit(f"FAIL: fleet exited {proc.returncode}: {proc.stderr[-2000:]}")
            if args.repeat > 1:
                print(f"  {what}, run {attempt + 1} of {args.repeat}: {seconds:.2f} s wall, "
                      f"{'-' if cpu is None else f'{cpu:.2f}'} s CPU, {together:.0f} MiB together")
            best = (seconds, cpu, rss, together) if best is None else (
                min(best[0], seconds), None if cpu is None else min(best[1], cpu),
                None if rss is None else max(best[2], rss), max(best[3], together))
        seconds, cpu, rss, together = best
        report = json.loads(proc.stdout)
        k = report["kinds"][0]["k"]
        named = sorted(report["summary"]["failing_hostnames"])
        rss_mib = max(rss or 0, together) or None
        of = f" (the least time and the most memory of {args.repeat} runs)" if args.repeat > 1 else ""
        print(f"{args.nodes} nodes x {args.gpus} GPUs, {figures} figures per GPU "
              f"({args.nodes * args.gpus * figures} figure lines), k = {k:.2f}, {what}{of}: "
              f"{seconds:.2f} s wall{'' if cpu is None else f', {cpu:.2f} s CPU'}, "
              + (f"max RSS {rss:.0f} MiB" if rss else "max RSS not measured (no /usr/bin/time)")
              + f", {together:.0f} MiB held together (PSS, sampled)")
        print(f"planted: {', '.join(planted)}")
        print(f"named:   {', '.join(named)}")
        if named != planted:
            raise SystemExit(f"FAIL: named {named}, planted {planted}")
        if args.prometheus:
            check_textfile(os.path.join(textfiles, "hdbench.prom"), args.nodes, args.nodes * args.gpus * figures, planted)
        # Too slow only when both the wall time and the CPU time of all its processes pass the
        # bound: other load stretches wall time (3.9 s of CPU took 10.2 s of wall beside two
        # builds on CI's 2 cores), threads on many cores add CPU time (13.8 s of CPU in 7.4 s of
        # wall on the 16-core H200 node before the BLAS pools were limited); a slower fleet
        # moves both. Past --hang-seconds of wall it fails whatever the CPU time.
        cpu_over = cpu is None or cpu > args.max_seconds
        if seconds > args.hang_seconds or (seconds > args.max_seconds and cpu_over):
            raise SystemExit(f"FAIL: {what}: {seconds:.1f} s wall and "
                             f"{'unmeasured' if cpu is None else f'{cpu:.1f} s'} CPU > {args.max_seconds} s")
        if rss_mib is not None and rss_mib > args.max_rss_mib:
            raise SystemExit(f"FAIL: {what}: {rss_mib:.0f} MiB > {args.max_rss_mib} MiB")
        if plots:
            check_figures(out, slow, planted, args.nodes)


def measured(cmd, work):
    """Runs cmd under GNU time where it is. Returns (completed, wall s, CPU s of it and its children
    or None, the largest process's max RSS in MiB or None, the most they held at once in MiB). GNU
    time's maximum is that of the largest process (hdbench, or a Python drawing the figures);
    the PSS sampled is what they held together."""
    timer = ["/usr/bin/time", "-v"] if os.access("/usr/bin/time", os.X_OK) else []
    proc, seconds, together = run_sampled(timer + cmd, work)
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr)
    times = re.findall(r"(?:User|System) time \(seconds\): (\S+)", proc.stderr)
    return (proc, seconds, sum(float(t) for t in times) if times else None, int(rss.group(1)) / 1024 if rss else None,
            together)


def run_sampled(cmd, work):
    """Runs cmd (stdout and stderr through files: fleet's JSON is tens of MB), sampling every 20 ms
    the memory it and its children hold together (the sum of their PSS). Returns (completed, wall s, peak MiB)."""
    def tree(pid):
        pids = [pid]
        try:
            for task in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{task}/children") as f:
                    for child in f.read().split():
                        pids += tree(int(child))
        except OSError:
            pass
        return pids

    # Proportional set size: a page shared by n of the processes counts 1/n in each, so the sum is
    # what they hold together. Summed RSS counted the pages the forked drawers share with their
    # parent once per process (1019 MiB on the 16-core H200 node, where one drawer alone held 788).
    def resident(pid):
        for path, key in ((f"/proc/{pid}/smaps_rollup", "Pss:"), (f"/proc/{pid}/status", "VmRSS:")):
            try:
                with open(path) as f:
                    return next((int(l.split()[1]) for l in f if l.startswith(key)), 0)
            except FileNotFoundError:
                continue  # no smaps_rollup before Linux 4.14: RSS, an upper bound
            except OSError:
                return 0
        return 0

    out_path, err_path = os.path.join(work, "fleet.stdout"), os.path.join(work, "fleet.stderr")
    peak = 0
    with open(out_path, "w") as out, open(err_path, "w") as err:
        start = time.monotonic()
        child = subprocess.Popen(cmd, stdout=out, stderr=err)
        while child.poll() is None:
            if os.path.isdir("/proc/self/task"):
                peak = max(peak, sum(resident(p) for p in set(tree(child.pid))))
            time.sleep(0.02)
        seconds = time.monotonic() - start
    with open(out_path) as out, open(err_path) as err:
        done = subprocess.CompletedProcess(cmd, child.returncode, out.read(), err.read())
    os.remove(out_path)
    return done, seconds, peak / 1024


def check_figures(out, slow, planted, nodes):
    """The figures as the user sees them (fleet_figures_check.py, with the Python that drew them):
    each slow node's pinned copies a named FAIL dot; the heatmap's first rows the 10 planted nodes
    (the 5 slow ones first, their pinned copies' cells 1.4-2 tolerances worse: 5 % against 3 %),
    and the count of the nodes it left out, all PASS."""
    seen = figures_seen(out)
    for figure in ("copy pinned h2d 1 GiB", "copy pinned d2h 1 GiB"):
        labelled = sorted(label.split(" ")[0] for label in seen["labels"][figure])
        if labelled != sorted(slow):
            raise SystemExit(f"FAIL: {figure}: named {labelled}, the slow nodes are {sorted(slow)}")
    cells = seen["heatmap_fail_cells"]
    if len(cells) != 2 * len(slow) or not all(1.4 < v < 2 for v in cells.values()):
        raise SystemExit(f"FAIL: the heatmap's FAIL cells {cells}")
    rows = [row.split(" ")[0] for row in seen["heatmap_rows"]]
    if sorted(rows[:len(slow)]) != sorted(slow) or sorted(rows[:len(planted)]) != sorted(planted):
        raise SystemExit(f"FAIL: the heatmap's first rows {rows[:len(planted)]}, planted {planted} (slow {slow})")
    left_out = f"{nodes - len(rows):,} more nodes not shown, all PASS"
    if not seen["heatmap_left_out"].startswith(left_out):
        raise SystemExit(f"FAIL: the heatmap says {seen['heatmap_left_out']!r}, not {left_out!r}")
    print(f"figures: {seen['figures']} dot plots and the heatmap, as drawn; the 5 slow nodes named on both pinned "
          f"copies; the heatmap's first {len(planted)} of {len(rows)} rows the planted nodes, the slow ones' cells "
          f"{min(cells.values()):.1f} to {max(cells.values()):.1f} tolerances; {seen['heatmap_left_out']!r}")


if __name__ == "__main__":
    main()
