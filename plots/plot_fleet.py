#!/usr/bin/env python3
"""Draw the fleet figures from fleet.json (`hdbench fleet` writes it; hdbplots.fleet draws it).

    python3 plots/plot_fleet.py OUT/fleet.json [-o OUT/plots] [--format png,svg] [--dpi 120]

Written paths go to stdout, one per line. Exit 0 when at least one figure was written, 1 when the
fleet has no graded figure, 2 for unreadable input (one line on stderr).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # run as a script: find hdbplots

from hdbplots import fleet  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("fleet_json")
    parser.add_argument("-o", "--output", help="output directory (default: plots/ beside fleet.json)")
    parser.add_argument("--format", default="png")
    parser.add_argument("--dpi", type=int, default=120)
    args = parser.parse_args()
    try:
        data = fleet.load(args.fleet_json)
    except (OSError, ValueError) as e:
        print(f"plot_fleet: {args.fleet_json}: {e}", file=sys.stderr)
        return 2
    out = Path(args.output) if args.output else Path(args.fleet_json).resolve().parent / "plots"
    written = fleet.draw(data, out, [f for f in args.format.split(",") if f], args.dpi)
    for path in written:
        print(path)
    return 0 if written else 1


if __name__ == "__main__":
    sys.exit(main())
