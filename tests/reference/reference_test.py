#!/usr/bin/env python3
"""Every committed reference means what its families declare, and loads alike on any node.

For each results/reference/<kind>/results.csv (schema 3):
- every measured row is walked back to its declaration (bench/<folder>/schema.json, found through
  harness/suite.json): the case kind exists, the metric is one the kind may set (or one of the
  alpha-beta fit rows of the family's fit_metric), unit and better are the declared ones, a
  headline is a declared headline, the traffic class is one the metric may carry, every parameter
  set is one of the kind's parameters, int parameters are integers, text values are declared;
- `pandas.read_csv(path)` with no options and no warning (mixed types fail) gives the same
  columns and the same dtypes for every reference: one GPU and two load alike.

    python3 reference_test.py --repo ROOT
Exit 0 = all good; 1 = a mismatch (each printed); 2 = bad usage / no references.
"""
from __future__ import annotations

import argparse
import csv
import json
import sys
import warnings
from pathlib import Path

CORE = {"schema_version", "run_id", "family", "case", "device", "gpus", "gpu_uuid", "metric", "unit",
        "better", "headline", "traffic", "statistic", "sample_index", "value", "status", "reason"}
# collect's alpha-beta fit of the family's fit_metric (docs/csv-schema.md)
FIT_METRICS = {"fit_latency": ("us", "lower"), "fit_bandwidth": ("GB/s", "higher"), "fit_n_half": ("B", "lower")}


def declarations(repo: Path) -> dict[str, dict]:
    suite = json.loads((repo / "harness" / "suite.json").read_text())
    return {f["name"]: json.loads((repo / f["folder"] / "schema.json").read_text()) for f in suite["families"]}


def row_problems(row: dict[str, str], schemas: dict[str, dict]) -> list[str]:
    where = f"{row['family']}/{row['case']} {row['metric'] or '(no metric)'}"
    schema = schemas.get(row["family"])
    if schema is None:
        return [f"{where}: family not in harness/suite.json"]
    if not row["case"]:
        return [] if row["status"] == "failed" else [f"{where}: a row without a case that is not a failed family"]
    kind = schema["cases"].get(row["case"])
    if kind is None:
        return [f"{where}: case kind not declared"]
    problems = []
    params = schema["parameters"]
    for column, text in row.items():
        if column in CORE or not text:
            continue
        if column not in kind["parameters"]:
            problems.append(f"{where}: parameter {column}={text} is not one of the kind's {kind['parameters']}")
            continue
        decl = params[column]
        if decl["type"] == "int" and not text.lstrip("-").isdigit():
            problems.append(f"{where}: int parameter {column}={text!r}")
        if decl["type"] == "text" and "values" in decl and text not in decl["values"]:
            problems.append(f"{where}: {column}={text!r} is not a declared value")
    if row["status"] != "ok":
        return problems + ([f"{where}: a {row['status']} row carries a value"] if row["value"] else [])
    if row["statistic"] == "fit":
        expected = FIT_METRICS.get(row["metric"])
        if expected is None or schema.get("fit_metric") not in kind["metrics"]:
            return problems + [f"{where}: fit row, but the kind does not set the family's fit_metric"]
    else:
        if row["metric"] not in kind["metrics"]:
            return problems + [f"{where}: the case kind never sets this metric (declares {kind['metrics']})"]
        metric = schema["metrics"][row["metric"]]
        expected = (metric["unit"], metric["better"])
        if row["traffic"] and row["traffic"] not in metric.get("traffic", []):
            problems.append(f"{where}: traffic {row['traffic']} is not one the metric may carry")
        if row["headline"] == "yes" and row["metric"] not in kind.get("headlines", []):
            problems.append(f"{where}: a headline the kind does not declare")
    if (row["unit"], row["better"]) != expected:
        problems.append(f"{where}: unit/better {row['unit']}/{row['better']}, declared {expected[0]}/{expected[1]}")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, required=True)
    args = parser.parse_args(argv)
    csvs = sorted((args.repo / "results" / "reference").glob("*/results.csv"))
    if not csvs:
        print("reference_test: no results/reference/*/results.csv", file=sys.stderr)
        return 2
    try:
        import pandas
    except ImportError as missing:
        print(f"reference_test: {missing}: the dtype check needs pandas (apt install python3-pandas)", file=sys.stderr)
        return 1
    schemas = declarations(args.repo)
    failures: list[str] = []
    dtypes: dict[str, dict[str, str]] = {}
    for path in csvs:
        with path.open(newline="") as f:
            # `-` is the writer's not-applicable token in text fields (docs/csv-schema.md)
            rows = [{k: ("" if v == "-" else v) for k, v in r.items()} for r in csv.DictReader(f)]
        seen: set[str] = set()
        for row in rows:
            if row["schema_version"] != "3":
                failures.append(f"{path}: schema_version {row['schema_version']}")
                break
            for problem in row_problems(row, schemas):
                if problem not in seen:
                    seen.add(problem)
                    failures.append(f"{path.parent.name}: {problem}")
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            try:
                frame = pandas.read_csv(path)
            except Exception as e:  # a DtypeWarning (mixed types) is an error here
                failures.append(f"{path}: pandas.read_csv: {e}")
                continue
        dtypes[path.parent.name] = {c: str(t) for c, t in frame.dtypes.items()}
        print(f"{path.parent.name}: {len(rows)} rows walked to their declarations; {len(frame.columns)} columns")
    names = list(dtypes)
    for other in names[1:]:
        first = names[0]
        if list(dtypes[first]) != list(dtypes[other]):
            failures.append(f"columns differ: {first} {list(dtypes[first])} vs {other} {list(dtypes[other])}")
        for column in set(dtypes[first]) & set(dtypes[other]):
            if dtypes[first][column] != dtypes[other][column]:
                failures.append(f"column {column}: {dtypes[first][column]} in {first}, {dtypes[other][column]} in {other}")
    for failure in failures:
        print(f"FAIL {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
