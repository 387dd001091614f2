#!/usr/bin/env python3
"""Draw every figure of one hdbench run: results.csv (+ meta.json) in, PNG/SVG files out.

    python3 plots/plot_run.py results/<run-id> [-o OUTDIR] [--format png,svg]

Rows are dispatched on the `family` column to `hdbplots/<family>.py`; a family without a module
is listed, not an error. One figure that fails is reported on stderr and the others are still
drawn. Written paths go to stdout, one per line, so the harness (or a shell) can collect them.

Exit status: 0 = at least one figure written; 1 = nothing could be drawn;
2 = bad usage or unreadable input (one line on stderr).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # run as a script: find hdbplots

try:
    import matplotlib

    from hdbplots import family_module
    from hdbplots.common import FigureJob, InputError, Row, Run, format_bytes, load_run
except ImportError as missing:  # e.g. a venv without matplotlib: say so in one line
    print(f"plot_run: {missing}; needs matplotlib and numpy (apt install python3-matplotlib, "
          f"or point HDBENCH_PYTHON at a Python that has them)", file=sys.stderr)
    sys.exit(2)

FORMATS = ("png", "svg", "pdf")
STYLE = {
    "font.size": 10, "axes.titlesize": 11, "axes.labelsize": 10, "legend.fontsize": 8.5,
    "svg.hashsalt": "hdbench",  # stable SVG ids: committed reference plots diff cleanly
}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Draw the plots of one hdbench run directory.")
    parser.add_argument("run_dir", type=Path, metavar="DIR", help="run directory holding results.csv")
    parser.add_argument("-o", "--output", type=Path, metavar="OUTDIR",
                        help="where figures go (default: DIR/plots)")
    parser.add_argument("--format", default="png,svg", type=parse_formats,
                        help=f"comma-separated file formats among {', '.join(FORMATS)} (default: png,svg)")
    return parser.parse_args(argv)


def parse_formats(text: str) -> list[str]:
    formats = [f.strip().lower() for f in text.split(",") if f.strip()]
    unknown = [f for f in formats if f not in FORMATS]
    if unknown or not formats:
        raise argparse.ArgumentTypeError(f"unsupported format(s) {','.join(unknown) or '(none)'}; "
                                         f"choose from {','.join(FORMATS)}")
    return list(dict.fromkeys(formats))


def describe_not_ok(rows: list[Row]) -> list[str]:
    """One line per skipped/failed case (sizes folded together, GPUs not), so nothing vanishes silently."""
    folded: dict[tuple, list[int]] = {}
    for r in rows:
        key = (r.status, r.family, r.case, r.direction, r.host_kind, r.api, r.extra, r.device, r.reason)
        folded.setdefault(key, [])
        if r.size_bytes is not None:
            folded[key].append(r.size_bytes)
    lines = []
    for (status, family, case, direction, host_kind, api, extra, device, reason), sizes in folded.items():
        what = "/".join(p for p in (family, case or "(whole family)") if p)
        params = " ".join(f"{k}={v}" for k, v in (("direction", direction), ("host_kind", host_kind),
                                                   ("api", api), ("extra", extra), ("device", device)) if v)
        size_text = ",".join(format_bytes(s) for s in sorted(set(sizes)))
        details = " ".join(p for p in (params, f"size={size_text}" if size_text else "") if p)
        lines.append(f"{status}: {' '.join(p for p in (what, details) if p)}: {reason or 'no reason given'}")
    return lines


def family_jobs(run: Run, family: str) -> list[FigureJob]:
    module = family_module(family)
    if module is None:
        print(f"plot_run: no plots for family {family}", file=sys.stderr)
        return []
    return list(module.figures(run))


def save(job: FigureJob, output: Path, formats: list[str]) -> list[Path]:
    """Draw one figure and write it in every format; [] when the job found nothing to draw."""
    figure = job.draw()
    if figure is None:
        print(f"plot_run: {job.name}: nothing to draw", file=sys.stderr)
        return []
    paths = []
    for fmt in formats:
        path = output / f"{job.name}.{fmt}"
        metadata = {"Date": None} if fmt in ("svg", "pdf") else None  # reproducible files
        figure.savefig(path, dpi=150, metadata=metadata)
        paths.append(path)
    return paths


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    matplotlib.use("Agg")  # never needs a display, in CI or over ssh
    try:
        run, warnings = load_run(args.run_dir)
    except (InputError, OSError, UnicodeDecodeError) as error:
        print(f"plot_run: {error}", file=sys.stderr)
        return 2
    for line in warnings + describe_not_ok(run.not_ok_rows()):
        print(f"plot_run: {line}", file=sys.stderr)

    output = args.output or args.run_dir / "plots"
    output.mkdir(parents=True, exist_ok=True)
    written = 0
    with matplotlib.rc_context(STYLE):
        for family in run.families():
            try:
                jobs = family_jobs(run, family)
            except Exception as error:  # a broken module must not stop other families
                print(f"plot_run: family {family}: {type(error).__name__}: {error}", file=sys.stderr)
                continue
            for job in jobs:
                try:
                    paths = save(job, output, args.format)
                except Exception as error:  # one bad figure must not stop the others
                    print(f"plot_run: {job.name} failed: {type(error).__name__}: {error}", file=sys.stderr)
                    continue
                for path in paths:
                    print(path)
                written += len(paths)
    if written == 0:
        print(f"plot_run: nothing could be drawn from {args.run_dir / 'results.csv'}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
