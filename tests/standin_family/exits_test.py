#!/usr/bin/env python3
"""Every exit a user acts on, on the real entry points, with the stand-in family (issue 46, item 1).

    exits_test.py --entry hdbench|run_all --hdbench BIN/hdbench --bin-dir DIR --family-dir tests/standin_family
                  --run-all run_all.sh --workdir WORK

The stand-in reports a planted bandwidth (--bandwidth) instead of measuring one, so every verdict
below is exact on a loaded machine: 20 GB/s is 190 % of its traffic class's peak (PASS), 2 GB/s
19 % (FAIL below 50 %); check grades against peaks (HDBENCH_REFERENCE_DIR holds no set). Five
runs, as real runs end: healthy, a FAIL on every try (the planted bandwidth applies to every
invocation), a family that crashes in the case check's own check grades (--plant=crash, SIGABRT),
one that hangs there until the harness's timeout (--plant=hang, --timeout-scale), one whose
strided 4-lane cases fail (--plant=failed_cases).

--entry hdbench: `hdbench run` (exit status and its "families ok" line), `hdbench check` (exit
status and its summary line, the crashed family's and failed cases' FAIL lines), `hdbench compare`
against the healthy run (SAME exit 0; the FAIL run SLOWER exit 1; the crashed, timed-out and
failed-cases runs MISSING the headlines they lost, exit 1; a run asked for other sizes exit 0 with
them only in the baseline) and `hdbench fleet` (the healthy runs exit 0; with the others, exit 1
naming each failing node).
--entry run_all: `./run_all.sh` itself, from a directory shaped like a checkout (its script linked
in, build/ci/bin/hdbench the real one), a fake nvidia-smi that lists the stand-in's two GPUs and a
fake cmake (its build is the test command's job): exit 0 healthy, 1 for each of the four others,
with the lines it prints. Both parts run nvidia-smi's fake, as a GPU node has one.

Exit 0 = all passed, 1 = a check failed (each failure is printed).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
from hdb_test_support import Checks, finish  # noqa: E402

HANG_GUARD = 240  # any one command: a hang guard, never a measurement
TIMEOUT_SCALE = "0.1"  # the stand-in's 120 s family timeout: 12 s, past any loaded run of its 11 cases before the hang
CHECKED = "strided triad 4 MiB, 8 lanes"  # schema.json's check, the case the crash and hang are planted in
HEADLINE_STRIDED_8 = "standin triad [device=0 gpus=2 access=strided lanes=8 size_bytes=4194304] triad_bandwidth"

# name -> what `hdbench run` is given after `--`, and the flags before it.
SCENARIOS = {
    "healthy": ([], ["--standin.bandwidth=20"]),
    "fail": (["--confirm=1,1"], ["--standin.bandwidth=2"]),  # confirmed as a node's run is, short pauses
    "crash": ([], ["--standin.bandwidth=20", "--standin.plant=crash"]),
    "hang": (["--timeout-scale", TIMEOUT_SCALE], ["--standin.bandwidth=20", "--standin.plant=hang"]),
    "failed_cases": ([], ["--standin.bandwidth=20", "--standin.plant=failed_cases"]),
}
FAMILIES_OK = {"healthy": "1 of 1 families ok", "fail": "1 of 1 families ok", "crash": "0 of 1 families ok",
               "hang": "0 of 1 families ok", "failed_cases": "0 of 1 families ok"}
RUN_LINE = {"crash": r"\[standin\] crashed \(signal 6, SIGABRT\) after 11 cases",
            "hang": r"\[standin\] timed out after 12 s, killed",
            "failed_cases": r"\[standin\] exited with code 1 after 12 cases"}


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entry", choices=("hdbench", "run_all"), required=True)
    parser.add_argument("--hdbench", type=Path, required=True)
    parser.add_argument("--bin-dir", type=Path, required=True)
    parser.add_argument("--family-dir", type=Path, required=True)
    parser.add_argument("--run-all", type=Path, required=True)
    parser.add_argument("--workdir", type=Path, required=True)
    return parser.parse_args()


def write_tool(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(0o755)


def fake_tools(work: Path) -> Path:
    """nvidia-smi as on a node of the stand-in's two GPUs (idle, no replays, no NVLink), and a
    cmake that only records how run_all.sh called it."""
    tools = work / "tools"
    tools.mkdir()
    write_tool(tools / "nvidia-smi", """#!/bin/sh
case "$1" in
  -L) echo 'GPU 0: Stand-in GPU (UUID: GPU-standin-0)'; echo 'GPU 1: Stand-in GPU (UUID: GPU-standin-1)' ;;
  --query-compute-apps=*) ;;
  --query-gpu=*) echo '0, GPU-standin-0, 1980, 1980, 2619, 0x0000000000000001, 40, 90.00'
                 echo '1, GPU-standin-1, 1980, 1980, 2619, 0x0000000000000001, 40, 90.00' ;;
  -q) for g in 0 1; do
        printf 'GPU 00000000:%s:00.0\\n    GPU UUID : GPU-standin-%s\\n    PCI\\n' "$g$g" "$g"
        printf '        Replays Since Reset : 0\\n        Replay Number Rollovers : 0\\n'
      done ;;
  nvlink) ;;
  *) exit 6 ;;
esac
""")
    write_tool(tools / "cmake", f"""#!/bin/sh
echo "$*" >> '{work}/cmake-calls'
""")
    return tools


def environment(args: argparse.Namespace, work: Path, tools: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{tools}:{env.get('PATH', '/usr/bin:/bin')}"
    env["HDBENCH_PLOTS_DIR"] = str(work / "no-plots")  # no figures: not what these exits are about
    env["HDBENCH_REFERENCE_DIR"] = str(work / "no-sets")  # peaks only, whatever sets this checkout holds
    env["HDBENCH_PROC"] = str(work / "no-proc")  # no other process on the stand-in GPUs, whatever runs here
    return env


def run(command: list[str], env: dict[str, str], cwd: Path | None = None) -> subprocess.CompletedProcess:
    result = subprocess.run(command, capture_output=True, text=True, env=env, cwd=cwd, timeout=HANG_GUARD)
    print(f"$ {' '.join(command)}  -> exit {result.returncode}")
    for line in (result.stdout + result.stderr).splitlines()[-25:]:
        print(f"    {line}")
    return result


def run_flags(args: argparse.Namespace, name: str, out: Path) -> list[str]:
    before, after = SCENARIOS[name]
    return ["--manifest", str(args.family_dir / "suite.json"), "--bin-dir", str(args.bin_dir), "--out", str(out),
            *before, "--", *after]


def summary_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.startswith("hdbench check: ")]
    return lines[-1] if lines else ""


def check_run(checks: Checks, name: str, result: subprocess.CompletedProcess) -> None:
    """`hdbench run`'s status and the line its user reads."""
    out = result.stdout + result.stderr
    expected = 0 if name in ("healthy", "fail") else 1
    checks.check(result.returncode == expected, f"{name}: hdbench run exits {expected} (got {result.returncode})")
    checks.check(f"hdbench: {FAMILIES_OK[name]}." in out, f"{name}: hdbench run says '{FAMILIES_OK[name]}'")
    if name in RUN_LINE:
        checks.check(re.search(RUN_LINE[name], out) is not None, f"{name}: its log says /{RUN_LINE[name]}/")


def check_verdict(checks: Checks, name: str, run_dir: Path, env: dict[str, str], hdbench: Path) -> None:
    """`hdbench check`'s status, its summary and the FAIL lines of a family or case that failed."""
    result = run([str(hdbench), "check", str(run_dir), "--no-files"], env)
    expected = 0 if name == "healthy" else 1
    summary = summary_line(result.stdout)
    checks.check(result.returncode == expected, f"{name}: hdbench check exits {expected} (got {result.returncode})")
    word = "PASS" if name == "healthy" else "FAIL"
    checks.check(re.match(rf"hdbench check: {re.escape(run_dir.name)} {word} — .* against peaks only", summary) is not None,
                 f"{name}: its summary says {word}: {summary!r}")
    fails = [line for line in result.stdout.splitlines() if line.startswith("FAIL ")]
    if name == "fail":
        checks.check(any(CHECKED in line for line in fails) and all("% of 31.5 GB/s" in line for line in fails),
                     f"fail: the checked figure FAILs against its peak, as every FAIL line ({len(fails)})")
    elif name in ("crash", "hang"):
        checks.check(any("standin  family" in line and "the family failed: " + ("crashed" if name == "crash" else "timed out") in line
                         for line in fails), f"{name}: a FAIL line says the family failed")
    elif name == "failed_cases":
        failed = [line for line in fails if "the case failed: planted failure of the strided 4-lane cases" in line]
        checks.check(len(failed) == 3, f"failed_cases: a FAIL line for each of the 3 failed cases ({len(failed)})")


def check_compare(checks: Checks, runs: dict[str, Path], other_sizes: Path, env: dict[str, str], hdbench: Path) -> None:
    base = runs["healthy"]
    same = run([str(hdbench), "compare", str(base), str(runs["healthy-2"])], env)
    checks.check(same.returncode == 0 and same.stdout.rstrip().endswith("; no regression"),
                 "compare healthy with healthy: exit 0, no regression")
    slower = run([str(hdbench), "compare", str(base), str(runs["fail"])], env)
    checks.check(slower.returncode == 1 and slower.stdout.rstrip().endswith("4 slower, 0 faster, 0 same (headline metrics); REGRESSION"),
                 "compare healthy with the FAIL run: exit 1, 4 SLOWER, REGRESSION")
    for name, lost in (("crash", 1), ("hang", 1), ("failed_cases", 1)):
        result = run([str(hdbench), "compare", str(base), str(runs[name])], env)
        missing = [line for line in result.stdout.splitlines() if line.startswith("MISSING  ")]
        checks.check(result.returncode == 1, f"compare healthy with {name}: exit 1 (got {result.returncode})")
        checks.check(len(missing) == lost and result.stdout.rstrip().endswith(
            f"{lost} MISSING (failed in the current run); HEADLINES MISSING"), f"{name}: {lost} headline MISSING, named")
        lost_case = HEADLINE_STRIDED_8 if name != "failed_cases" else HEADLINE_STRIDED_8.replace("lanes=8", "lanes=4")
        checks.check(any(line.startswith(f"MISSING  {lost_case} (current run: failed: ") for line in missing),
                     f"{name}: the lost headline is {lost_case}, with the current run's reason")
        junit = run([str(hdbench), "compare", "--format", "junit", str(base), str(runs[name])], env)
        checks.check(junit.returncode == 1 and f'failures="{lost}"' in junit.stdout and "MISSING: failed in the current run" in junit.stdout,
                     f"{name}: JUnit counts the MISSING headline as a failure")
        doc = run([str(hdbench), "compare", "--format", "json", str(base), str(runs[name])], env)
        parsed = json.loads(doc.stdout) if doc.stdout.strip() else {}
        checks.check(doc.returncode == 1 and parsed.get("exit_code") == 1 and len(parsed.get("missing", [])) == lost,
                     f"{name}: JSON's missing list and exit_code")
    asked = run([str(hdbench), "compare", str(base), str(other_sizes)], env)
    checks.check(asked.returncode == 0 and "only in baseline (4):" in asked.stdout and "MISSING" not in asked.stdout,
                 "compare healthy with a run asked for other sizes: exit 0, the 4 headlines only in the baseline, none MISSING")


def check_fleet(checks: Checks, runs: dict[str, Path], work: Path, env: dict[str, str], hdbench: Path) -> None:
    healthy = [runs[n] for n in ("healthy", "healthy-2", "healthy-3")]
    ok = run([str(hdbench), "fleet", *map(str, healthy), "--no-plots", "--out", str(work / "fleet-ok")], env)
    checks.check(ok.returncode == 0, f"fleet of the three healthy runs: exit 0 (got {ok.returncode})")
    failing = [runs[n] for n in ("fail", "crash", "hang", "failed_cases")]
    bad = run([str(hdbench), "fleet", *map(str, healthy + failing), "--no-plots", "--out", str(work / "fleet-bad"),
               "--format", "json"], env)
    report = json.loads(bad.stdout) if bad.stdout.strip() else {}
    failing_nodes = {Path(node.get("dir", "")).resolve() for node in report.get("nodes", []) if node.get("grade") == "FAIL"}
    checks.check(bad.returncode == 1, f"fleet with the four failing runs: exit 1 (got {bad.returncode})")
    checks.check(failing_nodes == {p.resolve() for p in failing},
                 f"fleet grades exactly the four failing runs FAIL ({sorted(map(str, failing_nodes))})")
    summary = report.get("summary", {}).get("line", "")
    checks.check(summary.startswith("hdbench fleet: FAIL — 4 of 7 nodes FAIL"), f"its summary line: {summary!r}")


def hdbench_entry(args: argparse.Namespace, work: Path, env: dict[str, str]) -> Checks:
    checks = Checks()
    runs: dict[str, Path] = {}
    for name in (*SCENARIOS, "healthy-2", "healthy-3", "other-sizes"):
        scenario = name if name in SCENARIOS else "healthy"
        flags = run_flags(args, scenario, work / "runs" / name)
        if name == "other-sizes":
            flags.append("--standin.sizes=64K,512K")
        run_dir_file = work / f"{name}.run-dir"
        result = run([str(args.hdbench), "run", "--run-dir-file", str(run_dir_file), *flags], env)
        if name in SCENARIOS:
            check_run(checks, name, result)
        if checks.check(run_dir_file.is_file(), f"{name}: hdbench run named its run directory"):
            runs[name] = Path(run_dir_file.read_text().strip())
    for name in SCENARIOS:
        if name in runs:
            check_verdict(checks, name, runs[name], env, args.hdbench)
    if len(runs) == len(SCENARIOS) + 3:
        check_compare(checks, runs, runs["other-sizes"], env, args.hdbench)
        check_fleet(checks, runs, work, env, args.hdbench)
    return checks


def checkout(args: argparse.Namespace, work: Path) -> Path:
    """A directory shaped like a built checkout: run_all.sh linked in (it cds to its own
    directory), build/ci configured (a CMakeCache.txt) with the real hdbench in its bin/."""
    root = work / "checkout"
    (root / "build" / "ci" / "bin").mkdir(parents=True)
    (root / "run_all.sh").symlink_to(args.run_all.resolve())
    (root / "build" / "ci" / "CMakeCache.txt").touch()
    (root / "build" / "ci" / "bin" / "hdbench").symlink_to(args.hdbench.resolve())
    return root


def run_all_entry(args: argparse.Namespace, work: Path, env: dict[str, str]) -> Checks:
    checks = Checks()
    root = checkout(args, work)
    env = dict(env, HDBENCH_PRESET="ci")
    for name in SCENARIOS:
        out = work / "runs" / name
        result = run(["./run_all.sh", *run_flags(args, name, out)], env, cwd=root)
        expected = 0 if name == "healthy" else 1
        checks.check(result.returncode == expected, f"{name}: ./run_all.sh exits {expected} (got {result.returncode})")
        runs = [p for p in out.iterdir() if p.is_dir()] if out.is_dir() else []
        if not checks.check(len(runs) == 1, f"{name}: one run directory under {out}"):
            continue
        summary = summary_line(result.stderr)
        word = "PASS" if name == "healthy" else "FAIL"
        checks.check(summary.startswith(f"hdbench check: {runs[0].name} {word} — "), f"{name}: it prints check's summary, {word}")
        checks.check(f"run_all.sh: every check line in {runs[0]}/check.txt" in result.stderr,
                     f"{name}: it says where every check line is")
        checks.check(f"hdbench: {FAMILIES_OK[name]}." in result.stdout + result.stderr,
                     f"{name}: hdbench run's line '{FAMILIES_OK[name]}' reaches the user")
        fails = [line for line in result.stderr.splitlines() if line.startswith("FAIL ")]
        checks.check((name == "healthy") == (not fails), f"{name}: it prints check's FAIL lines ({len(fails)})")
        if name == "fail":  # graded against peaks (no set): measured three times before it stands
            checks.check(all("confirmed: failed on every try (2 GB/s, 2 GB/s, 2 GB/s)" in line for line in fails),
                         "fail: each FAIL line was confirmed on every try")
    calls = (work / "cmake-calls").read_text().splitlines() if (work / "cmake-calls").is_file() else []
    checks.check(bool(calls) and set(calls) == {"--build --preset ci --parallel --target hdbench_suite"},
                 f"it built the run's targets with the preset HDBENCH_PRESET names, and configured nothing ({sorted(set(calls))})")
    # Both ways a node shows no GPU, whatever this machine has: a driver whose nvidia-smi lists
    # none, and no nvidia-smi at all (a PATH of only what run_all.sh needs before it looks).
    lists_none, bare = work / "lists-no-gpu", work / "no-nvidia-smi"
    lists_none.mkdir()
    write_tool(lists_none / "nvidia-smi", "#!/bin/sh\necho 'No devices were found'\nexit 6\n")
    bare.mkdir()
    for tool in ("bash", "dirname"):
        (bare / tool).symlink_to(shutil.which(tool))
    for name, path in (("nvidia-smi lists none", f"{lists_none}:/usr/bin:/bin"), ("without nvidia-smi", str(bare))):
        no_gpu = run(["./run_all.sh"], dict(env, PATH=path), cwd=root)
        checks.check(no_gpu.returncode == 2 and no_gpu.stderr.strip().splitlines() ==
                     ["run_all.sh: no NVIDIA GPU found (nvidia-smi lists none); hdbench measures a GPU node and needs one"],
                     f"{name}: exit 2, one line saying there is no GPU (got {no_gpu.returncode}: {no_gpu.stderr.strip()!r})")
    return checks


def main() -> int:
    args = parse_args()
    # run_all.sh runs in a directory of its own: every path it is given absolute.
    args.hdbench, args.bin_dir, args.family_dir, args.run_all = (
        p.resolve() for p in (args.hdbench, args.bin_dir, args.family_dir, args.run_all))
    work = args.workdir.resolve()
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    for empty in ("no-plots", "no-sets"):
        (work / empty).mkdir()
    env = environment(args, work, fake_tools(work))
    checks = hdbench_entry(args, work, env) if args.entry == "hdbench" else run_all_entry(args, work, env)
    return finish(checks, work)


if __name__ == "__main__":
    sys.exit(main())
