"""A private Slurm cluster on this host for the fleet's Slurm tests (fleet_slurm_test.py,
slurm_healthcheck_test.py): munged, slurmctld and one slurmd per node name, with a munge key,
munged socket, slurm.conf, ports, state and logs of their own in one directory (nothing of
/etc/slurm or /etc/munge is read or written), stopped by Cluster.stop() whatever happened."""
from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import signal
import socket
import subprocess
import time
from pathlib import Path

SKIP = 77
DAEMONS = ("munged", "mungekey", "slurmctld", "slurmd", "slurmstepd")
CLIENTS = ("sbatch", "srun", "sinfo", "squeue", "scontrol", "scancel", "unshare", "timeout", "flock")


class Skip(Exception):
    pass


class Cluster:
    """munged, slurmctld and one slurmd per node, all in `root`, stopped by stop(). `conf`: more
    slurm.conf lines (the health check's)."""

    def __init__(self, root: Path, nodes: list[str], conf: list[str] | None = None) -> None:
        self.root = root
        self.nodes = nodes
        self.extra_conf = list(conf or [])
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
            # `sbatch --wait` sleeps 2 s, then 4 times longer while that is below MinJobAge / 2 (the
            # file's value), up to 32 s; a finished job's record lives MinJobAge seconds. 16: it polls
            # every 8 s after the first 2 s, and the record outlives a poll by 8 s. (0, as before,
            # made sbatch poll every 2 s, but slurmctld takes 0 as 2 ("MinJobAge must be at least
            # 2"): a loaded machine's sbatch missed the record and exited 0 for a job that exited 1,
            # "Job 2 no longer found and exit code not found".)
            "MinJobAge=16",
            *self.extra_conf,
        ]
        for node, port in zip(self.nodes, ports[2:]):
            lines.append(f"NodeName={node} NodeHostname=localhost NodeAddr=127.0.0.1 Port={port} CPUs=1 State=UNKNOWN")
        lines.append(f"PartitionName=hdbtest Nodes={','.join(self.nodes)} Default=YES MaxTime=INFINITE State=UP")
        self.conf.write_text("\n".join(lines) + "\n", encoding="utf-8")

    def start(self, wait_idle: bool = True) -> None:
        """Up with every node idle; or, with wait_idle False (a health check may drain a node as it
        starts), every node registered: answering, whatever its state."""
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
        slurmds = [f"slurmd-{n}" for n in self.nodes]
        if wait_idle:
            wait_for(lambda: self.idle() == len(self.nodes), 30, f"all {len(self.nodes)} nodes idle in sinfo", self, *slurmds)
        else:
            wait_for(lambda: len(self.registered()) == len(self.nodes), 90,
                     f"all {len(self.nodes)} nodes registered in sinfo", self, *slurmds)

    def client(self, argv: list[str], timeout: float = 10) -> subprocess.CompletedProcess:
        try:
            return subprocess.run(argv, capture_output=True, text=True, env=self.env, timeout=timeout)
        except subprocess.TimeoutExpired:
            return subprocess.CompletedProcess(argv, 124, "", "timed out")

    def idle(self) -> int:
        out = self.client(["sinfo", "-h", "-N", "-o", "%N %t"]).stdout.split("\n")
        return sum(1 for line in out if line.split()[1:2] == ["idle"])

    def states(self) -> dict[str, tuple[str, str]]:
        """node -> (state, reason) as `sinfo -h -N -o "%N|%T|%E"` prints them ("drained", "hdbench: ...")."""
        out = self.client(["sinfo", "-h", "-N", "-o", "%N|%T|%E"]).stdout
        return {f[0]: (f[1], f[2]) for f in (line.split("|", 2) for line in out.splitlines()) if len(f) == 3}

    def registered(self) -> list[str]:
        """The nodes whose slurmd has registered: answering (no "*") and neither unknown nor down."""
        return [n for n, (state, _) in self.states().items()
                if not state.endswith("*") and not state.startswith(("unknown", "down"))]

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
        # What the daemons started in their sessions and left behind (a health check slurmd started:
        # its own process group, slurmd's session), so that nothing of the cluster outlives it.
        sessions = {proc.pid for _, proc in self.procs}
        for pid in session_members(sessions):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def session_members(sessions: set[int]) -> list[int]:
    """The live processes whose session is one of `sessions` (from /proc/PID/stat's sixth field)."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()  # after "pid (comm) ": state ppid pgrp session ...
        if len(fields) > 3 and int(fields[3]) in sessions:
            members.append(int(entry.name))
    return members


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


def hanging_family_bin(standin_bin: Path, work: Path) -> Path:
    """A copy of the stand-in's bin directory whose family hangs, as a GPU kernel that never
    returns: every call sleeps. A node planted to hang runs hdbench with --bin-dir at it."""
    hang_bin = work / "hang-bin"
    shutil.copytree(standin_bin, hang_bin)
    family = hang_bin / "hdbench-standin"
    family.unlink()
    family.write_text("#!/bin/sh\n# The family hangs, as a GPU kernel that never returns: every call sleeps.\nexec sleep 300\n")
    family.chmod(0o755)
    return hang_bin


def run_on(cluster: Cluster, checks, required: bool, body, skip_note: str = "", **start) -> bool:
    """Start `cluster` (`start`: Cluster.start's arguments), run body(), and stop the cluster
    whatever happens. Slurm's daemons not starting (Skip) fails a check where the test is required
    (HDB_SLURM_TEST_REQUIRED=1) and is otherwise a skip: False, after one line saying why. A
    command past its timeout fails a check. True: the body ran, or failed its checks."""
    try:
        cluster.start(**start)
        body()
    except Skip as e:
        if not required:
            print(f"skip{skip_note}: {e}")
            return False
        checks.check(False, f"HDB_SLURM_TEST_REQUIRED=1 and {e}")
    except subprocess.TimeoutExpired as e:
        checks.check(False, f"{' '.join(map(str, e.cmd))} did not end within {e.timeout:g} s")
    finally:
        cluster.stop()
    return True


def test_arguments(description: str) -> argparse.ArgumentParser:
    """The arguments every Slurm test takes; a test adds its own before parse_paths()."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--hdbench", type=Path, required=True)
    parser.add_argument("--standin-bin", type=Path, required=True, help="the stand-in family's bin directory")
    parser.add_argument("--manifest", type=Path, required=True, help="tests/standin_family/suite.json")
    parser.add_argument("--sbatch", type=Path, required=True, help="share/hdbench/hdbench-fleet.sbatch")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    return parser


def parse_paths(parser: argparse.ArgumentParser) -> argparse.Namespace:
    """The parsed arguments, every path absolute: the jobs run in other directories."""
    args = parser.parse_args()
    for name, value in vars(args).items():
        if isinstance(value, Path):
            setattr(args, name, value.resolve())
    return args


def required() -> bool:
    """Slurm's daemons not starting is a failure here, not a skip (.ci/run sets it)."""
    return os.environ.get("HDB_SLURM_TEST_REQUIRED") == "1"


def work_directory(prefix: str) -> Path | None:
    """The test's temporary directory, under /tmp (munged's socket path must stay short, and the
    daemons' files stay apart from the build); None, after one line saying why, where this host
    cannot run Slurm's daemons (the test then exits SKIP)."""
    try:
        preflight()
    except Skip as e:
        print(f"skip: {e}")
        return None
    work = Path(tempfile.mkdtemp(prefix=prefix))
    work.chmod(0o755)
    return work


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
