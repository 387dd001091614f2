#!/usr/bin/env python3
"""The docs against the source where they restate it: a declaration's keys and the stopping rule's figures.

    check_source_docs.py --root SOURCE_DIR [--docs DIR]

Keys. Every key the declaration parser reads (foundation/contract/declaration.cpp: the keys it
passes to its reader's text, list and object, finds, takes a value of or tests for, lists as a
check's or gate's known fields or compares a fit's keys with, and the fit roles' keys of its
header) is on docs/adding-a-family.md, quoted or in code ("host_bound" or `host_bound`): a key a
family may declare is one the page shows.

Figures. docs/methodology.md's "How many repetitions" states the stopping rule's counts; each is
the one foundation/util/include/hdb/util/stopping.hpp sets (the floor, the ceiling, the time
ceiling, the confidence, the fraction of the tolerance, the fixed counts and --quick's).

--docs reads the two pages from another folder (tests/docs/fixtures/restated plants a mistake of
each kind). Exit 0 = the docs agree, 1 = they do not (each problem printed), 2 = bad input.
"""
from __future__ import annotations

import argparse
import re
import sys
import unicodedata
from pathlib import Path

DECLARATION = "foundation/contract/declaration.cpp"
DECLARATION_HEADER = "foundation/contract/include/hdb/contract/declaration.hpp"
STOPPING = "foundation/util/include/hdb/util/stopping.hpp"

# stopping.hpp's figures: name -> the pattern of its one definition there.
FIGURES = {
    "floor": r"\bint floor = (\d+);",
    "ceiling": r"\bint ceiling = (\d+);",
    "max_seconds": r"\bdouble max_seconds = ([\d.]+);",
    "confidence": r"\bdouble confidence = ([\d.]+);",
    "tolerance_fraction": r"\btolerance_fraction = ([\d.]+);",
    "regular": r"\bint regular = (\d+);",
    "headline": r"\bint headline = (\d+);",
    "quick_regular": r"\bquick_repetitions\{(\d+), \d+\}",
    "quick_headline": r"\bquick_repetitions\{\d+, (\d+)\}",
}
# How methodology.md states them: each phrase once in the section, its number the figure's.
STATED = [
    ("regular", r"(\d+) per case, \d+ for a headline case"),
    ("headline", r"\d+ per case, (\d+) for a headline case"),
    ("quick_regular", r"\(`--quick`: (\d+) and \d+\)"),
    ("quick_headline", r"\(`--quick`: \d+ and (\d+)\)"),
    ("floor", r"from the (\d+)(?:st|nd|rd|th)\b"),
    ("confidence", r"(\d+) % interval"),
    ("tolerance_fraction", r"half-width is at most (\S) of the tolerance"),
    ("ceiling", r"else at (\d+) repetitions"),
    ("max_seconds", r"or ([\d.]+) s \(`time`\)"),
    ("regular", r"Cases no decision reads keep (\d+)"),
    ("floor", r"a case stopped at (\d+) is judged"),
]


def parser_keys(root: Path) -> set[str]:
    source = (root / DECLARATION).read_text(encoding="utf-8")
    keys = set(re.findall(r'\br\.(?:text|list|object)\([^,()]+,\s*"(\w+)"', source))
    keys |= set(re.findall(r'\.(?:find|value|contains)\("(\w+)"', source))
    for known in re.findall(r"\bknown = \{([^}]*)\}", source):
        keys |= set(re.findall(r'"(\w+)"', known))
    keys |= set(re.findall(r'\bkey == "(\w+)"', source))
    keys |= set(re.findall(r'\{fit_role::\w+, "(\w+)"', (root / DECLARATION_HEADER).read_text(encoding="utf-8")))
    return keys


def check_keys(root: Path, page: Path) -> list[str]:
    keys = parser_keys(root)
    if not keys:
        return [f"{DECLARATION}: no key found (has the way it reads keys changed? update this script)"]
    text = page.read_text(encoding="utf-8")
    return [f"{page.name}: the declaration parser reads \"{key}\" ({DECLARATION}), the page never shows it"
            for key in sorted(keys) if not re.search(rf'[`"]{key}\\?[`"]', text)]


def stopping_figures(root: Path) -> tuple[dict[str, float], list[str]]:
    source = (root / STOPPING).read_text(encoding="utf-8")
    figures, problems = {}, []
    for name, pattern in FIGURES.items():
        found = re.findall(pattern, source)
        if len(found) != 1:
            problems.append(f"{STOPPING}: {name} is not defined once as this script reads it ({pattern})")
        else:
            figures[name] = float(found[0])
    return figures, problems


def number(text: str) -> float:
    return float(text) if re.fullmatch(r"[\d.]+", text) else unicodedata.numeric(text, -1.0)


def check_figures(root: Path, page: Path) -> list[str]:
    figures, problems = stopping_figures(root)
    text = page.read_text(encoding="utf-8")
    section = re.search(r"^## How many repetitions\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    if section is None:
        return problems + [f"{page.name}: no section \"How many repetitions\""]
    for name, pattern in STATED:
        found = re.findall(pattern, section.group(1))
        if len(found) != 1:
            problems.append(f"{page.name}: \"How many repetitions\" should say /{pattern}/ once (the {name}), "
                            f"it does {len(found)} times")
            continue
        said = number(found[0])
        want = figures.get(name)
        if want is None:
            continue
        if name == "confidence":
            want *= 100
        if abs(said - want) > 1e-9:
            problems.append(f"{page.name}: \"How many repetitions\" says {found[0]} for the {name}, "
                            f"{STOPPING} sets {want:g}")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, required=True, help="the source tree")
    parser.add_argument("--docs", type=Path, help="the folder of adding-a-family.md and methodology.md (default: ROOT/docs)")
    args = parser.parse_args()
    docs = args.docs or args.root / "docs"
    pages = [docs / "adding-a-family.md", docs / "methodology.md"]
    sources = [args.root / DECLARATION, args.root / DECLARATION_HEADER, args.root / STOPPING]
    missing = [str(p) for p in pages + sources if not p.is_file()]
    if missing:
        print(f"check_source_docs: no {', '.join(missing)}", file=sys.stderr)
        return 2
    problems = check_keys(args.root, pages[0]) + check_figures(args.root, pages[1])
    for problem in problems:
        print(problem)
    print(f"check_source_docs: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
