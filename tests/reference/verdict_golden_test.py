#!/usr/bin/env python3
"""The verdicts on the committed runs do not move unless a change means them to.

For every committed run with a results.csv under results/reference/ (each set's runs, its
holdouts, the sets themselves) this runs `hdbench check DIR` (text and json) and `hdbench compare
SET DIR` (text and json) against its kind's set, and `compare` between runs of the h200 set with
and without a noise model (headlines: what decides the exit), and holds every output against the one kept under golden/. A change
that refactors the verdict must leave them as they are; a change that means to move a verdict
rewrites them with --update and shows the difference in its diff.

A run's own check.txt must have been graded against what check grades it against now (the same
set, or peaks only).

Text must match to the letter, but for the checkout's own path (compare names the noise model it
found by its absolute path), written <repo>; json numbers to 1e-9 relative (another libm may move
the last bit).
Standard library only; run from anywhere (it runs hdbench from the repository root, whose
relative paths the outputs name).
"""
import argparse
import difflib
import json
import math
import subprocess
import sys
from pathlib import Path


def run_outputs(repo: Path) -> dict[str, list[str]]:
    """name of the golden file -> hdbench's arguments."""
    reference = repo / "results" / "reference"
    outputs: dict[str, list[str]] = {}
    for csv in sorted(reference.rglob("results.csv")):
        run = csv.parent.relative_to(repo)
        kind = run.relative_to("results/reference").parts[0]
        name = str(run.relative_to("results/reference")).replace("/", "__")
        for fmt in ("text", "json"):
            outputs[f"{name}.check.{fmt}"] = ["check", str(run), "--no-files", "--format", fmt]
            outputs[f"{name}.compare.{fmt}"] = ["compare", f"results/reference/{kind}", str(run), "--format", fmt]
    runs = sorted(p.relative_to(repo) for p in (reference / "h200" / "runs").iterdir())
    # Named, not the first or last of the folder: a new holdout must add its own outputs, not move these.
    holdout = Path("results/reference/h200/holdout")
    pairs = {
        "pair-one-baseline": [str(runs[0]), str(holdout / "20261204T214031Z-vm-boot-second")],
        "pair-three-baselines": [*map(str, runs[:3]), str(holdout / "20261204T034418Z-vm-verdict")],
        "pair-cotenant": [str(runs[1]), str(holdout / "20261204T212043Z-vm-cotenant-whole-run")],
    }
    for name, dirs in pairs.items():
        for model in ("auto", "none"):
            outputs[f"{name}-{model}.compare.text"] = ["compare", *dirs, "--noise-model", model]
    return outputs


def graded_against(check_text: str) -> str:
    """What a check was graded against: its reference line up to the rule ("reference: set h200
    (results/reference/h200, 12 runs)"), or the note that there was no set."""
    for line in check_text.splitlines():
        if line.startswith("reference: ") or line.startswith("note: no reference set"):
            return line.split(";", 1)[0]
    return "(no reference line)"


def same_json(a, b) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        if not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
            return False
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_json(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b))
    return a == b


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hdbench", required=True)
    parser.add_argument("--repo", type=Path, required=True)
    parser.add_argument("--update", action="store_true", help="rewrite golden/ from this hdbench")
    args = parser.parse_args()
    golden = Path(__file__).resolve().parent / "golden"
    repo = args.repo.resolve()
    outputs = run_outputs(repo)
    if args.update:
        golden.mkdir(exist_ok=True)
        for old in golden.iterdir():
            old.unlink()
    failures = 0
    for name, argv in outputs.items():
        done = subprocess.run([args.hdbench, *argv], cwd=repo, capture_output=True, text=True, timeout=60)
        if done.returncode not in (0, 1):
            print(f"FAIL {name}: hdbench {' '.join(argv)} exited {done.returncode}: {done.stderr.strip()}")
            failures += 1
            continue
        stdout = done.stdout.replace(str(repo), "<repo>")
        got = f"exit {done.returncode}\n{stdout}"
        path = golden / name
        if args.update:
            path.write_text(got)
            continue
        if not path.is_file():
            print(f"FAIL {name}: no golden file {path} (run with --update and commit it)")
            failures += 1
            continue
        want = path.read_text()
        # The check.txt a run keeps is the verdict its machine printed: one made later against
        # another set, or peaks only, would stand in the evidence for what the machine said.
        kept = repo / argv[1] / "check.txt"
        if name.endswith(".check.text") and kept.is_file() and graded_against(kept.read_text()) != graded_against(stdout):
            failures += 1
            print(f"FAIL {name}: {kept.relative_to(repo)} was graded {graded_against(kept.read_text())!r}, check now "
                  f"{graded_against(stdout)!r}: write it again with `hdbench check {argv[1]}` (and check "
                  f"elsewhere with --no-files)")
        if name.endswith(".json"):
            want_exit, want_body = want.split("\n", 1)
            same = want_exit == f"exit {done.returncode}" and same_json(json.loads(want_body), json.loads(stdout))
        else:
            same = want == got
        if not same:
            failures += 1
            print(f"FAIL {name}: hdbench {' '.join(argv)} differs from golden/{name}:")
            sys.stdout.writelines(list(difflib.unified_diff(want.splitlines(True), got.splitlines(True),
                                                            "golden", "now", n=1))[:40])
    if args.update:
        extra = sorted(p.name for p in golden.iterdir() if p.name not in outputs)
        print(f"wrote {len(outputs)} golden outputs to {golden}" + (f"; stray: {extra}" if extra else ""))
        return 0
    stray = sorted(p.name for p in golden.iterdir() if p.name not in outputs)
    for name in stray:
        print(f"FAIL golden/{name}: no committed run makes it any more (run with --update)")
    failures += len(stray)
    print(f"{len(outputs)} outputs, {failures} differing from golden/")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
