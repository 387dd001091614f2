#!/usr/bin/env python3
"""Every committed reference means what its families declare, and loads alike on any node.

For each results/reference/<kind>/results.csv (schema 3):
- every measured row is walked back to its declaration (bench/<folder>/schema.json, found through
  harness/suite.json): the case kind exists, the metric is one the kind may set (or one of the
  metrics of the family's declared alpha-beta fit), unit and better are the declared ones, a
  headline is a declared headline, the traffic class is one the metric may carry, every parameter
  set is one of the kind's parameters, int parameters are integers, text values are declared;
- `pandas.read_csv(path)` with no options and no warning (mixed types fail) gives the same
  columns and the same dtypes for every reference: one GPU and two load alike;
- the core columns are the plotter's: every column the reference's families do not declare as a
  parameter (split as plots/hdbplots/common.py parameter_columns() splits them) is one of
  hdbplots.common.CORE_COLUMNS, in its order around the parameters, and each of those is there
  (a core column the harness adds without Python knowing it fails here), every `statistic` is one
  of hdbplots.common.STATISTICS; and docs/csv-schema.md's column table lists exactly
  CORE_COLUMNS, with int and float where common.py reads them so, and its `statistic` row names
  exactly STATISTICS.

    python3 reference_test.py --repo ROOT
Exit 0 = all good; 1 = a mismatch (each printed); 2 = bad usage / no references.
"""
from __future__ import annotations

import argparse
import csv
import json
import re
import sys
import warnings
from pathlib import Path

def plot_common(repo: Path):
    """plots/hdbplots/common.py: Python's one list of the core columns and statistics."""
    sys.path.insert(0, str(repo / "plots"))
    from hdbplots import common
    return common


def core_column_problems(path: Path, common) -> list[str]:
    """A reference's header against CORE_COLUMNS, the parameters taken from its declarations."""
    with path.open(newline="", encoding="utf-8") as f:
        reader = csv.reader(f)
        header = next(reader)
        family_at = header.index("family")
        families = list(dict.fromkeys(r[family_at] for r in reader if r[family_at]))
    meta = json.loads((path.parent / "meta.json").read_text(encoding="utf-8"))
    declared, _ = common.family_declarations(meta, families)
    params, notes = common.parameter_columns(header, declared)
    core = [c for c in header if c not in params]
    problems = [f"{path.parent.name}: {note}" for note in notes if "CORE_COLUMNS" in note]
    if core != list(common.CORE_COLUMNS):
        problems.append(f"{path.parent.name}: core columns {core} differ from hdbplots.common.CORE_COLUMNS "
                        f"{list(common.CORE_COLUMNS)}")
    lead, trail = len(common.LEADING_COLUMNS), len(common.TRAILING_COLUMNS)
    if tuple(header[:lead]) != common.LEADING_COLUMNS or tuple(header[len(header) - trail:]) != common.TRAILING_COLUMNS:
        problems.append(f"{path.parent.name}: the parameters do not stand between gpu_uuid and metric: {header}")
    return problems


def docs_problems(repo: Path, common) -> list[str]:
    """docs/csv-schema.md's "Columns" table against CORE_COLUMNS and its types, its statistic row
    against STATISTICS."""
    doc = repo / "docs" / "csv-schema.md"
    text = doc.read_text(encoding="utf-8")
    section = text[text.index("## Columns"):]
    section = section[:section.index("\n## ", 1)]
    rows = re.findall(r"^\|\s*(`[a-z_]+`|\*parameters\*)\s*\|\s*([a-z ]+?)\s*\|(.*)\|\s*$", section, re.M)
    names = [name.strip("`") for name, _, _ in rows]
    problems = []
    core = [n for n in names if n != "*parameters*"]
    if core != list(common.CORE_COLUMNS):
        problems.append(f"{doc.name}: the column table lists {core}, hdbplots.common.CORE_COLUMNS is "
                        f"{list(common.CORE_COLUMNS)}")
    elif names.index("*parameters*") != len(common.LEADING_COLUMNS):
        problems.append(f"{doc.name}: the column table does not put the parameters after gpu_uuid")
    for name, kind, _ in rows:
        name = name.strip("`")
        wanted = ("int" if name in common.INT_CORE_COLUMNS else "float" if name in common.FLOAT_CORE_COLUMNS
                  else "text")
        if name in common.CORE_COLUMNS and kind != wanted:
            problems.append(f"{doc.name}: column {name} is {kind}, hdbplots.common reads it as {wanted}")
    statistic = next((meaning for name, _, meaning in rows if name == "`statistic`"), "")
    named = set(re.findall(r"`([a-z]+)`", statistic))
    if named != set(common.STATISTICS):
        problems.append(f"{doc.name}: the statistic row names {sorted(named)}, hdbplots.common.STATISTICS is "
                        f"{sorted(common.STATISTICS)}")
    return problems


def declarations(repo: Path) -> dict[str, dict]:
    suite = json.loads((repo / "harness" / "suite.json").read_text())
    return {f["name"]: json.loads((repo / f["folder"] / "schema.json").read_text()) for f in suite["families"]}


def row_problems(row: dict[str, str], schemas: dict[str, dict], core: frozenset[str]) -> list[str]:
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
        if column in core or not text:
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
        fit = schema.get("fit", {})
        if fit.get("of") not in kind["metrics"] or row["metric"] not in (fit.get(r) for r in ("beta", "alpha", "n_half")):
            return problems + [f"{where}: fit row, but not one of the metrics of the family's fit of a metric this kind sets"]
        metric = schema["metrics"][row["metric"]]
        expected = (metric["unit"], metric["better"])
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
    common = plot_common(args.repo)
    core = frozenset(common.CORE_COLUMNS)
    failures: list[str] = docs_problems(args.repo, common)
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
            if row["statistic"] and row["statistic"] not in common.STATISTICS:
                problem = f"statistic {row['statistic']!r} is not one of hdbplots.common.STATISTICS"
                if problem not in seen:
                    seen.add(problem)
                    failures.append(f"{path.parent.name}: {problem}")
            for problem in row_problems(row, schemas, core):
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
        failures += core_column_problems(path, common)
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
