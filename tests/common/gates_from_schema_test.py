#!/usr/bin/env python3
"""What gates is the declaration's alone: the same family built twice, from its schema.json and
from a copy whose one gate says "smallest" where the original says "largest" (nothing else
differs, not a line of C++), marks as headlines exactly the cases each declaration selects.

The headline in a case's label (`headline=<metric>`) is what `hdbench collect` writes as
`headline=yes` and what `hdbench compare` gates on (docs/csv-schema.md). Runs each binary once
(--benchmark_repetitions=1) and reads its Google Benchmark JSON.

    gates_from_schema_test.py --original BIN --regated BIN
"""
import argparse
import json
import subprocess
import sys


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


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--original", required=True)
    parser.add_argument("--regated", required=True)
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
    for failure in failures:
        print("FAIL " + failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
