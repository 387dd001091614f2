#!/usr/bin/env python3
"""Every committed reference means what its families declare, and loads alike on any node.

For each results/reference/<kind>/results.csv (schema 3):
- every measured row is walked back to its declaration (bench/<folder>/schema.json, found through
  harness/suite.json): the case kind exists, the metric is one the kind may set (or one of the
  metrics of the family's declared alpha-beta fit), unit and better are the declared ones, a
  headline is a metric a gate of its kind names, the traffic class is one the metric may carry,
  every parameter set is one of the kind's parameters, int parameters are integers, text values
  are declared;
- `pandas.read_csv(path)` with no options and no warning (mixed types fail) gives the same
  core columns and one dtype per shared column for every reference: one GPU and two load alike
  (a parameter column a reference lacks belongs to a family or case it did not run);
- the core columns are the harness's (`hdbench schema-doc --json`, the list its CSV writer uses
  and meta.json records as results_csv): every column the reference's families do not declare as
  a parameter (split as plots/hdbplots/results_csv.py parameter_columns() splits them) is one of them,
  in their order around the parameters, and each of them is there, every `statistic` is one the
  harness lists; and docs/csv-schema.md's column table lists exactly those columns, with the
  harness's types, and its `statistic` row names exactly its statistics.

    python3 reference_test.py --repo ROOT --hdbench BIN/hdbench
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

def plots_reader(repo: Path):
    """The plots' reading of results.csv: hdbplots.declarations (family_declarations) and
    hdbplots.results_csv (CoreColumns, parameter_columns, which splits by those declarations)."""
    sys.path.insert(0, str(repo / "plots"))
    from hdbplots import declarations, results_csv
    return declarations, results_csv


def harness_columns(repo: Path, hdbench: Path, results_csv):
    """The harness's core columns and statistics (`hdbench schema-doc --json`) as the plots read them,
    and the core columns added within schema 3, which an older file lacks."""
    sys.path.insert(0, str(repo / "tests" / "plots"))
    from make_fixtures import harness_record
    record = harness_record(hdbench)
    return results_csv.CoreColumns.from_record(record), set(record.get("later_columns", []))


def core_column_problems(path: Path, plot_declarations, results_csv, columns, later_columns: set[str]) -> list[str]:
    """A reference's header against the harness's core columns, the parameters taken from its declarations."""
    with path.open(newline="", encoding="utf-8") as f:
        reader = csv.reader(f)
        header = next(reader)
        family_at = header.index("family")
        families = list(dict.fromkeys(r[family_at] for r in reader if r[family_at]))
    meta = json.loads((path.parent / "meta.json").read_text(encoding="utf-8"))
    declared, _ = plot_declarations.family_declarations(meta, families)
    params, notes = results_csv.parameter_columns(header, declared, columns)
    core = [c for c in header if c not in params]
    problems = [f"{path.parent.name}: {note}" for note in notes if "results_csv" in note]
    # A file written before a later column (schema-doc's later_columns) reads it as unset.
    expected = [c for c in columns.names if c in header or c not in later_columns]
    if core != expected:
        problems.append(f"{path.parent.name}: core columns {core} differ from the harness's (hdbench schema-doc --json) "
                        f"{list(columns.names)}")
    trailing = tuple(c for c in columns.trailing if c in expected)
    lead, trail = len(columns.leading), len(trailing)
    if tuple(header[:lead]) != columns.leading or tuple(header[len(header) - trail:]) != trailing:
        problems.append(f"{path.parent.name}: the parameters do not stand between gpu_uuid and metric: {header}")
    return problems


def docs_problems(repo: Path, columns) -> list[str]:
    """docs/csv-schema.md's "Columns" table against the harness's core columns and their types, its
    statistic row against the harness's statistics."""
    doc = repo / "docs" / "csv-schema.md"
    text = doc.read_text(encoding="utf-8")
    section = text[text.index("## Columns"):]
    section = section[:section.index("\n## ", 1)]
    rows = re.findall(r"^\|\s*(`[a-z_]+`|\*parameters\*)\s*\|\s*([a-z ]+?)\s*\|(.*)\|\s*$", section, re.M)
    names = [name.strip("`") for name, _, _ in rows]
    problems = []
    core = [n for n in names if n != "*parameters*"]
    if core != list(columns.names):
        problems.append(f"{doc.name}: the column table lists {core}, the harness's core columns are "
                        f"{list(columns.names)}")
    elif names.index("*parameters*") != len(columns.leading):
        problems.append(f"{doc.name}: the column table does not put the parameters after {columns.leading[-1]}")
    for name, kind, _ in rows:
        name = name.strip("`")
        if name in columns.types and kind != columns.kind(name):
            problems.append(f"{doc.name}: column {name} is {kind}, the harness writes it as {columns.kind(name)}")
    statistic = next((meaning for name, _, meaning in rows if name == "`statistic`"), "")
    named = set(re.findall(r"`([a-z]+)`", statistic))
    if named != set(columns.statistics):
        problems.append(f"{doc.name}: the statistic row names {sorted(named)}, the harness's statistics are "
                        f"{sorted(columns.statistics)}")
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
        gated = {gate["metric"] for gate in schema.get("gates", []) if gate["case"] == row["case"]}
        if row["headline"] == "yes" and row["metric"] not in gated:
            problems.append(f"{where}: a headline no gate of the kind names")
    if (row["unit"], row["better"]) != expected:
        problems.append(f"{where}: unit/better {row['unit']}/{row['better']}, declared {expected[0]}/{expected[1]}")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, required=True)
    parser.add_argument("--hdbench", type=Path, required=True, help="the built hdbench (its schema-doc --json)")
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
    plot_declarations, results_csv = plots_reader(args.repo)
    columns, later_columns = harness_columns(args.repo, args.hdbench, results_csv)
    core = frozenset(columns.names)
    failures: list[str] = docs_problems(args.repo, columns)
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
            if row["statistic"] and row["statistic"] not in columns.statistics:
                problem = f"statistic {row['statistic']!r} is not one of the harness's {list(columns.statistics)}"
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
        failures += core_column_problems(path, plot_declarations, results_csv, columns, later_columns)
        print(f"{path.parent.name}: {len(rows)} rows walked to their declarations; {len(frame.columns)} columns")
    names = list(dtypes)
    for other in names[1:]:
        first = names[0]
        # A column one reference has and another lacks is a parameter of a family or case the other
        # did not run (h200-host ran copy and overlap only, and the newer `threads`); every core
        # column is in each (core_column_problems), and a shared column has one dtype.
        only = sorted(set(dtypes[first]) ^ set(dtypes[other]))
        core = set(columns.names)
        if any(c in core for c in only):
            failures.append(f"core columns differ: {first} and {other}: {[c for c in only if c in core]}")
        for column in set(dtypes[first]) & set(dtypes[other]):
            if dtypes[first][column] != dtypes[other][column]:
                failures.append(f"column {column}: {dtypes[first][column]} in {first}, {dtypes[other][column]} in {other}")
    for failure in failures:
        print(f"FAIL {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
