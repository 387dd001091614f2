"""What the Python tests share: the Python hdbench draws with, a list of named checks that reports
every failure, not just the first, and a reference set of the stand-in family."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path


def plotting_python(imports: str = "matplotlib") -> str | None:
    """The Python hdbench draws with, looked for as the harness does ($HDBENCH_PYTHON, python3 on
    PATH, /usr/bin/python3): the first that imports `imports`; None when none does."""
    for candidate in (os.environ.get("HDBENCH_PYTHON"), shutil.which("python3"), "/usr/bin/python3"):
        if candidate and subprocess.run([candidate, "-c", f"import {imports}"], capture_output=True).returncode == 0:
            return candidate
    return None


def stopping_counts(binary: Path) -> dict[str, int]:
    """The stopping rule's counts as a family binary's --help states them (formatted there from
    hdb/util/stopping.hpp): `floor` and `ceiling` of the precision rule, and the fixed counts of
    a case (`other`) and of a gated one (`gated`)."""
    result = subprocess.run([str(binary), "--help"], capture_output=True, text=True, timeout=60)
    text = result.stdout + result.stderr
    match = re.search(r"(\d+) to (\d+) repetitions, .*?fixed \((\d+), or (\d+) for a gated case\)", text)
    if match is None:
        raise SystemExit(f"{binary} --help states no stopping rule's counts")
    floor, ceiling, other, gated = map(int, match.groups())
    return {"floor": floor, "ceiling": ceiling, "other": other, "gated": gated}


class Checks:
    """Each check prints `ok` or `FAIL` and its name; the failures are kept for the exit status."""

    def __init__(self) -> None:
        self.failures: list[str] = []

    def check(self, condition: bool, what: str) -> bool:
        print(("ok   " if condition else "FAIL ") + what)
        if not condition:
            self.failures.append(what)
        return condition


def finish(checks: Checks, work: Path, keep: bool = False) -> int:
    """The test's exit status: 1 with every failed check listed and WORK kept to look into, else
    0 with WORK removed (unless `keep`)."""
    if checks.failures:
        print(f"\n{len(checks.failures)} check(s) failed (the files are kept in {work}):")
        for failure in checks.failures:
            print(f"  {failure}")
        return 1
    if not keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


# The stand-in's triad in these tests reports a planted bandwidth (its --bandwidth: no triad is
# timed), so no verdict moves with the machine's load: a set of runs timed on a loaded 2-core machine
# scattered so widely that its band held a fault twenty times slower. The set's runs and a healthy
# run read STANDIN_BANDWIDTH; a planted fault (every pass 1900 % longer) a twentieth of it, far
# beyond the triad's 50 % tolerance.
STANDIN_BANDWIDTH = "--bandwidth=4"
FAULT_SLOWDOWN = "--slowdown=1900"


def make_standin_set(hdbench: Path, bin_dir: Path, manifest: Path, work: Path, timeout: float) -> Path:
    """A reference set of the stand-in family's kind, WORK/set/standin: three verdict runs at
    STANDIN_BANDWIDTH, so a run at it PASSes and one at FAULT_SLOWDOWN is beyond the triad's
    tolerance. Measured once each, no figures drawn (WORK/no-plots, an empty HDBENCH_PLOTS_DIR).
    Returns WORK/set, for HDBENCH_REFERENCE_DIR."""
    set_dir = work / "set"
    (work / "no-plots").mkdir(exist_ok=True)
    for i in range(3):
        # One --out for the three: two runs in one second get distinct run ids there (-2), which the
        # set's members must have.
        run_dir_file = work / f"set-run-{i}"
        subprocess.run([str(hdbench), "run", "--verdict", "--confirm=off", "--bin-dir", str(bin_dir), "--manifest",
                        str(manifest), "--out", str(work / "set-runs"), "--run-dir-file", str(run_dir_file),
                        "--", STANDIN_BANDWIDTH],
                       env=dict(os.environ, HDBENCH_PLOTS_DIR=str(work / "no-plots")), capture_output=True, text=True,
                       timeout=timeout, check=True)
        subprocess.run([str(hdbench), "reference", "add", str(set_dir / "standin"), run_dir_file.read_text().strip()],
                       capture_output=True, text=True, timeout=timeout, check=True)
    return set_dir
