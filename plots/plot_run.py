#!/usr/bin/env python3
"""Draw every figure of one hdbench run: results.csv and meta.json in, PNG/SVG files out.

    python3 plots/plot_run.py results/<run-id> [-o OUTDIR] [--format png,svg] [--dpi 150] [--strict]
                              [--per-gpu-plots]
    python3 plots/plot_run.py results/<run-id> --list-expected

Each family's rows are drawn by the plot module its declaration names (meta.json
`families.<name>.plots`, found by hdbplots.load_module); the module's FIGURES say which figures
the run's rows call for (hdbplots.figures.plan), and exactly those are drawn. A family without a
module is listed, not an error. Where meta.json sorts the GPUs into classes (`tiers`), a
per-GPU figure is drawn for each class's representative only, unless --per-gpu-plots
(figures.figure_devices). The run's check.json (`hdbench check --format json`) adds the node
figures, every GPU side by side (hdbplots.node); without one, one line says so.

One figure that fails is reported on stderr and the others are still drawn. Written figure
paths go to stdout, one per line, so the harness (or a shell) can collect them, and
OUTDIR/figures.json lists every figure drawn with its title ({"figures": [{"name", "family",
"title", "title_lines", "panels", "claims", "files"}]}: the title, how many lines it wraps to,
the panels' titles, and where the title's numbers come from, hdbplots.claims.claim);
--list-expected prints the file names (no extension) the run must produce
instead.

meta.json must hold what the harness records there (results_csv: results.csv's core columns and
statistics; each GPU's link rates): `hdbench plot DIR` adds them to an older run before it draws.

Exit status: 0 = at least one figure written (with --strict: every expected figure written);
1 = nothing could be drawn (with --strict: an expected figure is missing, a plot module is
broken, or a figure's title runs off its edges); 2 = bad usage or unreadable input (one line on stderr).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # run as a script: find hdbplots

try:
    # hdbplots first: it limits the BLAS thread pools before matplotlib brings in numpy
    from hdbplots import load_module, node, teaching

    import matplotlib
    from hdbplots.drawing import panel_titles, texts_outside
    from hdbplots.figures import Planned, check_figures, plan
    from hdbplots.formatting import format_bytes
    from hdbplots.results_csv import InputError, Row
    from hdbplots.run import Run, load_run
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
    parser.add_argument("--dpi", type=int, default=150, metavar="N",
                        help="resolution of PNG files (default: 150; the tests draw smaller, faster files)")
    parser.add_argument("--list-expected", action="store_true",
                        help="print the figures the run's data calls for (file names without extension) and exit")
    parser.add_argument("--strict", action="store_true",
                        help="exit 1 unless every expected figure was written, its title and run identity inside it")
    parser.add_argument("--per-gpu-plots", action="store_true",
                        help="draw the per-GPU figures for every GPU, not only for one GPU of each class "
                             "of alike GPUs (meta.json tiers)")
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
        params = tuple((k, v) for k, v in r.params().items() if k != "size_bytes")
        key = (r.status, r.family, r.case, params, r.device, r.gpus, r.reason)
        folded.setdefault(key, [])
        if r.get("size_bytes") is not None:
            folded[key].append(r["size_bytes"])
    lines = []
    for (status, family, case, params, device, gpus, reason), sizes in folded.items():
        what = "/".join(p for p in (family, case or "(whole family)") if p)
        labels = [f"{k}={v}" for k, v in params]
        if device is not None:
            labels.append(f"device={device}")
        if gpus is not None and gpus > 1:
            labels.append(f"gpus={gpus}")
        size_text = ",".join(format_bytes(s) for s in sorted(set(sizes)))
        if size_text:
            labels.append(f"size={size_text}")
        lines.append(f"{status}: {' '.join([what] + labels)}: {reason or 'no reason given'}")
    return lines


def expected_figures(run: Run, every_gpu: bool = False) -> tuple[list[Planned], list[str]]:
    """Every figure the run's declarations and rows (and check.json) call for, and one line per
    family that has no plots or whose module is broken, or why there are no node figures (the
    caller prints them)."""
    planned: list[Planned] = []
    problems: list[str] = []
    for family in run.families():
        declaration = run.declarations.get(family)
        name = declaration.plots if declaration else None
        if not name:
            problems.append(f"no plots for family {family} (its declaration names no plot module)")
            continue
        try:
            figures = check_figures(name, getattr(load_module(name), "FIGURES", None))
        except LookupError as error:
            problems.append(f"no plots for family {family}: {error}")
            continue
        except Exception as error:  # a broken module must not stop other families
            problems.append(f"family {family}: plot module {name} is broken: {type(error).__name__}: {error}")
            continue
        planned += plan(run, family, figures, every_gpu)
    planned += teaching.plan(run)
    node_figures, notes = node.plan(run)
    planned += node_figures
    problems += notes
    names = [p.file_name for p in planned]
    for repeated in sorted({n for n in names if names.count(n) > 1}):
        problems.append(f"figure {repeated} is declared by more than one family; drawing the first only")
    unique = {}
    for p in planned:
        unique.setdefault(p.file_name, p)
    return list(unique.values()), problems


def save(job: Planned, output: Path, formats: list[str], dpi: int = 150) -> tuple[list[Path], dict]:
    """Draw one figure and write it in every format; its paths ([] when the draw found nothing
    to draw) and what figures.json says of it (title, title_lines, panels, claims)."""
    figure = job.figure.draw(job.scope)
    if figure is None:
        print(f"plot_run: {job.file_name}: nothing to draw although its data is there "
              f"(a defect of plot module for {job.family})", file=sys.stderr)
        return [], {}
    paths = []
    for fmt in formats:
        path = output / f"{job.file_name}.{fmt}"
        metadata = {"Date": None} if fmt in ("svg", "pdf") else None  # reproducible files
        figure.savefig(path, dpi=dpi, metadata=metadata)
        paths.append(path)
    cut_off = texts_outside(figure)
    for text in cut_off:
        print(f"plot_run: {job.file_name}: runs off the figure: {text!r}", file=sys.stderr)
    return paths, {"title": figure.get_label(), "title_lines": getattr(figure, "hdb_title_lines", None),
                   "panels": panel_titles(figure), "claims": getattr(figure, "hdb_claims", []), "cut_off": cut_off}


def write_index(output: Path, drawn: list[dict]) -> None:
    """OUTDIR/figures.json: what each file shows, in words, for a report or a test to read
    without opening the images."""
    text = json.dumps({"figures": drawn}, indent=1, ensure_ascii=False) + "\n"
    (output / "figures.json").write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    matplotlib.use("Agg")  # never needs a display, in CI or over ssh
    try:
        run, warnings = load_run(args.run_dir)
    except (InputError, OSError, UnicodeDecodeError) as error:
        print(f"plot_run: {error}", file=sys.stderr)
        return 2
    planned, problems = expected_figures(run, args.per_gpu_plots)
    broken = any(" is broken: " in p for p in problems)
    if args.list_expected:
        for line in warnings + describe_not_ok(run.not_ok_rows()) + problems:
            print(f"plot_run: {line}", file=sys.stderr)
        for job in planned:
            print(job.file_name)
        return 1 if broken else 0
    for line in warnings + describe_not_ok(run.not_ok_rows()) + problems:
        print(f"plot_run: {line}", file=sys.stderr)
    if run.verdict:
        print(f"plot_run: a verdict run: {len(planned)} figures from its checked and gated cases; the sweeps' "
              f"figures need a run without --verdict", file=sys.stderr)

    output = args.output or args.run_dir / "plots"
    output.mkdir(parents=True, exist_ok=True)
    drawn = []
    with matplotlib.rc_context(STYLE):
        for job in planned:
            try:
                paths, described = save(job, output, args.format, args.dpi)
            except Exception as error:  # one bad figure must not stop the others
                print(f"plot_run: {job.file_name} failed: {type(error).__name__}: {error}", file=sys.stderr)
                continue
            for path in paths:
                print(path)
            if paths:
                drawn.append({"name": job.file_name, "family": job.family, **described,
                              "files": [p.name for p in paths]})
    write_index(output, drawn)
    drawn_names = {d["name"] for d in drawn}
    missing = [job.file_name for job in planned if job.file_name not in drawn_names]
    if missing:
        print(f"plot_run: {len(missing)} of {len(planned)} expected figures not drawn: {', '.join(missing)}",
              file=sys.stderr)
    if not drawn:
        print(f"plot_run: nothing could be drawn from {args.run_dir / 'results.csv'}", file=sys.stderr)
        return 1
    cut = any(d["cut_off"] for d in drawn)
    return 1 if args.strict and (missing or broken or cut) else 0


if __name__ == "__main__":
    sys.exit(main())
