#!/usr/bin/env python3
"""Draw the fleet figures from plots/fleet_plot.json (`hdbench fleet` writes it; hdbplots.fleet draws it).

    python3 plots/plot_fleet.py OUT/plots/fleet_plot.json [-o OUT/plots] [--format png,svg] [--dpi 120]

A fleet.json is read too (slower: it holds every line), as older hdbench wrote no fleet_plot.json.

Written paths go to stdout, one per line. Exit 0 when at least one figure was written (the heatmap
is drawn for any fleet of one node or more, even one in which no node finished: each row says
why), 1 when none was (no node), 2 for unreadable input (one line on stderr).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # run as a script: find hdbplots

from hdbplots import fleet  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("input", help="fleet_plot.json (or fleet.json)")
    parser.add_argument("-o", "--output", help="output directory (default: fleet_plot.json's own, or plots/ beside a fleet.json)")
    parser.add_argument("--format", default="png")
    parser.add_argument("--dpi", type=int, default=120)
    args = parser.parse_args()
    try:
        data = fleet.load(args.input)
    except (OSError, ValueError, KeyError) as e:
        print(f"plot_fleet: {args.input}: {e}", file=sys.stderr)
        return 2
    source = Path(args.input).resolve().parent
    # fleet_plot.json lies in plots/ already; a fleet.json's figures go to plots/ beside it
    out = Path(args.output) if args.output else source / "plots" if "reduced_from" in data else source
    written = fleet.draw(data, out, [f for f in args.format.split(",") if f], args.dpi)
    for path in written:
        print(path)
    return 0 if written else 1


if __name__ == "__main__":
    sys.exit(main())
