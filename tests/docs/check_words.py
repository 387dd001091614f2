#!/usr/bin/env python3
"""The user docs' word budget: README.md plus docs/*.md, docs/evidence.md aside, at most LIMIT words.

    check_words.py --root .              # the repository's docs against LIMIT
    check_words.py --root DIR --limit N  # another tree, or a lower limit to see it fail

Words are counted as `wc -w` counts them in a UTF-8 locale: runs of characters between white
space (ASCII white space and the Unicode spaces glibc's iswspace knows; a no-break space joins).
The evidence page is left out: it may grow, but nothing a user needs may live only there.

Prints each page's count and the total. Exit 0 within the budget, 1 over it (each page's count
named, largest first), 2 bad input (no README.md or docs/ under --root).
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

LIMIT = 25_000  # the one place the budget is written
EXCLUDED = "evidence.md"
SPACE = re.compile("[ \t\n\r\v\f\u1680\u2000-\u2006\u2008-\u200a\u2028\u2029\u205f\u3000]+")


def words(text: str) -> int:
    return sum(1 for token in SPACE.split(text) if token)


def pages(root: Path) -> list[Path]:
    return [root / "README.md"] + sorted(p for p in (root / "docs").glob("*.md") if p.name != EXCLUDED)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, required=True, help="the tree holding README.md and docs/")
    parser.add_argument("--limit", type=int, default=LIMIT, help=f"the budget in words (default {LIMIT})")
    args = parser.parse_args()
    if not (args.root / "README.md").is_file() or not (args.root / "docs").is_dir():
        print(f"check_words: no README.md and docs/ under {args.root}", file=sys.stderr)
        return 2
    counts = {p.relative_to(args.root).as_posix(): words(p.read_text(encoding="utf-8")) for p in pages(args.root)}
    total = sum(counts.values())
    if total <= args.limit:
        print(f"check_words: {total} words in {len(counts)} pages, within the budget of {args.limit} "
              f"({args.limit - total} to spare; {EXCLUDED} not counted)")
        return 0
    for page, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        print(f"{page}: {count} words")
    print(f"check_words: {total} words in {len(counts)} pages, over the budget of {args.limit} by "
          f"{total - args.limit}: cut repetition and over-long explanations, or move evidence to docs/{EXCLUDED}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
