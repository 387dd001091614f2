"""What the Python tests share: the Python hdbench draws with, and a list of named checks that
reports every failure, not just the first."""
from __future__ import annotations

import os
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
