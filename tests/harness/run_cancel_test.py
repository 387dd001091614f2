#!/usr/bin/env python3
"""`hdbench run` ends on SIGTERM while a family hangs in its case-listing step, and while it draws.

The run lists each family's cases (--benchmark_list_tests) before it measures; a binary that hangs
there (a driver call that never returns) must not keep hdbench alive past a SIGTERM, or a batch
system's time limit (`timeout`, Slurm's) cannot end the node's run. The family is a script that
sleeps; hdbench gets SIGTERM 2 s in and must be gone within 10 s (the list
step's own deadline is 120 s), with a non-zero exit, and leave no sleeping child behind.
The same for the plot step (its own deadline is 10 minutes): a family that ends at once, a
plot_run.py (HDBENCH_PLOTS_DIR) that sleeps; SIGTERM once it sleeps. And SIGKILL there, to
hdbench alone (the OOM killer, `kill -9`, a batch system that signals one process): the plot step
must die with it, or it would draw on for minutes holding what the run held (the health check's
lock among them), where a time limit that signals the whole process group hides the difference.
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def cancelled_run(hdbench: Path, work: Path, probe: Path, family_script: str, sleeper: str,
                  env: dict | None = None, sig: signal.Signals = signal.SIGTERM) -> list[str]:
    """Starts `hdbench run` on a one-family manifest, sends `sig` once `sleeper` (a command line
    fragment) runs, and returns what went wrong."""
    bin_dir = work / "bin"
    bin_dir.mkdir()
    shutil.copy(probe, bin_dir / "hdbench-probe")
    family = bin_dir / "hdbench-hang"
    family.write_text(family_script)
    family.chmod(0o755)
    manifest = work / "suite.json"
    manifest.write_text(json.dumps({"schema_version": 2, "families": [
        {"name": "hang", "folder": "tests/harness", "binary": "hdbench-hang", "plots": "hang", "flags": [],
         "quick_flags": [], "timeout_s": 600}]}))
    run = subprocess.Popen([str(hdbench), "run", "--manifest", str(manifest), "--bin-dir", str(bin_dir),
                            "--out", str(work / "run")],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    deadline = time.monotonic() + 60  # a hang guard: a loaded machine may take seconds to get there
    while not subprocess.run(["pgrep", "-f", sleeper], capture_output=True).stdout.strip():
        if run.poll() is not None or time.monotonic() > deadline:
            run.kill()
            return [f"hdbench run never reached `{sleeper}` (exit {run.poll()}):\n{run.communicate()[0]}"]
        time.sleep(0.2)
    sent = time.monotonic()
    run.send_signal(sig)
    try:
        output, _ = run.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        run.kill()
        output, _ = run.communicate()
        return [f"hdbench run still alive 10 s after {sig.name}:\n{output}"]
    print(output)
    print(f"hdbench run exited {run.returncode}, {time.monotonic() - sent:.1f} s after {sig.name}")
    failures = []
    if run.returncode == 0:
        failures.append(f"exit 0 after {sig.name}")
    time.sleep(0.5)
    left = subprocess.run(["pgrep", "-f", sleeper], capture_output=True, text=True)
    if left.stdout.strip():
        failures.append(f"`{sleeper}` is still running after {sig.name}: pids {left.stdout.split()}")
        subprocess.run(["pkill", "-f", sleeper])
    return failures


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hdbench", type=Path, required=True)
    parser.add_argument("--probe", type=Path, required=True, help="a stand-in hdbench-probe")
    args = parser.parse_args()
    failures = []
    with tempfile.TemporaryDirectory(prefix="hdb-cancel-") as tmp:
        work = Path(tmp)
        failures += cancelled_run(args.hdbench, work, args.probe,
                                  "#!/bin/sh\n# hangs in every step, its list step included (no exec: pgrep finds it by its name)\nsleep 300\n",
                                  f"{work}/bin/hdbench-hang")
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with tempfile.TemporaryDirectory(prefix="hdb-cancel-plots-") as tmp:
            work = Path(tmp)
            plots = work / "plots"
            plots.mkdir()
            (plots / "plot_run.py").write_text("import time\ntime.sleep(300)  # a plot step that never ends\n")
            failures += cancelled_run(args.hdbench, work, args.probe, "#!/bin/sh\n# ends at once, measuring nothing\nexit 0\n",
                                      f"{plots}/plot_run.py", env=dict(os.environ, HDBENCH_PLOTS_DIR=str(plots)), sig=sig)
    for failure in failures:
        print("FAIL: " + failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
