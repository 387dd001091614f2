#!/usr/bin/env python3
"""What gates is the declaration's alone: the same family built twice, from its schema.json and
from a copy whose one gate says "smallest" where the original says "largest" (nothing else
differs, not a line of C++), marks as headlines exactly the cases each declaration selects.

Two steps. The binaries: each runs once (--benchmark_repetitions=1) and its Google Benchmark JSON
says which cases carry `headline=<metric>` in their label. What the user sees: each build is
installed as a family is (its binary, its schema.json under schema/, the stand-in probe), run with
`hdbench run`, and `hdbench compare RUN RUN --format json` lists the rows it gates; they must be
the cases of the size the declaration selects.

    gates_from_schema_test.py --original BIN --regated BIN --regated-schema FILE \
        --hdbench HDBENCH --bin-dir DIR --manifest suite.json --plot-modules DIR --workdir DIR
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path


def headline_sizes(binary: str) -> tuple[set[int], set[int]]:
    """(sizes of the cases that gate, sizes of every case), from the binary's JSON output."""
    out = subprocess.run([binary, "--benchmark_format=json", "--benchmark_repetitions=1"], capture_output=True,
                         text=True, check=True).stdout
    gating, every = set(), set()
    for entry in json.loads(out)["benchmarks"]:
        fields = dict(part.split("=", 1) for part in entry.get("label", "").split(";") if "=" in part)
        if "size_bytes" not in fields:
            continue
        size = int(fields["size_bytes"])
        every.add(size)
        if fields.get("headline"):
            gating.add(size)
    return gating, every


def install(work: Path, binary: str, schema: Path, bin_dir: Path) -> Path:
    """A bin directory as an installed family has it: the binary under its manifest name, its
    declaration under schema/, and the stand-in probe of `bin_dir`."""
    (work / "schema").mkdir(parents=True)
    (work / "hdbench-standin").symlink_to(Path(binary).resolve())
    (work / "hdbench-probe").symlink_to((bin_dir / "hdbench-probe").resolve())
    shutil.copy(schema, work / "schema" / "standin.json")
    return work


def compare_gated_sizes(args: argparse.Namespace, name: str, binary: str, schema: Path) -> set[int]:
    """The sizes of the rows `hdbench compare` gates in a run of `binary` installed with `schema`."""
    work = args.workdir / name
    if work.exists():
        shutil.rmtree(work)  # an earlier run's directories
    bin_dir = install(work / "bin", binary, schema, args.bin_dir)
    env = dict(os.environ, HDBENCH_PLOT_MODULES=str(args.plot_modules), MPLBACKEND="Agg")
    hdbench = str(args.hdbench)
    # --confirm=off: what gates is asked here, not whether the stand-in's slow strided figures FAIL.
    subprocess.run([hdbench, "run", "--manifest", str(args.manifest), "--bin-dir", str(bin_dir),
                    "--out", str(work / "out"), "--confirm=off"], env=env, check=True, capture_output=True, timeout=240)
    (run,) = [p for p in (work / "out").iterdir() if p.is_dir()]
    compared = subprocess.run([hdbench, "compare", str(run), str(run), "--format", "json"], env=env,
                              capture_output=True, text=True, timeout=60)
    if compared.returncode != 0:
        raise SystemExit(f"FAIL {name}: compare of a run with itself exited {compared.returncode}: {compared.stderr}")
    return {int(row["parameters"]["size_bytes"]) for row in json.loads(compared.stdout)["rows"]}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--original", required=True)
    parser.add_argument("--regated", required=True)
    parser.add_argument("--regated-schema", type=Path, required=True, help="the regated build's schema.json")
    parser.add_argument("--hdbench", type=Path, required=True)
    parser.add_argument("--bin-dir", type=Path, required=True, help="the original's installed bin directory")
    parser.add_argument("--manifest", type=Path, required=True, help="tests/standin_family/suite.json")
    parser.add_argument("--plot-modules", type=Path, required=True, help="the stand-in's plot module directory")
    parser.add_argument("--workdir", type=Path, required=True)
    args = parser.parse_args()
    original, sizes = headline_sizes(args.original)
    regated, regated_sizes = headline_sizes(args.regated)
    print(f"sizes {sorted(sizes)}; gating: original {sorted(original)}, regated {sorted(regated)}")
    failures = []
    if len(sizes) < 2 or sizes != regated_sizes:
        failures.append("the two builds must register the same cases, of at least two sizes")
    if original != {max(sizes)}:
        failures.append(f"the original declaration gates the largest size only, not {sorted(original)}")
    if regated != {min(sizes)}:
        failures.append(f"the regated declaration gates the smallest size only, not {sorted(regated)}")
    compare_original = compare_gated_sizes(args, "original", args.original, args.bin_dir / "schema" / "standin.json")
    compare_regated = compare_gated_sizes(args, "regated", args.regated, args.regated_schema)
    print(f"hdbench compare gates: original {sorted(compare_original)}, regated {sorted(compare_regated)}")
    if compare_original != {max(sizes)}:
        failures.append(f"compare gates the original's largest size only, not {sorted(compare_original)}")
    if compare_regated != {min(sizes)}:
        failures.append(f"compare gates the regated build's smallest size only, not {sorted(compare_regated)}")
    for failure in failures:
        print("FAIL " + failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
