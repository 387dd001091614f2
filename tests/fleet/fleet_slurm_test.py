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
real cluster has its own), except on the last two nodes: n(N-1) crashes (SIGSEGV) before its run
starts, nN's family hangs past HDBENCH_NODE_TIMEOUT (and hdbench with it: SIGKILL after the
SIGTERM).
1. The healthy nodes n1..n(N-2): sbatch exits 0, no failing-nodes line, fleet.json and fleet.txt
   name every node, 0 FAIL.
2. All N: sbatch exits 1 (the fleet's exit); the job log has each node's `hdbench run` exit
   status and the failing nodes' hostlist n[N-1-N]; the report (fleet.txt, fleet.json, the
   figures where matplotlib is) names every node; the healthy nodes have no FAIL and their
   figures are graded against their peers; each broken node has a FAIL line of its own.
The services are stopped at the end, whatever happened.

Exit 0 = passed, 1 = a check failed, 77 = skipped: no Slurm or munge here (apt install slurm-wlm
munge, as .ci/run does), not root, no UTS namespaces, or the services did not start. With
HDB_SLURM_TEST_REQUIRED=1 (.ci/run sets it) the last of these is a failure, not a skip.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
from hdb_test_support import Checks, plotting_python  # noqa: E402

SKIP = 77
DAEMONS = ("munged", "mungekey", "slurmctld", "slurmd", "slurmstepd")
CLIENTS = ("sbatch", "srun", "sinfo", "squeue", "scontrol", "scancel", "unshare", "timeout", "flock")


class Skip(Exception):
    pass


class Cluster:
    """munged, slurmctld and one slurmd per node, all in `root`, stopped by stop()."""

    def __init__(self, root: Path, nodes: list[str]) -> None:
        self.root = root
        self.nodes = nodes
        self.procs: list[tuple[str, subprocess.Popen]] = []
        self.conf = root / "slurm.conf"
        self.socket = root / "run" / "munge.socket"
        # No SLURM_* of the caller's own: a test run inside a Slurm job must not look like one of ours.
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
        self.env["SLURM_CONF"] = str(self.conf)
        self.env["PATH"] = os.environ.get("PATH", "/usr/bin:/bin") + ":/usr/sbin:/sbin"

    def log(self, name: str) -> Path:
        return self.root / "log" / name

    def spawn(self, name: str, argv: list[str]) -> subprocess.Popen:
        out = self.log(name + ".out").open("w")
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=self.env, start_new_session=True)
        out.close()
        self.procs.append((name, proc))
        return proc

    def write_conf(self) -> None:
        ports = free_ports(2 + len(self.nodes))
        r = self.root
        lines = [
            "ClusterName=hdbtest",
            "SlurmctldHost=localhost",
            f"SlurmctldPort={ports[0]}",
            f"SlurmdPort={ports[1]}",
            "SlurmUser=root", "SlurmdUser=root",
            "AuthType=auth/munge", "CredType=cred/munge", f"AuthInfo=socket={self.socket}",
            f"StateSaveLocation={r}/state", f"SlurmdSpoolDir={r}/spool/%n",
            f"SlurmctldPidFile={r}/run/slurmctld.pid", f"SlurmdPidFile={r}/run/slurmd-%n.pid",
            f"SlurmctldLogFile={r}/log/slurmctld.log", f"SlurmdLogFile={r}/log/slurmd-%n.log",
            "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/none", "AccountingStorageType=accounting_storage/none",
            "JobCompType=jobcomp/none", "MpiDefault=none", "MailProg=/bin/true",
            "SchedulerType=sched/builtin", "SelectType=select/linear",
            "ReturnToService=2", "SlurmdParameters=config_overrides",
            "SlurmdTimeout=60", "InactiveLimit=0", "KillWait=2",
            # 0: no job record is purged, so `sbatch --wait` polls every 2 s (it sleeps 2, 8, 32 s while
            # that is below MinJobAge / 2: 42 s for a 24 s job at MinJobAge=30).
            "MinJobAge=0",
        ]
        for node, port in zip(self.nodes, ports[2:]):
            lines.append(f"NodeName={node} NodeHostname=localhost NodeAddr=127.0.0.1 Port={port} CPUs=1 State=UNKNOWN")
        lines.append(f"PartitionName=hdbtest Nodes={','.join(self.nodes)} Default=YES MaxTime=INFINITE State=UP")
        self.conf.write_text("\n".join(lines) + "\n", encoding="utf-8")

    def start(self) -> None:
        r = self.root
        for d in ("run", "log", "state", *(f"spool/{n}" for n in self.nodes)):
            (r / d).mkdir(parents=True, exist_ok=True)
        key_dir = r / "munge"
        key_dir.mkdir(mode=0o700)
        (r / "run").chmod(0o755)  # munged wants its socket's directory executable by all
        key = key_dir / "munge.key"
        with key.open("wb") as f:
            f.write(os.urandom(128))
        key.chmod(0o600)
        self.spawn("munged", ["munged", "--foreground", f"--socket={self.socket}", f"--key-file={key}",
                              f"--pid-file={r}/run/munged.pid", f"--log-file={r}/log/munged.log",
                              f"--seed-file={key_dir}/munged.seed"])
        wait_for(lambda: subprocess.run(["munge", "-n", "-S", str(self.socket)], capture_output=True).returncode == 0,
                 10, "munged answers on its socket", self, "munged")
        self.write_conf()
        self.spawn("slurmctld", ["slurmctld", "-D", "-f", str(self.conf)])
        wait_for(lambda: self.client(["scontrol", "ping"]).stdout.count("UP") > 0, 20,
                 "slurmctld answers scontrol ping", self, "slurmctld")
        for node in self.nodes:
            self.spawn(f"slurmd-{node}", ["slurmd", "-D", "-f", str(self.conf), "-N", node])
        wait_for(lambda: self.idle() == len(self.nodes), 30,
                 f"all {len(self.nodes)} nodes idle in sinfo", self, *(f"slurmd-{n}" for n in self.nodes))

    def client(self, argv: list[str], timeout: float = 10) -> subprocess.CompletedProcess:
        try:
            return subprocess.run(argv, capture_output=True, text=True, env=self.env, timeout=timeout)
        except subprocess.TimeoutExpired:
            return subprocess.CompletedProcess(argv, 124, "", "timed out")

    def idle(self) -> int:
        out = self.client(["sinfo", "-h", "-N", "-o", "%N %t"]).stdout.split("\n")
        return sum(1 for line in out if line.split()[1:2] == ["idle"])

    def alive(self, name: str) -> bool:
        return any(n == name and p.poll() is None for n, p in self.procs)

    def tail(self, name: str, lines: int = 15) -> str:
        text = ""
        for path in (self.log(name + ".log"), self.log(name + ".out")):
            if path.is_file():
                text += f"--- {path}\n" + "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) + "\n"
        return text

    def stop(self) -> None:
        if self.conf.is_file() and self.alive("slurmctld"):
            self.client(["scancel", "--user", "root"], timeout=5)
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and self.client(["squeue", "-h"], timeout=5).stdout.strip():
                time.sleep(0.2)
        for name, proc in reversed(self.procs):  # slurmds, then slurmctld, then munged
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + 10
        for name, proc in self.procs:
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                print(f"{name} did not stop on SIGTERM: SIGKILL")
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait()


def free_ports(count: int) -> list[int]:
    socks = []
    try:
        for _ in range(count):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def wait_for(ready, seconds: float, what: str, cluster: Cluster, *daemons: str) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if ready():
            return
        dead = [d for d in daemons if not cluster.alive(d)]
        if dead:
            break
        time.sleep(0.2)
    raise Skip(f"the private cluster did not start: no {what} within {seconds:g} s\n"
               + "".join(cluster.tail(d) for d in daemons))


def preflight() -> None:
    missing = [p for p in (*DAEMONS, *CLIENTS, "munge") if shutil.which(p) is None
               and not any(Path(d, p).is_file() for d in ("/usr/sbin", "/sbin"))]
    if missing:
        raise Skip(f"no Slurm/munge here ({', '.join(missing)} not found): apt install slurm-wlm munge, as .ci/run does")
    if os.geteuid() != 0:
        raise Skip("not root: slurmd launches the job's tasks and must run as root")
    probe = subprocess.run(["unshare", "--uts", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        raise Skip(f"no UTS namespace (unshare --uts: {probe.stderr.strip()}): each node needs its own hostname")


def write_wrapper(work: Path, args: argparse.Namespace, crash: str, hang: str) -> Path:
    """HDBENCH for the job: `run` as the node (its hostname; the crash and hang plants), the rest as is."""
    hang_bin = work / "hang-bin"
    shutil.copytree(args.standin_bin, hang_bin)
    family = hang_bin / "hdbench-standin"
    family.unlink()
    family.write_text("#!/bin/sh\n# The family hangs, as a GPU kernel that never returns: every call sleeps.\nexec sleep 300\n")
    family.chmod(0o755)
    wrapper = work / "hdbench-node"
    wrapper.write_text(f"""#!/bin/sh
# hdbench as node $SLURMD_NODENAME of the test's cluster sees it (fleet_slurm_test.py).
if [ "$1" = run ]; then
  shift
  bin='{args.standin_bin}'
  # The nodes of this cluster share one machine's cores, where a real cluster's each have their
  # own: the measuring nodes take turns (one lock), so one node's CPU-timed stand-in figure is not
  # another's load. The hung node measures nothing and must not hold the others up.
  lock='{work / "measure.lock"}'
  case "${{SLURMD_NODENAME:-}}" in
    {crash}) kill -SEGV $$ ;;
    {hang}) bin='{hang_bin}'; lock='' ;;
  esac
  if [ -n "$lock" ]; then
    exec flock "$lock" unshare --uts sh -c 'hostname "$0" && exec "$@"' "$SLURMD_NODENAME" '{args.hdbench}' run --bin-dir "$bin" "$@"
  fi
  exec unshare --uts sh -c 'hostname "$0" && exec "$@"' "$SLURMD_NODENAME" '{args.hdbench}' run --bin-dir "$bin" "$@"
fi
exec '{args.hdbench}' "$@"
""")
    wrapper.chmod(0o755)
    return wrapper


def submit(cluster: Cluster, args: argparse.Namespace, work: Path, wrapper: Path, name: str,
           nodes: list[str]) -> tuple[int, str, Path]:
    """sbatch --wait of the batch script on `nodes`; returns its exit status, the job log and HDBENCH_FLEET_DIR."""
    fleet_dir = work / name
    submit_dir = work / f"{name}-submit"
    submit_dir.mkdir()
    env = dict(cluster.env, HDBENCH=str(wrapper), HDBENCH_FLEET_DIR=str(fleet_dir),
               HDBENCH_RUN_ARGS=f"--manifest {args.manifest}", HDBENCH_NODE_TIMEOUT=str(args.node_timeout),
               HDBENCH_NODE_KILL_AFTER="2", MPLBACKEND="Agg", MPLCONFIGDIR=str(work / "mplconfig"))
    argv = ["sbatch", "--wait", "-N", str(len(nodes)), f"--nodelist={','.join(nodes)}", "--chdir", str(submit_dir),
            str(args.sbatch)]
    start = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=args.node_timeout + 60)
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

    # 2. Every node, two of them broken: exit 1, each broken node a FAIL line of its own.
    status, log, fleet_dir = submit(cluster, args, work, wrapper, "broken", nodes)
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
    reasons = {node: [l.get("reason", "") for l in by_name.get(node, {}).get("lines", []) if l.get("grade") == "FAIL"]
               for node in (crash, hang)}
    checks.check(any("did not start" in r for r in reasons[crash]),
                 f"{crash}: a FAIL line of its own, no run directory: {reasons[crash]}")
    checks.check(any("did not finish" in r for r in reasons[hang]),
                 f"{hang}: a FAIL line of its own, the run did not finish: {reasons[hang]}")
    summary = fleet.get("summary", {})
    checks.check(sorted(summary.get("failing_hostnames", [])) == [crash, hang],
                 f"fleet.json's failing_hostnames: [{crash}, {hang}] ({summary.get('failing_hostnames')})")
    checks.check(f"2 of {len(nodes)} nodes FAIL ({crash}, {hang})" in text, "fleet.txt's summary: 2 nodes FAIL, named")
    if plotting_python():
        checks.check((fleet_dir / "report" / "plots" / "fleet_heatmap.png").is_file(),
                     "the fleet figures are drawn (fleet_heatmap.png)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hdbench", type=Path, required=True)
    parser.add_argument("--standin-bin", type=Path, required=True, help="the stand-in family's bin directory")
    parser.add_argument("--manifest", type=Path, required=True, help="tests/standin_family/suite.json")
    parser.add_argument("--sbatch", type=Path, required=True, help="share/hdbench/hdbench-fleet.sbatch")
    parser.add_argument("--nodes", type=int, default=6, help="node names n1..nN (the last two are broken; >= 6)")
    # The measuring nodes take turns (the wrapper's lock), so a node's timeout covers its wait for the others too.
    parser.add_argument("--node-timeout", type=int, default=45, help="HDBENCH_NODE_TIMEOUT for the job")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = parser.parse_args()
    if args.nodes < 6:
        parser.error("--nodes must be >= 6: 4 healthy nodes (3 peers each) and the 2 broken ones")
    args.hdbench, args.standin_bin, args.manifest, args.sbatch = (
        p.resolve() for p in (args.hdbench, args.standin_bin, args.manifest, args.sbatch))
    required = os.environ.get("HDB_SLURM_TEST_REQUIRED") == "1"
    try:
        preflight()
    except Skip as e:
        print(f"skip: {e}")
        return SKIP

    start = time.monotonic()
    # Under /tmp: a unix socket's path must stay short, and the daemons' own files stay apart from the build.
    work = Path(tempfile.mkdtemp(prefix="hdb-slurm-"))
    work.chmod(0o755)
    cluster = Cluster(work, [f"n{i}" for i in range(1, args.nodes + 1)])
    checks = Checks()
    try:
        cluster.start()
        print(f"ok   a private Slurm cluster of {args.nodes} node names on this host is up "
              f"({time.monotonic() - start:.1f} s; {work})")
        run_jobs(cluster, args, work, checks)
    except Skip as e:
        if required:
            checks.check(False, f"HDB_SLURM_TEST_REQUIRED=1 and {e}")
        else:
            print(f"skip: {e}")
            cluster.stop()
            shutil.rmtree(work, ignore_errors=True)
            return SKIP
    except subprocess.TimeoutExpired as e:
        checks.check(False, f"{' '.join(map(str, e.cmd))} did not end within {e.timeout:g} s")
    finally:
        cluster.stop()
    print(f"wall: {time.monotonic() - start:.1f} s, services stopped")
    if checks.failures:
        print("".join(cluster.tail(name) for name, _ in cluster.procs))
        print(f"\n{len(checks.failures)} check(s) failed (the cluster's files are kept in {work}):")
        for failure in checks.failures:
            print(f"  {failure}")
        return 1
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
