#!/usr/bin/env python3
"""docs/adding-a-family.md says which files make a family; this checks it against the stand-in
family (tests/standin_family) and the families of harness/suite.json.

    doc_files_test.py --doc docs/adding-a-family.md --family-dir tests/standin_family --source-root .

- every stand-in path of the file table exists, and every file of the stand-in's folder is in
  the table or in the doc's list of test files (a file added to the stand-in must be documented);
- every required row exists for every family of the suite (`<family>`, `<plots>` substituted;
  several paths in one cell are alternatives; a glob must match a source besides main.cpp and
  report.cpp);
- the schema.json keys of the doc's example are the stand-in's and cover every family's;
- the manifest entry of the doc has the keys of the stand-in's entry and of every suite entry,
  and the stand-in's entry names its own folder and a plot module it has;
- the stand-in is built as the doc says a family is: its main.cpp is the doc's one line (family_main
  with the embedded schema), its CMakeLists.txt builds it with hdb_add_family and embeds no schema
  of its own, and its report.cpp defines the doc's hdb::<family>_report_rules().

Exit 0 = the doc matches, 1 = it does not (each mismatch printed), 2 = bad input.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

CODE = re.compile(r"`([^`]+)`")
IGNORED = {"__pycache__"}


def section(doc: str, name: str) -> str:
    match = re.search(rf"<!-- {name}: begin -->(.*?)<!-- {name}: end -->", doc, re.S)
    if match is None:
        raise SystemExit(f"doc_files_test: no '{name}' section (<!-- {name}: begin/end -->) in the doc")
    return match.group(1)


def json_block(text: str) -> dict:
    match = re.search(r"```json\n(.*?)```", text, re.S)
    if match is None:
        raise SystemExit("doc_files_test: no ```json block in the section")
    return json.loads(match.group(1))


def table_rows(text: str) -> list[list[str]]:
    rows = []
    for line in text.strip().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and not set(cells[0]) <= set("-") and cells[0] != "what":
            rows.append(cells)
    return rows


def family_files(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*")
            if p.is_file() and not IGNORED & set(p.relative_to(folder).parts)}


def check_suite_family(root: Path, entry: dict, pattern: str) -> str | None:
    """None when `pattern` (with <family>/<plots>) exists for this suite family, else what is missing."""
    if pattern == "harness/suite.json":
        return None  # the entry is how we know the family
    path = pattern.replace("<family>", entry["name"]).replace("<plots>", entry["plots"])
    path = path.replace(f"bench/{entry['name']}", entry["folder"], 1)
    if "*" in path:
        matches = [p for p in root.glob(path) if p.name not in ("main.cpp", "report.cpp")]
        return None if matches else f"{path} matches no source besides main.cpp and report.cpp"
    return None if (root / path).is_file() else f"{path} does not exist"


def check_built_as_documented(doc: str, folder: Path, entries: list[dict]) -> list[str]:
    """The stand-in's main.cpp, CMakeLists.txt and report.cpp against what the doc says of them."""
    name = entries[0].get("name", "") if entries else ""
    failures = []
    documented_main = re.search(r"\*\*`main\.cpp`\*\*: `([^`]+)`", doc)
    if documented_main is None:
        return ["the doc has no **`main.cpp`**: `...` line"]
    main_line = documented_main.group(1).replace("<family>", name)
    if main_line not in (folder / "main.cpp").read_text(encoding="utf-8"):
        failures.append(f"main.cpp is not the doc's `{main_line}`")
    cmake = (folder / "CMakeLists.txt").read_text(encoding="utf-8")
    if not re.search(rf"hdb_add_family\({name}\b", cmake):
        failures.append(f"CMakeLists.txt does not build the family with hdb_add_family({name} ...)")
    if "hdb_schema" in cmake or "embedded_schema" in cmake:
        failures.append("CMakeLists.txt embeds the schema itself (hdb_add_family does)")
    documented_rules = re.search(r"`hdb::family_rules hdb::<family>_report_rules\(\)`", doc)
    if documented_rules is None:
        failures.append("the doc no longer names hdb::family_rules hdb::<family>_report_rules()")
    report = folder / "report.cpp"
    if report.is_file() and f"family_rules {name}_report_rules()" not in report.read_text(encoding="utf-8"):
        failures.append(f"report.cpp does not define {name}_report_rules()")
    return failures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--doc", type=Path, required=True)
    parser.add_argument("--family-dir", type=Path, required=True)
    parser.add_argument("--source-root", type=Path, required=True)
    args = parser.parse_args()
    doc = args.doc.read_text(encoding="utf-8")
    failures: list[str] = []

    rows = table_rows(section(doc, "family-files"))
    if not rows:
        failures.append("the family-files table has no rows")
    suite = json.loads((args.source_root / "harness" / "suite.json").read_text(encoding="utf-8"))["families"]
    listed: set[str] = set()
    for what, real, standin, required in rows:
        for path in CODE.findall(standin):
            listed.add(path)
            if not (args.family_dir / path).is_file():
                failures.append(f"{what}: the stand-in has no {path}")
        if required == "yes":
            if not CODE.findall(standin):
                failures.append(f"{what}: required, but the stand-in column names no file")
            # Several paths in a cell are alternatives ("*.cpp, *.cu"): one of them must exist;
            # a bare "*.cu" is in the folder of the cell's first path.
            patterns = CODE.findall(real)
            patterns = [str(Path(patterns[0]).parent / p) if p.startswith("*") else p for p in patterns]
            for entry in suite:
                missing = [check_suite_family(args.source_root, entry, p) for p in patterns]
                if patterns and all(missing):
                    failures.append(f"{what}: family {entry['name']}: " + "; ".join(m for m in missing if m))
    test_files = {CODE.findall(line)[0] for line in section(doc, "standin-test-files").splitlines() if CODE.findall(line)}
    for path in sorted(test_files):
        if not (args.family_dir / path).is_file():
            failures.append(f"test file {path} is listed but the stand-in has no such file")
    for path in sorted(family_files(args.family_dir) - listed - test_files):
        failures.append(f"{path} is in {args.family_dir} but neither in the file table nor in the test files")

    documented_keys = set(json_block(section(doc, "schema-keys")))
    standin_schema = json.loads((args.family_dir / "schema.json").read_text(encoding="utf-8"))
    if set(standin_schema) != documented_keys:
        failures.append(f"schema.json keys: the doc has {sorted(documented_keys)}, the stand-in {sorted(standin_schema)}")
    for entry in suite:
        keys = set(json.loads((args.source_root / entry["folder"] / "schema.json").read_text(encoding="utf-8")))
        if not keys <= documented_keys:
            failures.append(f"schema.json of {entry['name']} has keys the doc does not show: {sorted(keys - documented_keys)}")

    documented_entry = set(json_block(section(doc, "manifest-entry")))
    standin_entries = json.loads((args.family_dir / "suite.json").read_text(encoding="utf-8"))["families"]
    if len(standin_entries) != 1:
        failures.append(f"the stand-in's suite.json should hold its one entry, not {len(standin_entries)}")
    for entry in standin_entries + suite:
        if set(entry) != documented_entry:
            failures.append(f"manifest entry {entry.get('name')}: keys {sorted(entry)}, the doc shows {sorted(documented_entry)}")
    for entry in standin_entries:
        if (args.source_root / entry.get("folder", "")).resolve() != args.family_dir.resolve():
            failures.append(f"the stand-in's entry names folder {entry.get('folder')}, not its own")
        if f"plots/{entry.get('plots')}.py" not in listed:
            failures.append(f"the stand-in's plot module plots/{entry.get('plots')}.py is not the table's")

    failures += check_built_as_documented(doc, args.family_dir, standin_entries)

    for failure in failures:
        print(f"FAIL {failure}")
    print(f"{len(rows)} file rows, {len(test_files)} test files, {len(suite)} suite families checked; "
          f"{len(failures)} problem(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
