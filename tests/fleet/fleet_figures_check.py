#!/usr/bin/env python3
"""What the user sees in `hdbench fleet`'s figures (docs/fleet.md, "Tests"), for a fleet's --out.

    <python with matplotlib> fleet_figures_check.py OUT [--plots plots/]

Run by fleet_members_test.py and fleet_scale_test.py with the Python that drew them. Checks:
- plots/fleet_plot.json holds every figure line of fleet.json that has a band, with its node,
  GPU, grade and value (6 significant digits), and nothing else; and each node's reason, the one
  hdbplots.fleet derives from fleet.json's lines (why it FAILs or WARNs where no dot shows it);
- a PNG per graded figure and no other dot plot (a fleet with no graded figure, as one in which
  no node finished, has none: none is expected), and fleet_heatmap.png for every fleet, each the
  size the module draws;
- each dot plot, drawn again from fleet_plot.json, is the PNG on disk pixel for pixel, and shows
  every GPU as a dot (as many FAIL dots as FAIL lines), the band, and a label "hostname GPU n" on
  every FAIL (up to the module's MAX_LABELS) and the FAIL colour in its pixels;
- the heatmap's cell of every FAIL figure line is its % from the centre, FAIL rows are named, and
  every named row without a cell has its node's reason written across it.
Prints one JSON object (figure -> its labels; per FAIL line the heatmap's %; per named row of the
heatmap the reason written across it), for the caller's own assertions. Exit 1 with the failures
listed.
"""
import argparse
import io
import json
import math
import os
import sys


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--plots", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "plots"))
    args = parser.parse_args()
    sys.path.insert(0, os.path.abspath(args.plots))
    import matplotlib.image as mpimg
    import matplotlib.pyplot as plt
    import numpy as np
    from hdbplots import fleet as figs

    failures = []

    def check(ok, what):
        if not ok:
            failures.append(what)
        return ok

    plots = os.path.join(args.out, "plots")
    data = figs.load(os.path.join(plots, "fleet_plot.json"))
    with open(os.path.join(args.out, "fleet.json")) as f:
        report = json.load(f)

    # 1. fleet_plot.json is fleet.json's banded figure lines, no more and no fewer.
    names = data["nodes"]["name"]
    check(names == [n["name"] for n in report["nodes"]], "fleet_plot.json's nodes are fleet.json's, in its order")
    want = {}
    for node in report["nodes"]:
        for line in node["lines"]:
            band = line["expected"] if isinstance(line["expected"], dict) and "low" in line["expected"] else None
            if line["family"] not in ("health", "node") and line["value"] is not None and band:
                want[(node["name"], line["family"], line["figure"], figs.gpu_text(line["gpus"]))] = {
                    "grade": line["grade"], "value": line["value"], **{k: band[k] for k in ("low", "high", "centre")}}
    got = {}
    for entry in data["figures"]:
        for j, node in enumerate(entry["node"]):
            got[(names[node], entry["family"], entry["figure"], entry["gpu"][j])] = {
                k: entry[k][j] for k in ("grade", "value", "low", "high", "centre")}
    check(set(got) == set(want), f"fleet_plot.json has {len(got)} dots, fleet.json {len(want)} banded figure lines")
    reasons = figs.from_fleet(report)["nodes"]["reason"]
    check(data["nodes"].get("reason") == reasons,
          f"fleet_plot.json's node reasons {data['nodes'].get('reason', [])[:3]}, from fleet.json's lines {reasons[:3]}")
    for key in set(got) & set(want):
        g, w = got[key], want[key]
        if not check(g["grade"] == w["grade"], f"{key}: grade {g['grade']} drawn, {w['grade']} reported"):
            break
        if not check(all(math.isclose(g[k], w[k], rel_tol=1e-5) for k in ("value", "low", "high", "centre")),
                     f"{key}: drawn {g}, reported {w}"):
            break

    # 2. The dot plots: on disk, the size drawn, the same pixels as drawn again, the dots and labels;
    # none but those of fleet_plot.json's figures (a fleet with none has no dot plot).
    expected = {figs.file_stem(e["family"], e["figure"]) + ".png" for e in data["figures"]}
    found = {f for f in os.listdir(plots) if f.startswith("fleet_") and f.endswith(".png") and f != "fleet_heatmap.png"}
    check(found <= expected, f"dot plots of no graded figure: {sorted(found - expected)}")
    labels = {}
    fig = plt.figure(figsize=figs.DOTS_SIZE)
    for entry in data["figures"]:
        name = f"{entry['family']} {entry['figure']}"
        path = os.path.join(plots, figs.file_stem(entry["family"], entry["figure"]) + ".png")
        if not check(os.path.isfile(path), f"{name}: no {path}"):
            continue
        on_disk = mpimg.imread(path)
        check(abs(on_disk.shape[0] - figs.DOTS_SIZE[1] * 120) <= 1 and abs(on_disk.shape[1] - figs.DOTS_SIZE[0] * 120) <= 1,
              f"{name}: {on_disk.shape} pixels")
        ax = figs.draw_dots(fig, data, entry)
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=120)
        buffer.seek(0)
        check(np.array_equal(mpimg.imread(buffer), on_disk), f"{name}: the PNG is not what the module draws")
        grades = np.asarray(entry["grade"])
        fails = int((grades == "FAIL").sum())
        check(f"{len(grades)} GPUs, {fails} FAIL" in ax.get_title(), f"{name}: title {ax.get_title()!r}")
        dots = {c.get_label().split(" ")[0]: len(c.get_offsets()) for c in ax.collections if c.get_label().endswith(")")}
        check(sum(dots.values()) == len(grades) and dots.get("FAIL", 0) == fails, f"{name}: dots {dots}")
        check(any(c.get_label().startswith("band") for c in ax.collections), f"{name}: no band drawn")
        texts = [t.get_text() for t in ax.texts]
        labels[name] = texts
        failing = [f"{data['nodes']['hostname'][n]} {g}" for n, g, gr in zip(entry["node"], entry["gpu"], grades) if gr == "FAIL"]
        check(all(f in texts for f in failing[:figs.MAX_LABELS]) and len(texts) <= figs.MAX_LABELS,
              f"{name}: FAIL dots {failing}, labels {texts}")
        if fails:
            red = np.array([int(figs.GRADE_COLOURS["FAIL"][i:i + 2], 16) / 255 for i in (1, 3, 5)])
            check((np.abs(on_disk[..., :3] - red).max(axis=2) < 0.02).sum() > 10, f"{name}: no FAIL-coloured pixels")
    plt.close(fig)

    # 3. The heatmap: on disk at its size; each FAIL line's cell its % from the centre; FAIL rows named,
    # and a named row without a cell has its reason across it.
    heat, rows_said = {}, {}
    path = os.path.join(plots, "fleet_heatmap.png")
    if check(os.path.isfile(path), "no fleet_heatmap.png"):
        grid, columns = figs.heatmap_grid(data)
        width, height = figs.heatmap_size(len(names), len(columns))
        shape = mpimg.imread(path).shape
        check(abs(shape[0] - height * 120) <= 1 and abs(shape[1] - width * 120) <= 1, f"heatmap: {shape} pixels")
        column = {c: j for j, c in enumerate(columns)}
        for (node, family, figure, gpu), line in want.items():
            if line["grade"] != "FAIL":
                continue
            cell = grid[names.index(node), column[(family, figure, gpu)]]
            heat[f"{node} {gpu} {family} {figure}"] = round(float(cell), 2)
            from_centre = line["value"] / line["centre"] - 1
            check(math.isclose(cell, 100 * from_centre, abs_tol=1e-3), f"heatmap {node} {figure}: {cell} %")
        hm = figs.draw_heatmap(data)
        ax = hm.axes[0]
        rows = [t.get_text() for t in ax.get_yticklabels()]
        said = {round(t.get_position()[1]): t.get_text() for t in ax.texts}
        plt.close(hm)
        failing = [n for n, g in zip(names, data["nodes"]["grade"]) if g == "FAIL"]
        check(all(f"{n} FAIL" in rows for n in failing[:2 * figs.MAX_ROW_LABELS]), f"heatmap rows {rows[:20]}")
        for i in figs.named_rows(data["nodes"]["grade"]):
            rows_said[f"{names[i]} {data['nodes']['grade'][i]}"] = said.get(i, "")
            if reasons[i] and np.isnan(grid[i]).all():
                check(said.get(i) == reasons[i], f"heatmap row {names[i]}: {said.get(i)!r} written, its reason {reasons[i]!r}")

    print(json.dumps({"figures": len(data["figures"]), "labels": labels, "heatmap_fail_cells": heat,
                      "heatmap_rows": rows_said}))
    if failures:
        print("FAIL: the fleet figures:\n  " + "\n  ".join(failures[:30]), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
