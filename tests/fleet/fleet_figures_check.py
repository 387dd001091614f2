#!/usr/bin/env python3
"""What the user sees in `hdbench fleet`'s figures (docs/evidence.md, "Fleet, Slurm and Prometheus tested"), for a fleet's --out.

    <python with matplotlib> fleet_figures_check.py OUT [--plots plots/]

Run by fleet_members_test.py, fleet_scale_test.py and fleet_unfinished_test.py with the Python that
drew them. Each figure is drawn again from fleet_plot.json and must be its PNG on disk pixel for
pixel; what it shows is then read from the drawn artists and held against fleet.json, recomputed
here on its own (not by the module's functions):
- plots/fleet_plot.json holds every figure line of fleet.json that has a band, with its node,
  GPU, grade, value, band and rule (better, tolerance, host_bound), and nothing else; and each
  node's reason, the one hdbplots.fleet derives from fleet.json's lines;
- a PNG per graded figure and no other dot plot, and fleet_heatmap.png for every fleet;
- each dot plot shows every GPU as a dot (as many FAIL dots as FAIL lines) over the band, the FAIL
  colour in its pixels, an x axis of whole ranks (no tick between two dots) and the name of every
  FAIL dot and of every WARN dot (up to MAX_LABELS, FAIL first): on the axis (every dot named, in
  value order) or beside the dot;
- the heatmap's rows are the FAIL nodes, those with a FAIL cell first by their worst distance
  (tolerances worse, recomputed from fleet.json), then the WARN nodes, then the PASS nodes most
  tolerances worse, HEATMAP_ROWS at most; the figure says how many nodes it left out and their
  grades; each cell is its node's worst GPU on the figure (worst grade, then most tolerances
  worse), coloured by that distance; a FAIL cell reads 1 or more and names its GPU; each row says
  at its right why, its reason where no cell shows it.
Prints one JSON object (figure -> the FAIL and WARN dots it names; the heatmap's rows -> the words
at their right; per FAIL cell its tolerances; the left-out line), for the caller's own assertions.
Exit 1 with the failures listed.
"""
import argparse
import io
import json
import math
import os
import sys

GRADE_RANK = {"FAIL": 0, "WARN": 1, "PASS": 2, "INFO": 3}


def tolerances_worse(line, centre):
    """The line's distance from its centre in the bad direction, in its tolerances (None: unweighed)."""
    sign = {"higher": -1, "lower": 1}.get(line.get("better"))
    tolerance = line.get("tolerance")
    if sign is None or not isinstance(tolerance, (int, float)) or tolerance <= 0 or not centre > 0:
        return None
    return sign * (line["value"] / centre - 1) / tolerance


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

    def same_pixels(fig, path):
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=120)
        buffer.seek(0)
        return np.array_equal(mpimg.imread(buffer), mpimg.imread(path))

    plots = os.path.join(args.out, "plots")
    data = figs.load(os.path.join(plots, "fleet_plot.json"))
    with open(os.path.join(args.out, "fleet.json")) as f:
        report = json.load(f)

    # 1. fleet_plot.json is fleet.json's banded figure lines, no more and no fewer.
    names = data["nodes"]["name"]
    grades = data["nodes"]["grade"]
    check(names == [n["name"] for n in report["nodes"]], "fleet_plot.json's nodes are fleet.json's, in its order")
    check(grades == [n["grade"] for n in report["nodes"]], "fleet_plot.json's node grades are fleet.json's")
    want = {}  # (node, family, figure, gpu) -> the line, with its centre and its tolerances worse
    for node in report["nodes"]:
        for line in node["lines"]:
            band = line["expected"] if isinstance(line["expected"], dict) and "low" in line["expected"] else None
            if line["family"] not in ("health", "node") and line["value"] is not None and band:
                want[(node["name"], line["family"], line["figure"], figs.gpu_text(line["gpus"]))] = {
                    "grade": line["grade"], "value": line["value"], **{k: band[k] for k in ("low", "high", "centre")},
                    "rule": {"better": line["better"], "tolerance": line["tolerance"], "host_bound": line["host_bound"]},
                    "score": None}
    got = {}
    for entry in data["figures"]:
        for j, node in enumerate(entry["node"]):
            got[(names[node], entry["family"], entry["figure"], entry["gpu"][j])] = {
                **{k: entry[k][j] for k in ("grade", "value", "low", "high", "centre")},
                "rule": entry["rules"][entry["rule"][j]]}
    check(set(got) == set(want), f"fleet_plot.json has {len(got)} dots, fleet.json {len(want)} banded figure lines")
    for key in set(got) & set(want):  # the distance as drawn: of fleet_plot.json's 6 digits (checked below)
        want[key]["score"] = tolerances_worse(dict(want[key]["rule"], value=got[key]["value"]), got[key]["centre"])
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
        if not check(g["rule"] == w["rule"], f"{key}: rule {g['rule']} drawn, {w['rule']} in fleet.json"):
            break

    # 2. The dot plots: on disk, the same pixels as drawn again, the dots, the band, whole ranks,
    # the FAIL and WARN dots named; none but those of fleet_plot.json's figures.
    expected = {figs.file_stem(e["family"], e["figure"]) + ".png" for e in data["figures"]}
    found = {f for f in os.listdir(plots) if f.startswith("fleet_") and f.endswith(".png") and f != "fleet_heatmap.png"}
    check(found <= expected, f"dot plots of no graded figure: {sorted(found - expected)}")
    labels = {}
    fig = plt.figure()
    short = figs.short_labels(sorted(data["figures"], key=lambda e: (e["family"], e["figure"])))
    by_figure = dict(zip(((e["family"], e["figure"]) for e in sorted(data["figures"], key=lambda e: (e["family"], e["figure"]))), short))
    for entry in data["figures"]:
        name = f"{entry['family']} {entry['figure']}"
        path = os.path.join(plots, figs.file_stem(entry["family"], entry["figure"]) + ".png")
        if not check(os.path.isfile(path), f"{name}: no {path}"):
            continue
        on_disk = mpimg.imread(path)
        ax = figs.draw_dots(fig, data, entry, by_figure[(entry["family"], entry["figure"])])
        check(np.abs(np.array(on_disk.shape[:2]) - np.array(fig.get_size_inches()[::-1]) * 120).max() <= 1,
              f"{name}: {on_disk.shape} pixels, drawn {fig.get_size_inches()} in")
        check(same_pixels(fig, path), f"{name}: the PNG is not what the module draws")
        entry_grades = np.asarray(entry["grade"])
        n, fails = len(entry_grades), int((entry_grades == "FAIL").sum())
        check(f"{n:,} GPUs, {fails} FAIL" in ax.get_title(), f"{name}: title {ax.get_title()!r}")
        dots = {c.get_label().split(" ")[0]: len(c.get_offsets()) for c in ax.collections if c.get_label().endswith(")")}
        check(sum(dots.values()) == n and dots.get("FAIL", 0) == fails, f"{name}: dots {dots}")
        check(any(c.get_label().startswith("band") for c in ax.collections), f"{name}: no band drawn")
        ticks = ax.get_xticks()
        check(all(float(t).is_integer() and 0 <= t < n for t in ticks), f"{name}: x ticks {list(ticks)} are not dots")
        one_gpu = len(set(entry["gpu"])) == 1
        dot_names = [names[i] if one_gpu else f"{names[i]} {g}" for i, g in zip(entry["node"], entry["gpu"])]
        tick_texts = [t.get_text() for t in ax.get_xticklabels()]
        if n <= figs.NAMES_ON_AXIS:
            in_order = [dot_names[j] for j in np.argsort(np.asarray(entry["value"], dtype=float), kind="stable")]
            check(tick_texts == in_order, f"{name}: the axis names {tick_texts[:5]}..., the dots by value {in_order[:5]}...")
        shown = set(tick_texts) | {t.get_text() for t in ax.texts}
        centre = np.asarray(entry["centre"], dtype=float)
        far = np.abs(np.asarray(entry["value"], dtype=float) / centre - 1)
        outliers = sorted((j for j in range(n) if entry_grades[j] in ("FAIL", "WARN")),
                          key=lambda j: (entry_grades[j] != "FAIL", -far[j]))
        must = [dot_names[j] for j in outliers[:figs.MAX_LABELS]] if n > figs.NAMES_ON_AXIS else [dot_names[j] for j in outliers]
        check(all(m in shown for m in must), f"{name}: FAIL/WARN dots {must}, named {sorted(shown & set(dot_names))}")
        labels[name] = [dot_names[j] for j in outliers if dot_names[j] in shown]
        if fails:
            red = np.array([int(figs.GRADE_COLOURS["FAIL"][i:i + 2], 16) / 255 for i in (1, 3, 5)])
            check((np.abs(on_disk[..., :3] - red).max(axis=2) < 0.02).sum() > 10, f"{name}: no FAIL-coloured pixels")
    plt.close(fig)

    # 3. The heatmap, drawn again: the rows that matter in order, the left-out count, each cell its
    # node's worst GPU in tolerances, FAIL cells 1 or more, each row's words.
    heat, rows_said, left_out = {}, {}, ""
    path = os.path.join(plots, "fleet_heatmap.png")
    if check(os.path.isfile(path), "no fleet_heatmap.png"):
        hm = figs.draw_heatmap(data)
        check(same_pixels(hm, path), "heatmap: the PNG is not what the module draws")
        ax = hm.axes[0]
        rows = [t.get_text() for t in ax.get_yticklabels()]
        index = {f"{n} {g}": i for i, (n, g) in enumerate(zip(names, grades))}
        check(all(r in index for r in rows), f"heatmap rows {rows[:5]} are not nodes")
        shown = [index[r] for r in rows if r in index]
        # fleet.json's cells: per node and figure the worst line (worst grade, most tolerances worse)
        cells = {}
        for (node, family, figure, gpu), line in want.items():
            key = (node, family, figure)
            rank = (GRADE_RANK.get(line["grade"], 4), -(line["score"] if line["score"] is not None else -math.inf))
            if key not in cells or rank < cells[key][0]:
                cells[key] = (rank, gpu, line)
        worst = {}
        for (node, _, _), (_, _, line) in cells.items():
            if line["score"] is not None:
                worst[node] = max(worst.get(node, -math.inf), line["score"])
        fail_cell = {node for (node, _, _), (_, _, line) in cells.items() if line["grade"] == "FAIL"}

        def order_key(i):
            n = names[i]
            rank = GRADE_RANK.get(grades[i], 4)
            by_worst = -worst.get(n, -math.inf) if n in fail_cell or rank > 0 else 0
            return rank, n not in fail_cell, by_worst, i
        expected_rows = sorted(range(len(names)), key=order_key)[:figs.HEATMAP_ROWS]
        check(shown == expected_rows, f"heatmap rows {rows[:12]}, expected {[names[i] for i in expected_rows[:12]]}")
        left = [grades[i] for i in range(len(names)) if i not in set(shown)]
        said = [t.get_text() for t in hm.texts if t.get_gid() == "left out"]
        left_out = said[0] if said else ""
        if left:
            check(left_out.startswith(f"{len(left):,} more nodes not shown") and
                  (("all PASS" in left_out) == (set(left) == {"PASS"})), f"heatmap: left out {len(left)} ({set(left)}), it says {said}")
            for g in set(left) - {"PASS"}:
                check(f"{left.count(g):,} {g}" in left_out, f"heatmap: {left.count(g)} {g} left out, it says {said}")
        else:
            check(left_out.startswith(f"All {len(names):,} nodes shown"), f"heatmap: every node shown, it says {said}")
        why = {t.get_gid(): t.get_text() for t in ax.texts if (t.get_gid() or "").startswith("why ")}
        cell_texts = {t.get_gid(): t.get_text() for t in ax.texts if (t.get_gid() or "").startswith("cell ")}
        columns = [t.get_text() for t in ax.get_xticklabels()]
        figures = sorted({(e["family"], e["figure"]) for e in data["figures"]})
        image = ax.images[0].get_array() if ax.images else None
        colours = plt.get_cmap("RdBu_r")
        several = any(len(set(e["gpu"])) > 1 for e in data["figures"])
        for r, i in enumerate(shown):
            rows_said[rows[r]] = why.get(f"why {r}", "")
            reason = data["nodes"]["reason"][i]
            if reason:  # the reason, or as much of it as the row's room holds (the rest cut at "…")
                said = rows_said[rows[r]]
                check(reason in said or (said.endswith("…") and any(part.rstrip("…") and reason.startswith(part.rstrip("…"))
                                                                    for part in said.split("; "))),
                      f"heatmap row {rows[r]}: {said!r}, its reason {reason!r}")
            if grades[i] in ("FAIL", "WARN"):
                check(rows_said[rows[r]] != "", f"heatmap row {rows[r]}: nothing says why")
            for j, (family, figure) in enumerate(figures):
                found_cell = cells.get((names[i], family, figure))
                if found_cell is None:
                    continue
                _, gpu, line = found_cell
                if line["grade"] == "FAIL":
                    check(line["score"] is None or line["score"] >= 1, f"{rows[r]} {gpu} {figure}: a FAIL {line['score']} tolerances worse")
                if line["score"] is not None and image is not None:
                    want_rgb = np.round(np.array(colours((max(-2, min(2, line["score"])) + 2) / 4)[:3]) * 255)
                    check(np.abs(image[r, j, :3].astype(float) - want_rgb).max() <= 1,
                          f"{rows[r]} {figure}: cell colour {image[r, j, :3]}, {line['score']:.2f} tolerances is {want_rgb}")
                if line["grade"] in ("FAIL", "WARN"):
                    text = cell_texts.get(f"cell {r} {j}", "")
                    value = f"{line['score']:.1f}" if line["score"] is not None else None
                    check(text.startswith(value) if value else text.endswith("%") or " g" in text,
                          f"{rows[r]} {figure}: cell {text!r}, its worst line {gpu} {line['score']}")
                    if several:
                        check(text.endswith(gpu.replace("GPU ", "g")), f"{rows[r]} {figure}: cell {text!r} names not {gpu}")
                    if line["grade"] == "FAIL" and value:
                        heat[f"{names[i]} {gpu} {family} {figure}"] = float(value)
        check(len(columns) == (len(figures) if cells else 0), f"heatmap: {len(columns)} columns, {len(figures)} figures")
        plt.close(hm)

    print(json.dumps({"figures": len(data["figures"]), "labels": labels, "heatmap_fail_cells": heat,
                      "heatmap_rows": rows_said, "heatmap_left_out": left_out}))
    if failures:
        print("FAIL: the fleet figures:\n  " + "\n  ".join(failures[:30]), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
