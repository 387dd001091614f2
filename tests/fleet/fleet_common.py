"""Shared by the fleet tests: copies of the committed h200 members with their check.json made by
`hdbench check` (never written into results/reference), and the plants of the done-when checks."""
import csv
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from hdb_test_support import plotting_python  # noqa: E402


def run(cmd, expect=None):
    """Runs a command; returns (exit status, stdout, stderr). `expect`: the exit status it must have."""
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if expect is not None and proc.returncode != expect:
        raise SystemExit(f"FAIL: {' '.join(cmd)} exited {proc.returncode}, expected {expect}\n"
                         f"stdout: {proc.stdout[-3000:]}\nstderr: {proc.stderr[-3000:]}")
    return proc.returncode, proc.stdout, proc.stderr


def figures_seen(out):
    """What the fleet figures under `out` show, read by fleet_figures_check.py with the Python that
    drew them (its JSON: each figure's labelled dots, the heatmap's cells); a failed check raises."""
    python = plotting_python()
    if python is None:
        raise SystemExit("FAIL: no Python with matplotlib to draw the fleet figures")
    checker = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fleet_figures_check.py")
    _, stdout, _ = run([python, checker, out], expect=0)
    return json.loads(stdout)


def copy_members(members_dir, dest):
    """Each member's meta.json and results.csv into dest/<run id>/; returns the run dirs in id order."""
    if os.path.exists(dest):
        shutil.rmtree(dest)
    dirs = []
    for run_id in sorted(os.listdir(members_dir)):
        src = os.path.join(members_dir, run_id)
        if not os.path.isfile(os.path.join(src, "meta.json")):
            continue
        out = os.path.join(dest, run_id)
        os.makedirs(out)
        for name in ("meta.json", "results.csv"):
            shutil.copy(os.path.join(src, name), out)
        dirs.append(out)
    return dirs


def write_check_json(hdbench, run_dir, reference=None):
    cmd = [hdbench, "check", run_dir, "--format", "json"]
    if reference:
        cmd += ["--reference", reference]
    status, out, err = run(cmd)
    if status not in (0, 1):
        raise SystemExit(f"FAIL: hdbench check {run_dir} exited {status}: {err}")
    with open(os.path.join(run_dir, "check.json"), "w") as f:
        f.write(out)


def edit_meta(run_dir, edit):
    path = os.path.join(run_dir, "meta.json")
    with open(path) as f:
        meta = json.load(f)
    edit(meta)
    with open(path, "w") as f:
        json.dump(meta, f, indent=1)


def set_hostname(run_dir, hostname):
    def edit(meta):
        meta["node"]["hostname"] = hostname
        meta.setdefault("host", {})["hostname"] = hostname
    edit_meta(run_dir, edit)


def plant_gen4(run_dir, gpu=0):
    """The link read Gen4 while copying: trained below its Gen5 maximum (check's health FAIL)."""
    def edit(meta):
        meta["node"]["gpus"][gpu]["pcie"]["gen_current"] = 4.0
    edit_meta(run_dir, edit)


def plant_slow_pinned(run_dir, factor=0.95):
    """Every pinned copy bandwidth (medians and repetitions, h2d, d2h and both ways) x factor."""
    path = os.path.join(run_dir, "results.csv")
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
        fields = list(rows[0].keys())
    changed = 0
    for row in rows:
        if (row["family"] == "copy" and row["host_kind"] == "pinned" and row["metric"].startswith("bandwidth")
                and row["status"] == "ok" and row["value"] not in ("", None)):
            row["value"] = repr(float(row["value"]) * factor)
            changed += 1
    if changed == 0:
        raise SystemExit(f"FAIL: no pinned copy rows to plant in {path}")
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
