#!/usr/bin/env python3
"""The batch script on a real Slurm (docs/fleet.md, "Slurm"; issue 31 item 4).

    fleet_slurm_test.py --hdbench BIN/hdbench --standin-bin DIR --manifest tests/standin_family/suite.json
                        --sbatch share/hdbench/hdbench-fleet.sbatch [--nodes 6] [--keep]

Starts a private cluster on this host, in a temporary directory with its own munge key, munged
socket, slurm.conf, ports, state and logs (nothing of /etc/slurm or /etc/munge is read or
written): munged, slurmctld, and one slurmd per node name (n1..nN on localhost, each its own
port: Debian's slurm is built with --enable-multiple-slurmd). Then, twice,

    sbatch --wait -N <nodes> --nodelist <nodes> share/hdbench/hdbench-fleet.sbatch

with HDBENCH a wrapper around the real hdbench that runs each node's `hdbench run` on the
stand-in family (no GPU) under that node's hostname (its own UTS namespace, as each node of a
real cluster has its own), each healthy node reporting the same planted triad bandwidth
(`--bandwidth`): what is tested is the batch script, and a CPU-timed triad on a shared machine
can lose half its speed to a neighbour for one node's turn and FAIL against its peers. Except on
the last two nodes: n(N-1) crashes (SIGSEGV) before its run
starts, nN's family hangs past HDBENCH_NODE_TIMEOUT (and hdbench with it: SIGKILL after the
SIGTERM).
1. The healthy nodes n1..n(N-2): sbatch exits 0, no failing-nodes line, fleet.json and fleet.txt
   name every node, 0 FAIL.
2. All N, n(N-2) slow on its first run only (HDB_TEST_SLOW_ONCE): the failing nodes n[N-2-N] run
   again after the confirmation's pause (HDBENCH_FLEET_CONFIRM=1); sbatch exits 1 (the fleet's
   exit); the job log has each node's `hdbench run` exit status and the failing nodes' hostlist
   n[N-1-N]; the report (fleet.txt, fleet.json, the figures where matplotlib is) names every node
   once; the healthy nodes have no FAIL and their figures are graded against their peers; the slow
   one is a WARN transient, graded on its second run; each broken node has a FAIL line of its own.
The services are stopped at the end, whatever happened.

Exit 0 = passed, 1 = a check failed, 77 = skipped: no Slurm or munge here (apt install slurm-wlm
munge, as .ci/run does), not root, no UTS namespaces, or the services did not start. With
HDB_SLURM_TEST_REQUIRED=1 (.ci/run sets it) the last of these is a failure, not a skip.
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
from hdb_test_support import Checks, finish, plotting_python  # noqa: E402
from slurm_cluster import (SKIP, Cluster, hanging_family_bin, parse_paths, required, run_on,  # noqa: E402
                           test_arguments, work_directory)


# The triad bandwidth every healthy node reports (the stand-in's --bandwidth: no triad is timed).
PLANTED_GBPS = 12


def write_wrapper(work: Path, args: argparse.Namespace, crash: str, hang: str) -> Path:
    """HDBENCH for the job: `run` as the node (its hostname; the crash and hang plants), the rest as is."""
    hang_bin = hanging_family_bin(args.standin_bin, work)
    wrapper = work / "hdbench-node"
    wrapper.write_text(f"""#!/bin/sh
# hdbench as node $SLURMD_NODENAME of the test's cluster sees it (fleet_slurm_test.py).
if [ "$1" = run ]; then
  shift
  bin='{args.standin_bin}'
  case "${{SLURMD_NODENAME:-}}" in
    {crash}) kill -SEGV $$ ;;
    {hang}) bin='{hang_bin}' ;;
  esac
  # HDB_TEST_SLOW_ONCE: that node's first run of the job reports a sixth of the planted bandwidth
  # (its family takes the last --bandwidth), its next run the planted one: a transient.
  slow=''
  if [ "${{SLURMD_NODENAME:-}}" = "${{HDB_TEST_SLOW_ONCE:-}}" ] && [ ! -e "$HDBENCH_FLEET_DIR/slow-once" ]; then
    : > "$HDBENCH_FLEET_DIR/slow-once"
    slow='--bandwidth={PLANTED_GBPS // 6}'
  fi
  exec unshare --uts sh -c 'hostname "$0" && exec "$@"' "$SLURMD_NODENAME" '{args.hdbench}' run --bin-dir "$bin" "$@" $slow
fi
exec '{args.hdbench}' "$@"
""")
    wrapper.chmod(0o755)
    return wrapper


def submit(cluster: Cluster, args: argparse.Namespace, work: Path, wrapper: Path, name: str,
           nodes: list[str], **extra: str) -> tuple[int, str, Path]:
    """sbatch --wait of the batch script on `nodes` (`extra`: more environment); returns its exit
    status, the job log and HDBENCH_FLEET_DIR."""
    fleet_dir = work / name
    submit_dir = work / f"{name}-submit"
    submit_dir.mkdir()
    env = dict(cluster.env, HDBENCH=str(wrapper), HDBENCH_FLEET_DIR=str(fleet_dir),
               HDBENCH_RUN_ARGS=f"--manifest {args.manifest} -- --bandwidth={PLANTED_GBPS}",
               HDBENCH_NODE_TIMEOUT=str(args.node_timeout),
               HDBENCH_NODE_KILL_AFTER="2", MPLBACKEND="Agg", MPLCONFIGDIR=str(work / "mplconfig"), **extra)
    argv = ["sbatch", "--wait", "-N", str(len(nodes)), f"--nodelist={','.join(nodes)}", "--chdir", str(submit_dir),
            str(args.sbatch)]
    start = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=2 * args.node_timeout + 90)
    print(f"$ {' '.join(argv[:4])} {args.sbatch.name}  -> exit {proc.returncode} in {time.monotonic() - start:.1f} s")
    print("    " + (proc.stdout + proc.stderr).strip().replace("\n", "\n    "))
    outs = sorted(submit_dir.glob("hdbench-fleet-*.out"))
    log = outs[0].read_text(errors="replace") if len(outs) == 1 else ""
    if log:
        print("    job log (hdbench-fleet-<jobid>.out):\n      " + log.strip().replace("\n", "\n      "))
    return proc.returncode, log, fleet_dir


def read_report(checks: Checks, fleet_dir: Path, nodes: list[str]) -> tuple[dict, str]:
    report = fleet_dir / "report"
    text_path, json_path = report / "fleet.txt", report / "fleet.json"
    checks.check(text_path.is_file(), f"{text_path} written")
    if not checks.check(json_path.is_file(), f"{json_path} written"):
        return {}, ""
    fleet = json.loads(json_path.read_text())
    text = text_path.read_text() if text_path.is_file() else ""
    names = sorted(n["name"] for n in fleet.get("nodes", []))
    checks.check(names == sorted(nodes), f"fleet.json names every node: {names}")
    checks.check(all(f" {n} " in text for n in nodes), "fleet.txt names every node")
    return fleet, text


def run_jobs(cluster: Cluster, args: argparse.Namespace, work: Path, checks: Checks) -> None:
    nodes = cluster.nodes
    healthy, crash, hang = nodes[:-2], nodes[-2], nodes[-1]
    wrapper = write_wrapper(work, args, crash, hang)

    # 1. The healthy nodes alone: exit 0, no drain line.
    status, log, fleet_dir = submit(cluster, args, work, wrapper, "healthy", healthy)
    checks.check(status == 0, f"healthy fleet: sbatch --wait exits 0 (got {status})")
    checks.check(bool(log), "healthy fleet: the job log hdbench-fleet-<jobid>.out is in the submit directory")
    checks.check(all(f"hdbench-fleet: {n}: hdbench run exited 0" in log for n in healthy),
                 f"healthy fleet: hdbench run exited 0 on each of {', '.join(healthy)}")
    checks.check("failing nodes" not in log, "healthy fleet: no failing nodes line")
    fleet, _ = read_report(checks, fleet_dir, healthy)
    checks.check(fleet.get("summary", {}).get("fail") == 0, "healthy fleet: 0 nodes FAIL")

    # 2. Every node, two of them broken and one slow on its first run only: the three run again
    # after the confirmation's pause; exit 1, each broken node a FAIL line of its own, the slow
    # one a transient.
    transient = healthy[-1]
    status, log, fleet_dir = submit(cluster, args, work, wrapper, "broken", nodes, HDB_TEST_SLOW_ONCE=transient,
                                    HDBENCH_FLEET_CONFIRM="1")
    again = f"{transient[:1]}[{transient[1:]}-{hang[1:]}]"
    checks.check(f"hdbench-fleet: {again} FAILed: running them again in 1 s" in log,
                 f"the failing nodes {again} run again after the confirmation's pause")
    checks.check(status == 1, f"sbatch --wait exits 1, the fleet's exit with FAIL nodes (got {status})")
    checks.check(bool(log), "the job log hdbench-fleet-<jobid>.out is in the submit directory")
    for node in healthy:
        checks.check(f"hdbench-fleet: {node}: hdbench run exited 0" in log, f"{node}: hdbench run exited 0")
    checks.check(f"hdbench-fleet: {crash}: hdbench run exited 139" in log, f"{crash} (crashed): exited 139 (SIGSEGV)")
    checks.check(f"hdbench-fleet: {hang}: hdbench run exited 124" in log or f"hdbench-fleet: {hang}: hdbench run exited 137" in log,
                 f"{hang} (hung): exited 124 or 137 (timeout's SIGTERM, or the SIGKILL after it)")
    checks.check(f"hdbench-fleet: failing nodes: {crash[:1]}[{crash[1:]}-{hang[1:]}]" in log,
                 f"the job log names the failing nodes in Slurm's form ({crash[:1]}[{crash[1:]}-{hang[1:]}])")
    fleet, text = read_report(checks, fleet_dir, nodes)
    if not fleet:
        return
    by_name = {n["name"]: n for n in fleet["nodes"]}
    for node in healthy:
        n = by_name.get(node, {})
        checks.check(n.get("fail") == 0, f"{node}: no FAIL line ({n.get('fail')})")
        checks.check(any(l.get("basis") == "peers" for l in n.get("lines", [])),
                     f"{node}: its figures graded against its {len(healthy) - 1} peers")
    slow_lines = [l for l in by_name.get(transient, {}).get("lines", []) if l.get("confirmation") == "transient"]
    checks.check(bool(slow_lines) and all(l.get("grade") == "WARN" for l in slow_lines)
                 and by_name.get(transient, {}).get("earlier_runs", []) != [],
                 f"{transient}: slow on its first run only, a WARN transient graded on its second run "
                 f"({[l.get('reason', '')[:90] for l in slow_lines]})")
    reasons = {node: [l.get("reason", "") for l in by_name.get(node, {}).get("lines", []) if l.get("grade") == "FAIL"]
               for node in (crash, hang)}
    checks.check(any("did not start" in r for r in reasons[crash]),
                 f"{crash}: a FAIL line of its own, no run directory: {reasons[crash]}")
    checks.check(any("did not finish" in r for r in reasons[hang]),
                 f"{hang}: a FAIL line of its own, the run did not finish: {reasons[hang]}")
    summary = fleet.get("summary", {})
    checks.check(sorted(summary.get("failing_hostnames", [])) == [crash, hang],
                 f"fleet.json's failing_hostnames: [{crash}, {hang}] ({summary.get('failing_hostnames')})")
    named = re.search(rf"2 of {len(nodes)} nodes FAIL \((\S+), (\S+)\)", text)  # worst first
    checks.check(named is not None and sorted(named.groups()) == [crash, hang], "fleet.txt's summary: 2 nodes FAIL, named")
    if plotting_python():
        checks.check((fleet_dir / "report" / "plots" / "fleet_heatmap.png").is_file(),
                     "the fleet figures are drawn (fleet_heatmap.png)")


def main() -> int:
    parser = test_arguments(__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=6, help="node names n1..nN (the last two are broken; >= 6)")
    parser.add_argument("--node-timeout", type=int, default=45, help="HDBENCH_NODE_TIMEOUT for the job")
    args = parse_paths(parser)
    if args.nodes < 6:
        parser.error("--nodes must be >= 6: 4 healthy nodes (3 peers each) and the 2 broken ones")
    start = time.monotonic()
    work = work_directory("hdb-slurm-")
    if work is None:
        return SKIP
    cluster = Cluster(work, [f"n{i}" for i in range(1, args.nodes + 1)])
    checks = Checks()
    def jobs() -> None:
        print(f"ok   a private Slurm cluster of {args.nodes} node names on this host is up "
              f"({time.monotonic() - start:.1f} s; {work})")
        run_jobs(cluster, args, work, checks)

    if not run_on(cluster, checks, required(), jobs):
        shutil.rmtree(work, ignore_errors=True)
        return SKIP
    print(f"wall: {time.monotonic() - start:.1f} s, services stopped")
    if checks.failures:
        print("".join(cluster.tail(name) for name, _ in cluster.procs))
    return finish(checks, work, args.keep)


if __name__ == "__main__":
    sys.exit(main())
