#!/usr/bin/env python3
"""The table of tools/verdict_benchmark.sh: its runs (runs.jsonl, one JSON object a line: kind,
run_dir, exit, started, finished) side by side, as markdown:

- runs: each one's exit, check's summary and compare's last line against the set;
- time: each family's elapsed seconds (meta.json), the harness's, and the whole run_all.sh call,
  in each run, and each run's ratio to the full run;
- figures: every banded figure of check.json (the gated headlines and the checks) with its value,
  grade and detectable change (the smallest change in the bad direction its band flags) in each
  run, and the ratio of each run's detectable change to the full run's;
- repetitions: per run, how the cases stopped (results.csv's stopped_by) and how many repetitions
  the cases that a decision reads took.
"""
from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
from collections import Counter
from pathlib import Path


def load(path: Path) -> list[dict]:
    runs = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    for run in runs:
        directory = Path(run["run_dir"])
        run["meta"] = json.loads((directory / "meta.json").read_text(encoding="utf-8"))
        check = directory / "check.json"
        run["check"] = json.loads(check.read_text(encoding="utf-8")) if check.is_file() else {"lines": []}
        with (directory / "results.csv").open(newline="", encoding="utf-8") as f:
            run["rows"] = list(csv.DictReader(f))
        compare = directory / "compare.txt"
        lines = compare.read_text(encoding="utf-8").strip().splitlines() if compare.is_file() else []
        run["compare"] = lines[-1] if lines else "no compare"
    return runs


def ratio(value: float | None, base: float | None) -> str:
    return f"{value / base:.2f}" if value is not None and base else "-"


def seconds(value: float | None) -> str:
    return f"{value:.1f}" if value is not None else "-"


def time_table(runs: list[dict]) -> list[str]:
    families = list(dict.fromkeys(f for run in runs for f in run["meta"].get("families", {})))
    kinds = [run["kind"] for run in runs]
    header = [f"{k} s" for k in kinds] + [f"{k}/{kinds[0]}" for k in kinds[1:]]
    lines = ["| | " + " | ".join(header) + " |", "|---|" + "---:|" * len(header)]

    def row(name: str, value_of) -> str:
        values = [value_of(run) for run in runs]
        return f"| {name} | " + " | ".join([seconds(v) for v in values] + [ratio(v, values[0]) for v in values[1:]]) + " |"

    for family in families:
        lines.append(row(family, lambda run, f=family: run["meta"].get("families", {}).get(f, {}).get("elapsed_s")))
    lines.append(row("**families**", lambda run: sum(f.get("elapsed_s", 0) for f in run["meta"].get("families", {}).values())))
    lines.append(row("harness", lambda run: run["meta"].get("harness_s")))
    lines.append(row("**run_all.sh** (build included)", lambda run: run["finished"] - run["started"]))
    return lines


def figure_key(line: dict) -> tuple:
    return (line.get("family"), line.get("figure"), tuple(line.get("gpus", [])))


def figure_table(runs: list[dict]) -> list[str]:
    kinds = [run["kind"] for run in runs]
    by_run = [{figure_key(l): l for l in run["check"]["lines"] if (l.get("expected") or {}).get("detectable") is not None}
              for run in runs]
    keys = list(dict.fromkeys(k for lines in by_run for k in lines))
    header = [f"{k}: value, grade, detectable" for k in kinds] + [f"{k}/{kinds[0]} detectable" for k in kinds[1:]]
    lines = ["| figure | " + " | ".join(header) + " |", "|---|" + "---|" * len(kinds) + "---:|" * (len(kinds) - 1)]
    worst: dict[str, float] = {}
    for key in keys:
        cells, detectable = [], []
        for lines_of in by_run:
            line = lines_of.get(key)
            if line is None:
                cells.append("not measured")
                detectable.append(None)
                continue
            d = line["expected"]["detectable"]
            cells.append(f"{line['value']:.4g} {line.get('unit', '')}, {line['grade']}, {100 * d:.2f} %")
            detectable.append(d)
        ratios = []
        for kind, d in zip(kinds[1:], detectable[1:]):
            ratios.append(ratio(d, detectable[0]))
            if d is not None and detectable[0]:
                worst[kind] = max(worst.get(kind, 0), d / detectable[0])
        gpus = ",".join(str(g) for g in key[2])
        lines.append(f"| {key[0]}: {key[1]} (GPU {gpus}) | " + " | ".join(cells + ratios) + " |")
    lines.append("")
    for kind, value in worst.items():
        lines.append(f"Largest {kind}/{kinds[0]} ratio of detectable change: **{value:.2f}**.")
    return lines


def repetition_table(runs: list[dict]) -> list[str]:
    lines = ["| run | cases by stopped_by | repetitions of the cases a decision reads: median (min-max) |", "|---|---|---|"]
    for run in runs:
        cases: dict[tuple, dict] = {}
        for row in run["rows"]:
            if row["statistic"] != "median" or row["status"] != "ok":
                continue
            key = tuple(v for k, v in row.items() if k not in ("metric", "unit", "better", "headline", "traffic",
                                                                 "statistic", "sample_index", "value"))
            case = cases.setdefault(key, {"stopped_by": row.get("stopped_by", "-"), "repetitions": row.get("repetitions", ""),
                                          "decision": False})
            case["decision"] = case["decision"] or row["headline"] == "yes"
        stopped = Counter(c["stopped_by"] for c in cases.values())
        decision = [int(c["repetitions"]) for c in cases.values()
                    if c["repetitions"].isdigit() and (c["decision"] or c["stopped_by"] in ("precise", "ceiling", "time"))]
        spread = (f"{statistics.median(decision):g} ({min(decision)}-{max(decision)}), {len(decision)} cases"
                  if decision else "-")
        lines.append(f"| {run['kind']} | " + ", ".join(f"{k} {v}" for k, v in sorted(stopped.items())) + f" | {spread} |")
    return lines


def verdict_of(check: dict) -> str:
    summary = check.get("summary")
    if not summary:
        return "no check.json"
    return f"{summary['grade']}, {summary['pass']} PASS, {summary['warn']} WARN, {summary['fail']} FAIL"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=Path, required=True, help="runs.jsonl of tools/verdict_benchmark.sh")
    args = parser.parse_args()
    try:
        runs = load(args.runs)
    except (OSError, ValueError, KeyError) as e:
        print(f"verdict_benchmark: cannot read the runs: {e}", file=sys.stderr)
        return 1
    if not runs:
        print("verdict_benchmark: no runs in " + str(args.runs), file=sys.stderr)
        return 1
    # Every ratio is against the full run where there is one, else against the first run.
    runs.sort(key=lambda run: run["kind"] != "full")
    node = runs[0]["meta"].get("node", {})
    print(f"# Verdict run against full run: {node.get('hostname', '?')}, "
          f"{runs[0]['meta'].get('started_utc', '?')}\n")
    print("| run | directory | run_all.sh exit | check | compare against the set |\n|---|---|---|---|---|")
    for r in runs:
        print(f"| {r['kind']} | {Path(r['run_dir']).name} | {r['exit']} | {verdict_of(r['check'])} | {r['compare']} |")
    print()
    print("## Time\n")
    print("\n".join(time_table(runs)) + "\n")
    print("## Figures (check.json: value, grade, detectable change)\n")
    print("\n".join(figure_table(runs)) + "\n")
    print("## Repetitions (results.csv)\n")
    print("\n".join(repetition_table(runs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
