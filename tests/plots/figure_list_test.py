#!/usr/bin/env python3
"""The figures drawn for a run are exactly the figures its families declare for it.

For one run directory (a committed reference or a fixture) this checks, through plot_run.py run
as the harness runs it, on a private copy of the run (results.csv, meta.json, and check.json
where the run has one: it adds the node figures):
  1. `plot_run.py DIR --list-expected` (computed from the modules' FIGURES and the CSV only)
     equals the committed list tests/plots/expected/<name>.txt, so a figure that stops being
     expected (a renamed parameter no `Need` matches any more) fails here too;
  2. `plot_run.py DIR --strict` draws every one of them and nothing else: the PNG files written
     and printed equal the expected list, no figure "failed" or had "nothing to draw".
  3. for a run with committed figures (DIR/plots/figures.json, the references): the title checker.
     Every committed figure's title and panel titles are recomputed from the run's results.csv
     (and meta.json, check.json) by the plot code (step 2's figures.json), and every number in
     them must equal the recomputed one; every number a figure records as a claim
     (hdbplots.claims.claim: its text, the results.csv rows or check.json lines it is computed
     from, and the formula) is recomputed here from results.csv with the csv module alone and
     must round to the text standing in the title; no title wraps to more than two lines. Then
     the checker must FAIL on planted wrong numbers: one title number changed, one claim's
     text changed (it exits 1 when it does not catch them).
Exit 0 = pass, 1 = fail (the differences are printed).

    figure_list_test.py --plot-run plots/plot_run.py --run results/reference/h200-x2 \
                        --expected tests/plots/expected/reference_h200-x2.txt --workdir DIR [--update]

--update rewrites the expected list from --list-expected (review the diff before committing it).
"""
from __future__ import annotations

import argparse
import copy
import csv
import json
import math
import re
import shutil
import subprocess
import sys
from pathlib import Path


def run_plot(plot_run: Path, *args: str) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, str(plot_run), *args], capture_output=True, text=True, timeout=280)
    print(f"$ plot_run.py {' '.join(args)}  -> exit {result.returncode}")
    return result


def differences(label: str, got: set[str], want: set[str]) -> list[str]:
    lines = []
    if want - got:
        lines.append(f"{label}: missing {', '.join(sorted(want - got))}")
    if got - want:
        lines.append(f"{label}: unexpected {', '.join(sorted(got - want))}")
    return lines


# ---------------------------------------------------------------- the title checker

NUMBER = re.compile(r"(?<![\w.])[-+]?\d+(?:[.,]\d+)*(?:\.\d+)?")
FORMULA = re.compile(r"[a-h0-9.+\-*/() ]+")
MAX_TITLE_LINES = 2


def numbers(text: str) -> list[str]:
    """Every number in a title, in order ('7.7×' -> '7.7', '53.4–53.5' -> '53.4', '53.5')."""
    return NUMBER.findall(text.replace("\u2013", " ").replace("\u2212", "-"))


def read_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def same(cell: str, wanted: object) -> bool:
    if isinstance(wanted, (int, float)) and not isinstance(wanted, bool):
        try:
            return float(cell) == float(wanted)
        except ValueError:
            return False
    return cell == str(wanted)


def cited_value(cite: dict, rows: list[dict[str, str]], check: dict | None) -> float:
    """The number one cite names: a constant, a check.json line's field, or the one results.csv
    row whose columns equal the cite's (an error unless exactly one row matches)."""
    if "const" in cite:
        return float(cite["const"])
    if "check_line" in cite:
        line = (check or {}).get("lines", [])[cite["check_line"]]
        value: object = line
        for part in cite["field"].split("."):
            value = value[part]  # type: ignore[index]
        return float(value)  # type: ignore[arg-type]
    found = [r for r in rows if all(k in r and same(r[k], v) for k, v in cite.items())]
    if len(found) != 1:
        raise LookupError(f"{len(found)} results.csv rows match {cite}")
    return float(found[0]["value"])


def rounds_to(text: str, value: float) -> bool:
    """Whether `text` (as shown: '7.7', '2130', '0.83') is `value` rounded to the digits shown."""
    shown = float(text.replace(",", ""))
    decimals = len(text.split(".")[1]) if "." in text else 0
    return abs(value - shown) <= 0.5 * 10 ** -decimals * (1 + 1e-9) + 1e-12


def check_claim(name: str, claim: dict, title: str, rows: list[dict[str, str]], check: dict | None) -> list[str]:
    text, formula = claim.get("text", ""), claim.get("formula", "a")
    if text not in numbers(title):
        return [f"{name}: claim {text!r} is not a number of its title {title!r}"]
    if not FORMULA.fullmatch(formula):
        return [f"{name}: claim {text!r} has an unreadable formula {formula!r}"]
    try:
        values = {chr(ord("a") + i): cited_value(c, rows, check) for i, c in enumerate(claim.get("cites", []))}
        value = eval(formula, {"__builtins__": {}}, values)  # noqa: S307 (formula matched FORMULA above)
    except (LookupError, KeyError, IndexError, TypeError, ValueError, ZeroDivisionError, NameError) as error:
        return [f"{name}: claim {text!r}: {error}"]
    if not (isinstance(value, (int, float)) and math.isfinite(value) and rounds_to(text, value)):
        return [f"{name}: title says {text!r} but its rows give {value!r} ({formula} of {claim.get('cites')})"]
    return []


def check_titles(committed: list[dict], drawn: list[dict], rows: list[dict[str, str]],
                 check: dict | None) -> list[str]:
    """The title checker: every committed figure against the same figure drawn from the data now."""
    failures = []
    fresh = {f["name"]: f for f in drawn}
    for figure in committed:
        name = figure["name"]
        now = fresh.get(name)
        if now is None:
            failures.append(f"{name}: committed but not drawn from the run's data")
            continue
        for label, old, new in [("title", figure.get("title", ""), now.get("title", ""))] + [
                (f"panel {i + 1}", o, n) for i, (o, n) in enumerate(zip(figure.get("panels", []), now.get("panels", [])))]:
            if numbers(old) != numbers(new):
                wrong = [a for a, b in zip(numbers(old), numbers(new)) if a != b] or numbers(old)
                failures.append(f"{name}: {label} says {', '.join(wrong)} where the data give "
                                f"{', '.join(numbers(new))}: committed {old!r}, recomputed {new!r}")
            elif old != new:
                failures.append(f"{name}: {label} is stale: committed {old!r}, recomputed {new!r}")
        if len(figure.get("panels", [])) != len(now.get("panels", [])):
            failures.append(f"{name}: {len(figure.get('panels', []))} panel titles committed, "
                            f"{len(now.get('panels', []))} drawn")
        lines = figure.get("title_lines")
        if not isinstance(lines, int) or lines > MAX_TITLE_LINES:
            failures.append(f"{name}: the title wraps to {lines} lines (at most {MAX_TITLE_LINES}: fit for a slide)")
        for claim in figure.get("claims", []):
            failures += check_claim(name, claim, figure.get("title", ""), rows, check)
    return failures


def planted(committed: list[dict]) -> list[tuple[str, list[dict]]]:
    """Copies of the committed index with one wrong number each: in a title, and in a claim
    (where some figure has one); the checker must fail on every one."""
    cases = []
    for figure in committed:
        found = numbers(figure.get("title", ""))
        if found:
            bad = copy.deepcopy(committed)
            target = next(f for f in bad if f["name"] == figure["name"])
            wrong = str(int(float(found[0].replace(",", ""))) + 7)
            target["title"] = target["title"].replace(found[0], wrong, 1)
            cases.append((f"title of {figure['name']}: {found[0]} -> {wrong}", bad))
            break
    for figure in committed:
        if figure.get("claims"):
            bad = copy.deepcopy(committed)
            target = next(f for f in bad if f["name"] == figure["name"])
            claim = target["claims"][0]
            wrong = f"{float(claim['text']) * 1.5:.{len(claim['text'].split('.')[1]) if '.' in claim['text'] else 0}f}"
            target["title"] = target["title"].replace(claim["text"], wrong, 1)
            claim["text"] = wrong
            # the recomputed title is planted too: only the claim's rows can catch it
            cases.append((f"claim of {figure['name']}: {figure['claims'][0]['text']} -> {wrong}", bad))
            break
    return cases


def title_failures(run: Path, run_dir: Path) -> list[str]:
    """Step 3 for a run with committed figures; [] for one without (the fixtures)."""
    index = run / "plots" / "figures.json"
    if not index.is_file():
        return []
    committed = json.loads(index.read_text(encoding="utf-8"))["figures"]
    drawn = json.loads((run_dir / "plots" / "figures.json").read_text(encoding="utf-8"))["figures"]
    rows = read_rows(run / "results.csv")
    check = json.loads((run / "check.json").read_text(encoding="utf-8")) if (run / "check.json").is_file() else None
    failures = check_titles(committed, drawn, rows, check)
    claims = sum(len(f.get("claims", [])) for f in committed)
    print(f"title checker: {len(committed)} committed figures, {sum(len(numbers(f['title'])) for f in committed)} "
          f"title numbers recomputed, {claims} claims recomputed from results.csv: "
          f"{'ok' if not failures else f'{len(failures)} wrong'}")
    cases = planted(committed)
    if len(cases) < 2:
        failures.append("title checker: no claim to plant a wrong number in (a figure must record its title's claims)")
    for what, bad in cases:
        for figure in bad:  # a planted claim sits in the recomputed titles too
            if what.startswith("claim of ") and figure["name"] == what.split(":")[0][len("claim of "):]:
                drawn = [figure if d["name"] == figure["name"] else d for d in drawn]
        caught = check_titles(bad, drawn, rows, check)
        if caught:
            print(f"planted wrong number ({what}) caught: {caught[0][:160]}")
        else:
            failures.append(f"title checker missed a planted wrong number: {what}")
    return failures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plot-run", type=Path, required=True)
    parser.add_argument("--run", type=Path, required=True, help="run directory (results.csv, meta.json)")
    parser.add_argument("--expected", type=Path, required=True, help="committed list of figure names")
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--update", action="store_true", help="rewrite --expected from --list-expected")
    args = parser.parse_args()

    run_dir = args.workdir / args.expected.stem
    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir(parents=True)
    for name in ("results.csv", "meta.json", "check.json"):
        if (args.run / name).is_file():
            shutil.copy2(args.run / name, run_dir / name)

    listed = run_plot(args.plot_run, str(run_dir), "--list-expected")
    print(listed.stderr, end="", file=sys.stderr)
    expected = [line.strip() for line in listed.stdout.splitlines() if line.strip()]
    if args.update:
        args.expected.write_text("".join(f"{name}\n" for name in expected), encoding="utf-8")
        print(f"wrote {len(expected)} names to {args.expected}")
        return 0 if listed.returncode == 0 else 1

    failures = []
    if listed.returncode != 0:
        failures.append(f"--list-expected exited {listed.returncode}")
    committed = [line.strip() for line in args.expected.read_text(encoding="utf-8").splitlines() if line.strip()]
    if not committed:
        failures.append(f"{args.expected} lists no figure: a run with data must expect some")
    if len(set(expected)) != len(expected):
        failures.append("--list-expected names a figure twice")
    failures += differences(f"expected figures vs {args.expected.name}", set(expected), set(committed))

    drawn = run_plot(args.plot_run, str(run_dir), "--format", "png", "--dpi", "50", "--strict")
    print(drawn.stderr, end="", file=sys.stderr)
    printed = {Path(line).stem for line in drawn.stdout.splitlines() if line.strip()}
    written = {p.stem for p in (run_dir / "plots").glob("*.png") if p.stat().st_size > 500}
    if drawn.returncode != 0:
        failures.append(f"plot_run --strict exited {drawn.returncode}")
    for marker in ("nothing to draw", " failed:", " is broken: ", "no plots for family"):
        if marker in drawn.stderr:
            failures.append(f"plot_run reported {marker.strip()!r} (see stderr above)")
    failures += differences("figures written vs expected", written, set(expected))
    failures += differences("paths printed vs expected", printed, set(expected))
    if drawn.returncode == 0:
        failures += title_failures(args.run, run_dir)

    if failures:
        print(f"FAIL {args.run}:", *failures, sep="\n  ")
        return 1
    print(f"PASS {args.run}: {len(expected)} figures, each declared, expected and drawn")
    return 0


if __name__ == "__main__":
    sys.exit(main())
