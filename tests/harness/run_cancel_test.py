#!/usr/bin/env python3
"""`hdbench run` ends on SIGTERM while a family hangs in its case-listing step.

The run lists each family's cases (--benchmark_list_tests) before it measures; a binary that hangs
there (a driver call that never returns) must not keep hdbench alive past a SIGTERM, or a batch
system's time limit (`timeout`, Slurm's) cannot end the node's run. The family is a script that
sleeps; hdbench gets SIGTERM 2 s in and must be gone within 10 s (the list
step's own deadline is 120 s), with a non-zero exit, and leave no sleeping child behind.
"""
import argparse
import json
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hdbench", type=Path, required=True)
    parser.add_argument("--probe", type=Path, required=True, help="a stand-in hdbench-probe")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="hdb-cancel-") as tmp:
        work = Path(tmp)
        hang_bin = work / "bin"
        hang_bin.mkdir()
        shutil.copy(args.probe, hang_bin / "hdbench-probe")
        family = hang_bin / "hdbench-hang"
        family.write_text("#!/bin/sh\n# hangs in every step, its list step included\nexec sleep 300\n")
        family.chmod(0o755)
        manifest = work / "suite.json"
        manifest.write_text(json.dumps({"schema_version": 2, "families": [
            {"name": "hang", "folder": "tests/harness", "binary": "hdbench-hang", "plots": "hang", "flags": [],
             "quick_flags": [], "timeout_s": 600}]}))
        run = subprocess.Popen([str(args.hdbench), "run", "--manifest", str(manifest), "--bin-dir", str(hang_bin),
                                "--out", str(work / "run")],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        time.sleep(2)
        if run.poll() is not None:
            print(f"FAIL: hdbench run ended before the SIGTERM (exit {run.returncode}):\n{run.stdout.read()}")
            return 1
        sent = time.monotonic()
        run.send_signal(signal.SIGTERM)
        try:
            output, _ = run.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            run.kill()
            output, _ = run.communicate()
            print(f"FAIL: hdbench run still alive 10 s after SIGTERM:\n{output}")
            return 1
        took = time.monotonic() - sent
        print(output)
        print(f"hdbench run exited {run.returncode}, {took:.1f} s after SIGTERM")
        failures = []
        if run.returncode == 0:
            failures.append("exit 0 after SIGTERM")
        left = subprocess.run(["pgrep", "-f", f"{hang_bin}/hdbench-hang"], capture_output=True, text=True)
        time.sleep(0.5)
        left = subprocess.run(["pgrep", "-f", f"{hang_bin}/hdbench-hang"], capture_output=True, text=True)
        if left.stdout.strip():
            failures.append(f"the hung family is still running: pids {left.stdout.split()}")
            subprocess.run(["pkill", "-f", f"{hang_bin}/hdbench-hang"])
        for failure in failures:
            print("FAIL: " + failure)
        return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
