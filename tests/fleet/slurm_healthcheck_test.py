#!/usr/bin/env python3
"""The health check on a real Slurm (docs/fleet.md, "Slurm's health check"; issue 39 item 2).

    slurm_healthcheck_test.py --hdbench BIN/hdbench --standin-bin DIR --manifest tests/standin_family/suite.json
                              --healthcheck share/hdbench/hdbench-healthcheck
                              --sbatch share/hdbench/hdbench-fleet.sbatch [--keep]

A reference set of the stand-in family judges every run: three verdict runs whose triad reports
the planted STANDIN_BANDWIDTH (hdb_test_support), which a healthy node's run reports too, so no
verdict moves with the machine's load. HDBENCH is a wrapper around the real hdbench that runs
`hdbench run` on the stand-in family (no GPU; no figures drawn: HDBENCH_PLOTS_DIR empty), planted
per node by a file: plant/slow.<node> (every pass FAULT_SLOWDOWN longer: the triad 95 % under the
set's centre, beyond its 50 % tolerance), plant/crash.<node> (the family aborts in the checked case), plant/failed.<node>
(its strided 4-lane cases fail), plant/hang.<node> (the family never returns) or plant/late.<node>
(the run writes a clean check.json, then its plot step never returns). The health check is started through the documented wrapper shape (a script that
exports the knobs and execs hdbench-healthcheck), the way slurmd starts it.

1. A private cluster of n1..n3 (slurm_cluster.py) without a health check in slurm.conf:
   - the batch script on all three, n2 slow: each node's meta.json has host.slurm_node_name (its
     hostname is this host's, not the node name), and the failing-nodes line is `n2`;
   - the script started as slurmd starts it (only SLURMD_NODENAME in its environment): healthy n1
     not drained; slow n2 not drained by its first check (a FAIL measured once is not confirmed)
     and drained by its second with reason "hdbench: ...", then at once for a crashed family and
     for failed cases; n2 healthy again, its name found by
     its hostname (a UTS namespace whose hostname is n2, no SLURMD_NODENAME), resumed; n3 drained
     by an operator ("maintenance") left alone both when it passes and when it fails (hangs); n1 hung past
     HDBENCH_HEALTHCHECK_TIMEOUT drained ("did not finish"), kept drained by a late run (a clean
     check.json, the run not finished), then resumed by --detach; bad input exit 2 with one line.
2. A second cluster whose slurm.conf names the wrapper as HealthCheckProgram (HealthCheckInterval,
   HealthCheckNodeState=IDLE): slurmd's own runs drain the slow n2 as it starts (its second
   check, one interval after the first, confirms the first's FAIL), leave n1 idle, drain the hung
   n3 with the health check's default timeout (no knob set) before slurmd's own 60 s end it, and
   resume n2 once its plant is gone; the environment slurmd gave the program is recorded.
Node states are read back with `sinfo -h -N -o "%N|%T|%E"`, polled with generous deadlines.

Exit 0 = passed, 1 = a check failed, 77 = skipped (as fleet_slurm_test.py: no Slurm or munge, not
root, no UTS namespaces, or the services did not start; the last a failure under
HDB_SLURM_TEST_REQUIRED=1).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
from hdb_test_support import FAULT_SLOWDOWN, STANDIN_BANDWIDTH, Checks, finish, make_standin_set  # noqa: E402
from slurm_cluster import (SKIP, Cluster, hanging_family_bin, parse_paths, required, run_on,  # noqa: E402
                           test_arguments, work_directory)

NODES = ["n1", "n2", "n3"]
# The drain reason of a slow stand-in node: the count of FAIL lines (its four triad cases), then
# the first one's GPUs, family and figure.
SLOW_REASON = re.compile(r"hdbench: 4 FAIL, GPU 0,1 standin triad")
# A family that crashed or failed cases: its own FAIL line (check.txt's first) and why it failed.
FAMILY_REASON = re.compile(r"hdbench: [0-9]+ FAIL, .* standin .* the (family|case) failed: .*")
RUN_TIMEOUT = 180  # any one command of the test: a hang guard, never a measurement
# slurmd (22.05) kills a HealthCheckProgram after 60 s; the health check's defaults must leave it
# time to drain: its SIGKILL 5 s after the timeout (HDBENCH_HEALTHCHECK_KILL_AFTER), and at most
# 10 s for the scontrol that drains (its sctl).
SLURMD_HEALTH_CHECK_LIMIT = 60
KILL_AFTER_DEFAULT = 5
SCONTROL_BOUND = 10
HUNG_REASON = re.compile(r"hdbench: verdict run did not finish in ([0-9]+) s")


def write_hdbench_wrapper(work: Path, args: argparse.Namespace) -> Path:
    """HDBENCH: `run` on the stand-in family with this node's plant, the rest as is. plant/late.<node>:
    the run writes its check.json, then its plot step never returns (a plot_run.py that sleeps)."""
    hang_bin = hanging_family_bin(args.standin_bin, work)
    hanging_plots = work / "hanging-plots"
    hanging_plots.mkdir()
    (hanging_plots / "plot_run.py").write_text("import time\ntime.sleep(3600)  # a plot step that never returns\n")
    wrapper = work / "hdbench-node"
    wrapper.write_text(f"""#!/bin/sh
# hdbench as node $SLURMD_NODENAME of the test's cluster sees it (slurm_healthcheck_test.py).
if [ "$1" = run ]; then
  shift
  node=${{SLURMD_NODENAME:-unknown}}
  if [ -e '{work}/plant/hang.'"$node" ]; then exec '{args.hdbench}' run --bin-dir '{hang_bin}' "$@"; fi
  plant=''
  [ -e '{work}/plant/slow.'"$node" ] && plant='{FAULT_SLOWDOWN}'
  [ -e '{work}/plant/crash.'"$node" ] && plant='--plant=crash'
  [ -e '{work}/plant/failed.'"$node" ] && plant='--plant=failed_cases'
  plots='{work}/no-plots'
  [ -e '{work}/plant/late.'"$node" ] && plots='{hanging_plots}'
  HDBENCH_PLOTS_DIR="$plots" exec '{args.hdbench}' run --bin-dir '{args.standin_bin}' "$@" -- {STANDIN_BANDWIDTH} $plant
fi
exec '{args.hdbench}' "$@"
""")
    wrapper.chmod(0o755)
    return wrapper


def write_healthcheck_wrapper(work: Path, cluster: Cluster, args: argparse.Namespace, hdbench: Path, set_dir: Path) -> Path:
    """The documented HealthCheckProgram shape: a script that sets the knobs and execs the check
    (slurmd passes no arguments and no environment but SLURMD_NODENAME). It first records the
    environment it was given."""
    wrapper = cluster.root / "hdbench-healthcheck-wrapper"
    wrapper.write_text(f"""#!/bin/sh
env > '{cluster.root}/hc-env.'"${{SLURMD_NODENAME:-none}}"
export SLURM_CONF='{cluster.conf}'
export HDBENCH="${{HDBENCH:-{hdbench}}}"
export HDBENCH_RUN_ARGS='--manifest {args.manifest}'
export HDBENCH_REFERENCE_DIR='{set_dir}'
export HDBENCH_HEALTHCHECK_DIR='{cluster.root}/hc'
exec '{args.healthcheck}' "$@"
""")
    wrapper.chmod(0o755)
    return wrapper


def plant(work: Path, kind: str, node: str, on: bool) -> None:
    path = work / "plant" / f"{kind}.{node}"
    path.parent.mkdir(exist_ok=True)
    if on:
        path.touch()
    else:
        path.unlink(missing_ok=True)


def healthcheck(wrapper: Path, node: str | None, *argv: str, hostname: str | None = None,
                **env: str) -> tuple[int, str, str]:
    """The wrapper started as slurmd starts it: no arguments (unless given), stdin /dev/null, an
    environment of SLURMD_NODENAME alone (plus `env`); `hostname`: in a UTS namespace of that name."""
    environment = dict(env)
    if node is not None:
        environment["SLURMD_NODENAME"] = node
    command = [str(wrapper), *argv]
    if hostname is not None:
        command = ["unshare", "--uts", "sh", "-c", 'hostname "$0" && exec "$@"', hostname, *command]
    start = time.monotonic()
    proc = subprocess.run(["env", "-i", *(f"{k}={v}" for k, v in environment.items()), *command],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=RUN_TIMEOUT)
    shown = " ".join([*(f"{k}={v}" for k, v in environment.items()), wrapper.name, *argv])
    print(f"$ {shown}{f'  (hostname {hostname})' if hostname else ''}  -> exit {proc.returncode} "
          f"in {time.monotonic() - start:.1f} s")
    for line in (proc.stdout + proc.stderr).strip().splitlines():
        print("    " + line)
    return proc.returncode, proc.stdout, proc.stderr


def wait_state(cluster: Cluster, node: str, ready, seconds: float) -> tuple[str, str]:
    """Polls sinfo until ready(state, reason) or the deadline; returns the last (state, reason)."""
    deadline = time.monotonic() + seconds
    while True:
        state = cluster.states().get(node, ("", ""))
        if ready(*state) or time.monotonic() > deadline:
            return state
        time.sleep(0.5)


def show_sinfo(cluster: Cluster) -> None:
    out = cluster.client(["sinfo", "-h", "-N", "-o", "%N %T %E"]).stdout
    print('$ sinfo -h -N -o "%N %T %E"\n    ' + out.strip().replace("\n", "\n    "))


def drained(state: str, _reason: str = "") -> bool:
    return state.startswith(("drained", "draining"))


def fleet_job(cluster: Cluster, args: argparse.Namespace, work: Path, hdbench: Path, set_dir: Path,
              checks: Checks) -> None:
    """The batch script on n1..n3, n2 slow, each run under this host's own hostname."""
    fleet_dir, submit_dir = work / "job", work / "job-submit"
    submit_dir.mkdir()
    plant(work, "slow", "n2", True)
    env = dict(cluster.env, HDBENCH=str(hdbench), HDBENCH_FLEET_DIR=str(fleet_dir), HDBENCH_REFERENCE_DIR=str(set_dir),
               # Slow n2 is confirmed (three tries) with short pauses: the rule is tested here, not the clock.
               HDBENCH_RUN_ARGS=f"--verdict --confirm=1,1 --manifest {args.manifest}", HDBENCH_NODE_TIMEOUT="90",
               HDBENCH_FLEET_CONFIRM="1",
               HDBENCH_FLEET_ARGS="--no-plots", MPLBACKEND="Agg", MPLCONFIGDIR=str(work / "mplconfig"))
    argv = ["sbatch", "--wait", "-N", "3", f"--nodelist={','.join(NODES)}", "--chdir", str(submit_dir), str(args.sbatch)]
    start = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=RUN_TIMEOUT)
    plant(work, "slow", "n2", False)
    print(f"$ sbatch --wait -N 3 {args.sbatch.name}  -> exit {proc.returncode} in {time.monotonic() - start:.1f} s")
    outs = sorted(submit_dir.glob("hdbench-fleet-*.out"))
    log = outs[0].read_text(errors="replace") if len(outs) == 1 else ""
    print("    job log:\n      " + log.strip().replace("\n", "\n      "))
    checks.check(proc.returncode == 1, f"the job exits 1: n2 FAILs (got {proc.returncode})")
    host = socket.gethostname()
    for node in NODES:
        # n2 FAILs and runs again (the job's confirmation): every run of a node records its names.
        metas = sorted((fleet_dir / "nodes" / node).glob("*/meta.json"))
        checks.check(len(metas) == (2 if node == "n2" else 1), f"{node}: {len(metas)} run(s), a second for the FAILing n2")
        for path in metas:
            got = json.loads(path.read_text()).get("host", {})
            checks.check(got.get("slurm_node_name") == node and got.get("hostname") == host,
                         f"{node}: meta.json host.slurm_node_name {got.get('slurm_node_name')!r} (Slurm's), "
                         f"host.hostname {got.get('hostname')!r} (this host's)")
    checks.check("hdbench-fleet: failing nodes: n2\n" in log,
                 f"the failing-nodes line (hdbench fleet --nodelist) is Slurm's name n2, not the hostname {host}")
    report = fleet_dir / "report" / "fleet.json"
    fleet = json.loads(report.read_text()) if report.is_file() else {}
    checks.check(fleet.get("summary", {}).get("nodelist") == "n2", f"fleet.json's nodelist: n2 ({fleet.get('summary', {}).get('nodelist')})")
    status = subprocess.run([str(args.hdbench), "fleet", *(str(fleet_dir / "nodes" / n) for n in NODES), "--no-plots",
                             "--nodelist", "--out", str(work / "job-nodelist")], capture_output=True, text=True, timeout=RUN_TIMEOUT,
                            env=dict(os.environ, HDBENCH_REFERENCE_DIR=str(set_dir)))
    checks.check(status.returncode == 1 and status.stdout == "n2\n",
                 f"hdbench fleet --nodelist prints n2 and exits 1 (got {status.stdout!r}, exit {status.returncode})")


def direct_cases(cluster: Cluster, work: Path, wrapper: Path, checks: Checks) -> None:
    """The script started as slurmd starts it, on a cluster without a health check of its own."""
    # Healthy: not drained.
    status, out, _ = healthcheck(wrapper, "n1")
    checks.check(status == 0 and "hdbench-healthcheck: n1: no FAIL: hdbench check:" in out and "nothing to do" in out,
                 "healthy n1: exit 0, no FAIL, nothing to do")
    checks.check(not drained(*cluster.states()["n1"]), f"healthy n1 not drained: {cluster.states()['n1']}")

    # Slow: its figures measured once, so not drained by one check (a neighbour's burst passes)...
    plant(work, "slow", "n2", True)
    status, out, _ = healthcheck(wrapper, "n2")
    checks.check(status == 0 and "n2: FAIL not confirmed" in out and "n2: not drained" in out,
                 f"slow n2, first check: exit 0, FAIL not confirmed, not drained (got {status})")
    checks.check(not drained(*cluster.states()["n2"]), f"slow n2 not drained by one check: {cluster.states()['n2']}")
    # ...but by the next one, which FAILs too: drained with hdbench's reason, the one printed.
    status, out, _ = healthcheck(wrapper, "n2")
    state, reason = wait_state(cluster, "n2", drained, 30)
    checks.check("n2: the check " in out and " ago FAILed too: FAIL " in out, "slow n2, second check: the first check's FAIL named")
    checks.check(status == 1, f"slow n2: exit 1 (got {status})")
    checks.check(drained(state) and SLOW_REASON.match(reason) is not None and len(reason) <= 100,
                 f"slow n2 drained with hdbench's reason, at most 100 characters: {state} {reason!r}")
    checks.check(f'drained: scontrol update nodename=n2 state=drain reason="{reason}"' in out,
                 "the script printed the scontrol command it ran, with that reason")
    show_sinfo(cluster)

    # A family that crashes, or fails some cases: drained again, the family's FAIL line its reason.
    for kind, what in (("crash", "crashed"), ("failed", "failed cases")):
        plant(work, kind, "n2", True)
        status, out, _ = healthcheck(wrapper, "n2")
        plant(work, kind, "n2", False)
        state, reason = wait_state(cluster, "n2", lambda s, r: drained(s) and FAMILY_REASON.fullmatch(r) is not None, 30)
        checks.check(status == 1 and drained(state) and FAMILY_REASON.fullmatch(reason) is not None,
                     f"n2 {what}: exit 1, drained for its family's FAIL line: {state} {reason!r} (exit {status})")

    # Healthy again, its name found by its hostname: resumed.
    plant(work, "slow", "n2", False)
    status, out, _ = healthcheck(wrapper, None, hostname="n2")
    state, reason = wait_state(cluster, "n2", lambda s, r: not drained(s), 30)
    checks.check(status == 0 and "hdbench-healthcheck: n2: resumed: it was drained by hdbench" in out,
                 "n2 passing again (no SLURMD_NODENAME; its name from its hostname n2): exit 0, resumed")
    checks.check(not drained(state) and reason == "none", f"n2 resumed: {state} {reason!r}")

    # Drained by someone else: left alone, passing or failing.
    cluster.client(["scontrol", "update", "nodename=n3", "state=drain", "reason=maintenance"])
    status, out, _ = healthcheck(wrapper, "n3")
    checks.check(status == 0 and 'left drained: drained by someone else (reason "maintenance")' in out,
                 "n3 drained for maintenance, passing: exit 0, left drained")
    plant(work, "hang", "n3", True)  # a FAIL sooner than a slow run's
    status, out, _ = healthcheck(wrapper, "n3", HDBENCH_HEALTHCHECK_TIMEOUT="3", HDBENCH_HEALTHCHECK_KILL_AFTER="2")
    plant(work, "hang", "n3", False)
    checks.check(status == 1 and "left as it is: it carries a reason that is not hdbench's" in out,
                 "n3 drained for maintenance, failing (hung): exit 1, left as it is")
    state, reason = cluster.states()["n3"]
    checks.check(drained(state) and reason == "maintenance", f"n3 still drained for maintenance: {state} {reason!r}")
    show_sinfo(cluster)

    # Hung: the timeout ends the run, the node is drained; then --detach resumes it.
    plant(work, "hang", "n1", True)
    start = time.monotonic()
    status, out, _ = healthcheck(wrapper, "n1", HDBENCH_HEALTHCHECK_TIMEOUT="3", HDBENCH_HEALTHCHECK_KILL_AFTER="2")
    took = time.monotonic() - start
    plant(work, "hang", "n1", False)
    state, reason = wait_state(cluster, "n1", drained, 30)
    checks.check(status == 1 and took < 60, f"hung n1: exit 1 in {took:.1f} s, under slurmd's 60 s (got exit {status})")
    checks.check(drained(state) and reason == "hdbench: verdict run did not finish in 3 s", f"hung n1 drained: {state} {reason!r}")

    # A run that wrote a clean check.json, then did not finish (its plot step hung past the
    # timeout): a failed run, so the node it drained stays drained, never resumed.
    plant(work, "late", "n1", True)
    status, out, _ = healthcheck(wrapper, "n1", HDBENCH_HEALTHCHECK_TIMEOUT="20", HDBENCH_HEALTHCHECK_KILL_AFTER="2")
    plant(work, "late", "n1", False)
    verdicts = [json.loads(p.read_text()).get("exit_code") for p in (cluster.root / "hc" / "n1" / "runs").glob("*/check.json")]
    state, reason = cluster.states()["n1"]
    checks.check(verdicts == [0], f"late n1: its run wrote a clean check.json (exit_code {verdicts})")
    checks.check(status == 1 and "resumed" not in out and drained(state) and reason == "hdbench: verdict run did not finish in 20 s",
                 f"late n1: exit 1 and still drained, never resumed: {state} {reason!r} (exit {status})")
    status, out, _ = healthcheck(wrapper, "n1", "--detach")
    checks.check(status == 0 and "started in the background" in out, "--detach: exit 0 at once, the check in the background")
    state, reason = wait_state(cluster, "n1", lambda s, r: not drained(s), 90)
    log = cluster.root / "hc" / "n1" / "healthcheck.log"
    text = log.read_text() if log.is_file() else ""
    checks.check(not drained(state) and "n1: resumed: it was drained by hdbench (hdbench: verdict run did not finish" in text,
                 f"--detach: n1 resumed by the background check ({state} {reason!r}; {log.name}: {text.strip()[-200:]!r})")

    # Bad input: one line, exit 2, the node untouched.
    for argv, env, expected in ((["--bogus"], {}, "unknown argument '--bogus'"),
                                (["--node", "n9"], {}, "no Slurm node 'n9'"),
                                ([], {"HDBENCH": "/no/such/hdbench"}, "no hdbench binary: '/no/such/hdbench'"),
                                ([], {"HDBENCH_HEALTHCHECK_TIMEOUT": "soon"}, "HDBENCH_HEALTHCHECK_TIMEOUT must be a whole number")):
        status, out, err = healthcheck(wrapper, "n1", *argv, **env)
        checks.check(status == 2 and out == "" and len(err.splitlines()) == 1 and expected in err,
                     f"bad input {' '.join(argv) or env}: exit 2, one line: {err.strip()!r}")
    for hostname, expected in (("localhost", "is NodeHostName of several Slurm nodes (n1 n2 n3); give --node NAME"),
                               ("elsewhere", "no Slurm node is this host (elsewhere)")):
        status, out, err = healthcheck(wrapper, None, hostname=hostname)
        checks.check(status == 2 and expected in err, f"hostname {hostname}, no SLURMD_NODENAME: exit 2, {err.strip()!r}")


def slurmd_cases(root: Path, work: Path, args: argparse.Namespace, hdbench: Path, set_dir: Path, checks: Checks) -> None:
    """slurm.conf's HealthCheckProgram: slurmd's own runs drain n2 and resume it, and drain the
    hung n3 with the default settings, inside slurmd's own 60 s."""
    root.mkdir()
    root.chmod(0o755)
    nodes = ["n1", "n2", "n3"]
    cluster = Cluster(root, nodes)
    wrapper = write_healthcheck_wrapper(work, cluster, args, hdbench, set_dir)
    cluster.extra_conf = [f"HealthCheckProgram={wrapper}", "HealthCheckInterval=10", "HealthCheckNodeState=IDLE"]
    plant(work, "slow", "n2", True)
    plant(work, "hang", "n3", True)
    start = time.monotonic()

    def cases() -> None:
        state, reason = wait_state(cluster, "n2", drained, 90)
        checks.check(drained(state) and SLOW_REASON.match(reason) is not None,
                     f"slurmd's health check drained the slow n2 as it started ({time.monotonic() - start:.1f} s): {state} {reason!r}")
        n1 = cluster.states()["n1"]
        checks.check(n1[0].startswith("idle") and n1[1] == "none", f"slurmd's health check left the healthy n1 idle: {n1}")
        env_file = root / "hc-env.n2"
        given = dict(line.split("=", 1) for line in env_file.read_text().splitlines() if "=" in line) if env_file.is_file() else {}
        print(f"    the environment slurmd gave HealthCheckProgram: {sorted(given)}")
        checks.check(given.get("SLURMD_NODENAME") == "n2" and not {"PATH", "SLURM_CONF"} & set(given),
                     f"slurmd gave it SLURMD_NODENAME and no PATH or SLURM_CONF: {sorted(given)}")
        failed = [line for line in cluster.log("slurmd-n2.log").read_text(errors="replace").splitlines() if "health_check" in line]
        print("    slurmd-n2.log: " + (failed[0] if failed else "(no health_check line)"))
        # n3's verdict run hangs; the health check runs with its defaults (no timeout knob), and
        # slurmd kills a HealthCheckProgram at 60 s: the timeout, the SIGKILL after it and the
        # drain's scontrol must all fit in that, or a hung node is never drained.
        state, reason = wait_state(cluster, "n3", drained, 100)
        hung = HUNG_REASON.fullmatch(reason)
        checks.check(drained(state) and hung is not None,
                     f"slurmd's health check drained the hung n3 with the default timeout ({time.monotonic() - start:.1f} s): "
                     f"{state} {reason!r}")
        if hung is not None:
            budget = int(hung.group(1)) + KILL_AFTER_DEFAULT + SCONTROL_BOUND
            checks.check(budget < SLURMD_HEALTH_CHECK_LIMIT,
                         f"its default timeout {hung.group(1)} s + {KILL_AFTER_DEFAULT} s to SIGKILL + {SCONTROL_BOUND} s for scontrol "
                         f"= {budget} s, under slurmd's {SLURMD_HEALTH_CHECK_LIMIT} s")
        plant(work, "hang", "n3", False)
        plant(work, "slow", "n2", False)
        healthy_at = time.monotonic()
        state, reason = wait_state(cluster, "n2", lambda s, r: not drained(s), 120)
        checks.check(state.startswith("idle") and reason == "none",
                     f"slurmd's next health check resumed n2 once healthy ({time.monotonic() - healthy_at:.1f} s): {state} {reason!r}")

    run_on(cluster, checks, required(), cases, skip_note=" (the HealthCheckProgram cluster)", wait_idle=False)
    if checks.failures:
        print(cluster.tail("slurmd-n2", 30))


def main() -> int:
    parser = test_arguments(__doc__.splitlines()[0])
    parser.add_argument("--healthcheck", type=Path, required=True, help="share/hdbench/hdbench-healthcheck")
    args = parse_paths(parser)
    start = time.monotonic()
    work = work_directory("hdb-slurmhc-")
    if work is None:
        return SKIP
    checks = Checks()
    try:
        set_dir = make_standin_set(args.hdbench, args.standin_bin, args.manifest, work, RUN_TIMEOUT)
    except subprocess.CalledProcessError as e:
        print(f"FAIL {' '.join(map(str, e.cmd))} exited {e.returncode}:\n{e.stdout}{e.stderr}")
        return 1
    hdbench = write_hdbench_wrapper(work, args)
    print(f"ok   a stand-in reference set of 3 verdict runs ({time.monotonic() - start:.1f} s)")
    (work / "direct").mkdir()
    cluster = Cluster(work / "direct", NODES)
    def cases() -> None:
        print(f"ok   a private Slurm cluster of {NODES} on this host is up ({time.monotonic() - start:.1f} s; {work})")
        fleet_job(cluster, args, work, hdbench, set_dir, checks)
        direct_cases(cluster, work, write_healthcheck_wrapper(work, cluster, args, hdbench, set_dir), checks)

    if not run_on(cluster, checks, required(), cases):
        shutil.rmtree(work, ignore_errors=True)
        return SKIP
    if checks.failures:
        print("".join(cluster.tail(name) for name, _ in cluster.procs))
    print(f"{time.monotonic() - start:.1f} s: the HealthCheckProgram cluster")
    slurmd_cases(work / "slurmd", work, args, hdbench, set_dir, checks)
    print(f"wall: {time.monotonic() - start:.1f} s, services stopped")
    return finish(checks, work, args.keep)


if __name__ == "__main__":
    sys.exit(main())
