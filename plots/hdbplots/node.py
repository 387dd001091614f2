"""Node figures: the GPUs of a node side by side, one figure per figure `hdbench check` graded.

A bring-up engineer's first question about an 8-GPU node is "which GPU is different?"; the
per-GPU sweep figures answer it only by flipping through eight copies of each. Here every figure
of RUN/check.json (`hdbench check RUN --format json`, which the harness writes before plotting)
that was measured on two or more GPUs, or GPU pairs, becomes one figure: the value of each GPU
as a bar coloured by its grade, with the reference set's band (low–high, centre line) or the
theoretical peak the check held it to, and a title that names the outlier:

    pinned h2d 1 GiB: GPU 5 is 20 % below the others (FAIL)
    staged loopback 1 GiB: all 8 GPUs within the band

Pair figures (the text carries `src=N dst=M`, the same for every pair once they are taken out)
are a source × destination heatmap instead. Figures of one GPU get no figure of their own: there
is nothing beside them to compare with. The node at a glance draws every checked figure of the
run on one axis and, below them, the health lines (a link's width, the clocks, other processes)
with their grades and readings, so the node's figures and its health are read together. The figures are planned
like a family's (figures.Planned), but check.json, not the CSV rows, says which exist; they are
named node_<family>_<figure> (slugged) and belong to no family's FIGURES.
"""
from __future__ import annotations

import json
import math
import re
import statistics
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
from matplotlib.figure import Figure as MplFigure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Rectangle

from .claims import claim
from .drawing import REFERENCE_LINE, figure_legend, finish, new_figure
from .figures import Figure, Planned, Scope
from .formatting import format_number
from .run import Run

CHECK_FILE = "check.json"
# Parameters whose value says what it is ("pinned", "1 GiB"): the glance's labels leave their names out.
UNNAMED_KEYS = {"api", "direction", "host_kind", "size_bytes", "regime", "dtype", "placement", "interconnect", "launch"}
GLANCE = "node_at_a_glance"  # every checked figure of the run on one axis, against its band or peak
FAMILY = "node"  # what plot_run reports these figures under
GRADE_COLORS = {"PASS": "#009E73", "WARN": "#E69F00", "FAIL": "#D55E00", "INFO": "#999999"}
GRADE_RANK = {"PASS": 0, "INFO": 0, "WARN": 1, "FAIL": 2}  # INFO: not graded, so never worse
GRADE_WORDS = {"INFO": "not graded"}
BAND_COLOR = "0.35"
# Without a reference band the node's own GPUs are the yardstick, and a GPU this far from their
# median in the bad direction is named even though its grade (against a peak, or none) let it
# pass: 10 % is several times the run-to-run spread of a healthy GPU's headline figures (the
# h200 set detects changes of 0.6-3.8 %) and less than a link trained down or a card held
# back costs.
SPREAD_TOLERANCE = 0.10
HEALTH_TEXT = 46  # characters of a health line's evidence beside the glance: its start says what to look at
_PAIR_TOKEN = re.compile(r"\s*\b(src|dst)=(\d+)")


@dataclass(frozen=True)
class Member:
    """One GPU's (or one ordered pair's) line of a figure in check.json."""
    gpus: tuple[int, ...]
    pair: tuple[int, int] | None
    value: float
    grade: str
    expected: Mapping[str, Any] | None

    @property
    def label(self) -> str:
        """Its tick label: '5', or '3→5' for a pair."""
        return f"{self.pair[0]}→{self.pair[1]}" if self.pair else ",".join(map(str, self.gpus))

    @property
    def name(self) -> str:
        """How a title names it: 'GPU 5', 'GPUs 0,1', 'GPU 3 → GPU 5'."""
        if self.pair:
            return f"GPU {self.pair[0]} → GPU {self.pair[1]}"
        return f"{'GPUs' if len(self.gpus) > 1 else 'GPU'} {self.label}"

    @property
    def band(self) -> tuple[float, float, float] | None:
        """(low, centre, high) of the reference set, None when it was held to a peak or nothing."""
        e = self.expected or {}
        parts = [e.get(k) for k in ("low", "centre", "high")]
        return tuple(float(p) for p in parts) if all(_number(p) for p in parts) else None  # type: ignore[return-value]

    @property
    def peak(self) -> float | None:
        """The theoretical rate the check held the value to (its traffic's share), None without one."""
        e = self.expected or {}
        if not _number(e.get("peak")):
            return None
        factor = e.get("traffic_factor") if _number(e.get("traffic_factor")) else 1.0
        return float(e["peak"]) / float(factor)


@dataclass(frozen=True)
class NodeGroup:
    """One figure of check.json on every GPU (or pair) that measured it."""
    family: str
    figure: str           # the check's text, src=/dst= taken out for a pair figure
    unit: str
    metric: str           # the metric's name in the family's declaration, for the axis
    better: str           # "higher", "lower" or "neutral", from that declaration
    members: tuple[Member, ...]

    @property
    def file_name(self) -> str:
        return "node_" + re.sub(r"[^a-z0-9]+", "_", f"{self.family} {self.figure}".lower()).strip("_")

    @property
    def pairs(self) -> bool:
        return all(m.pair for m in self.members)


# ---------------------------------------------------------------- reading check.json

def plan(run: Run) -> tuple[list[Planned], list[str]]:
    """The node figures check.json calls for, and one line saying why there are none."""
    path = run.directory / CHECK_FILE
    check, why = read_check(path)
    if check is None:
        return [], [f"no node figures: {why}"]
    groups = node_groups(run, check["lines"])
    graded_against = reference_text(check)
    glance = [Planned(GLANCE, FAMILY, Figure(GLANCE, needs=(), draw=partial(glance_figure, check=check)), Scope(run, ()))
              if glance_lines(check["lines"]) else None]
    if not groups:
        return [g for g in glance if g], [f"no node figures: no figure of {path} was measured on more than one "
                                          f"GPU or GPU pair" + (f" (only {GLANCE} is drawn)" if glance[0] else "")]
    return [g for g in glance if g] + [
        Planned(g.file_name, FAMILY, Figure(g.file_name, needs=(), draw=partial(draw, group=g,
                                                                                graded_against=graded_against)),
                Scope(run, ())) for g in groups], []


def read_check(path: Path) -> tuple[dict | None, str]:
    """check.json as a dict with a `lines` list, or None and why not (a missing file is normal:
    a run plotted before the harness checked it, or by hand)."""
    if not path.is_file():
        return None, f"{path} not found (`hdbench check {path.parent} --format json > {path}` writes it)"
    try:
        check = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        return None, f"{path} unreadable ({error})"
    if not isinstance(check, dict) or not isinstance(check.get("lines"), list):
        return None, f"{path} has no `lines` list (not the output of `hdbench check --format json`)"
    return check, ""


def node_groups(run: Run, lines: Sequence[Any]) -> list[NodeGroup]:
    """Every figure with a value on two or more GPUs or pairs, in check.json's order."""
    found: dict[tuple[str, str], dict[tuple, Member]] = {}
    units: dict[tuple[str, str], str] = {}
    for line in lines:
        if not isinstance(line, dict) or line.get("family") in (None, "", "health") or not _number(line.get("value")):
            continue
        gpus = line.get("gpus")
        if not isinstance(gpus, list) or not gpus or not all(isinstance(g, int) and not isinstance(g, bool) for g in gpus):
            continue
        text, pair = split_pair(str(line.get("figure") or ""))
        key = (str(line["family"]), text)
        member = Member(tuple(gpus), pair if pair and pair[0] != pair[1] else None, float(line["value"]),
                        str(line.get("grade") or "INFO"),
                        line.get("expected") if isinstance(line.get("expected"), dict) else None)
        found.setdefault(key, {}).setdefault(member.pair or member.gpus, member)
        units.setdefault(key, str(line.get("unit") or ""))
    groups = []
    for (family, text), members in found.items():
        if len(members) < 2:
            continue
        metric, better = declared_metric(run, family, text)
        groups.append(NodeGroup(family, text, units[(family, text)], metric, better,
                                tuple(members[k] for k in sorted(members))))
    return groups


def split_pair(text: str) -> tuple[str, tuple[int, int] | None]:
    """'bandwidth (api=staged dst=1 src=0)' → ('bandwidth (api=staged)', (0, 1)); a text without
    both comes back as it is. A loopback's src = dst is taken out too: it is that GPU's figure."""
    found = dict((name, int(index)) for name, index in _PAIR_TOKEN.findall(text))
    if "src" not in found or "dst" not in found:
        return text, None
    stripped = _PAIR_TOKEN.sub("", text).replace("( ", "(").replace(" ()", "")
    return stripped, (found["src"], found["dst"])


def declared_metric(run: Run, family: str, text: str) -> tuple[str, str]:
    """(metric, better) of a check's figure, from the family's declaration in meta.json: a named
    check's metric, else the metric a generic text names ('case metric (…)' or 'metric (…)');
    'higher' when the declaration does not say, as `hdbench check` grades it."""
    declaration = run.declarations.get(family)
    schema = declaration.schema if declaration else {}
    checks = schema.get("checks") if isinstance(schema.get("checks"), list) else []
    metrics = schema.get("metrics") if isinstance(schema.get("metrics"), dict) else {}
    named = next((c.get("metric") for c in checks if isinstance(c, dict) and c.get("label")
                  and (text == c["label"] or text.startswith(f"{c['label']} ("))), None)
    words = text.split(" (")[0].split()
    metric = str(named or (words[-1] if words else ""))
    spec = metrics.get(metric) if isinstance(metrics.get(metric), dict) else {}
    better = spec.get("better") if spec.get("better") in ("higher", "lower", "neutral") else "higher"
    return metric, better


def reference_text(check: Mapping[str, Any]) -> str:
    """What the grades are against, for the panel title."""
    reference = check.get("reference")
    if isinstance(reference, dict) and reference.get("name"):
        runs = reference.get("runs")
        return f"graded against reference set {reference['name']}" + (f" ({runs} runs)" if runs else "")
    return "graded against theoretical peaks (no reference set of this node kind)"


# ---------------------------------------------------------------- the outlier

def title(group: NodeGroup) -> str:
    """The figure's text and the verdict: which GPU is different, or that none is."""
    members = group.members
    every = f"{'both' if len(members) == 2 else f'all {len(members)}'} {'pairs' if group.pairs else 'GPUs'}"
    flagged = [m for m in members if is_outlier(group, m)]
    if not flagged:
        if any(m.band for m in members):
            return f"{group.figure}: {every} within the band"
        middle = statistics.median(m.value for m in members)
        spread = max(abs(m.value / middle - 1) for m in members) if middle else 0.0
        grades = {m.grade for m in members}
        grade = f" ({'all ' + next(iter(grades)) if grades != {'INFO'} else 'not graded'})" if len(grades) == 1 else ""
        return f"{group.figure}: {every} within {format_number(spread * 100, 2)} % of their median{grade}"
    worst = max(flagged, key=lambda m: badness(group, m))
    if len(flagged) == len(members):
        side = "below" if worst.value < reference(group, worst) else "above"
        return (f"{group.figure}: {every} {side} the band, {worst.name} the farthest "
                f"({percent(worst.value, reference(group, worst))} % {side} its centre, {grade_word(worst.grade)})")
    others = [m.value for m in members if m not in flagged]
    middle = statistics.median(others)
    side = "below" if worst.value < middle else "above"
    common = set.intersection(*(set(m.pair) for m in flagged)) if group.pairs and len(flagged) > 1 else set()
    if common:
        gpu = min(common)
        return (f"{group.figure}: the pairs with GPU {gpu} are up to {percent(worst.value, middle)} % {side} "
                f"the others ({grade_word(worst.grade)})")
    text = f"{group.figure}: {worst.name} is {percent(worst.value, middle)} % {side} the others ({grade_word(worst.grade)})"
    rest = [m for m in flagged if m is not worst]
    if rest:
        text += "; also " + ", ".join(f"{m.name} ({grade_word(m.grade)})" for m in rest)
    return text


def is_outlier(group: NodeGroup, member: Member) -> bool:
    """Off in the bad direction, and by more than the band's half-width (outside the band), or
    graded worse than most of the node (a grade every GPU shares is the node's, not one GPU's),
    or without a band by more than SPREAD_TOLERANCE from the GPUs' median."""
    if badness(group, member) <= 0:
        return False
    band = member.band
    if band and abs(member.value - band[1]) > (band[2] - band[0]) / 2:
        return True
    typical = statistics.median_low(GRADE_RANK.get(m.grade, 0) for m in group.members)
    if GRADE_RANK.get(member.grade, 0) > typical:
        return True
    return band is None and badness(group, member) > SPREAD_TOLERANCE


def reference(group: NodeGroup, member: Member) -> float:
    """What a member is measured from: its band's centre, else the median of the node's GPUs."""
    return member.band[1] if member.band else statistics.median(m.value for m in group.members)


def badness(group: NodeGroup, member: Member) -> float:
    """How far a member is from its reference in the direction that is worse (a fraction; < 0: better)."""
    centre = reference(group, member)
    if not centre:
        return 0.0
    change = member.value / centre - 1
    return {"higher": -change, "lower": change}.get(group.better, abs(change))


def percent(value: float, of: float) -> str:
    return format_number(abs(value / of - 1) * 100, 2) if of else "?"


def grade_word(grade: str) -> str:
    return GRADE_WORDS.get(grade, grade)


# ---------------------------------------------------------------- drawing

def draw(scope: Scope, group: NodeGroup, graded_against: str) -> MplFigure:
    fig = heatmap(group, graded_against) if group.pairs else bars(group, graded_against)
    legend = figure_legend(fig, *legend_entries(group), max_cols=6)
    return finish(fig, title(group), scope.run.subtitle(), legend)


def axis_label(group: NodeGroup) -> str:
    return f"{group.metric.replace('_', ' ')} ({group.unit})" if group.unit else group.metric.replace("_", " ")


def bars(group: NodeGroup, graded_against: str) -> MplFigure:
    """One bar per GPU, coloured by grade; the band or the peak drawn over each GPU's own bar."""
    members = group.members
    fig, (ax,) = new_figure(width=max(9.5, 2.5 + 0.75 * len(members)), height=5.2)
    x = np.arange(len(members))
    ax.bar(x, [m.value for m in members], width=0.7, color=[GRADE_COLORS.get(m.grade, GRADE_COLORS["INFO"]) for m in members],
           edgecolor="0.25", linewidth=0.6, zorder=2)
    top = max(m.value for m in members)
    flagged = [m for m in members if is_outlier(group, m)]
    others = [m.value for m in members if m not in flagged] or [m.value for m in members]
    for i, m in enumerate(members):
        if m.band:
            low, centre, high = m.band
            ax.add_patch(Rectangle((i - 0.5, low), 1.0, high - low, color=BAND_COLOR, alpha=0.3, linewidth=0, zorder=3))
            ax.hlines(centre, i - 0.5, i + 0.5, color=BAND_COLOR, linewidth=1.3, zorder=4)
            top = max(top, high)
        elif m.peak:
            ax.hlines(m.peak, i - 0.5, i + 0.5, zorder=4, **REFERENCE_LINE)
            top = max(top, m.peak)
        change = f"\n{(m.value / statistics.median(others) - 1) * 100:+.0f} %" if m in flagged else ""
        ax.annotate(format_number(m.value) + change, (i, m.value), xytext=(0, 3), textcoords="offset points",
                    ha="center", va="bottom", fontsize=8, zorder=5, fontweight="bold" if change else "normal")
    ax.set_xticks(x, [m.label for m in members])
    ax.set_xlim(-0.6, len(members) - 0.4)
    ax.set_xlabel("GPU pair (source → destination)" if any(m.pair for m in members)
                  else "GPU (CUDA index)" if all(len(m.gpus) == 1 for m in members) else "GPUs (CUDA indices)")
    ax.set_ylabel(axis_label(group))
    ax.set_ylim(0, top * 1.15)
    ax.grid(False, axis="x")
    ax.set_title(f"{group.family} · {len(members)} {'GPUs' if not group.pairs else 'pairs'} · {graded_against}",
                 loc="left", fontsize=9, color="0.3")
    return fig


def heatmap(group: NodeGroup, graded_against: str) -> MplFigure:
    """Source × destination, colour = value; a cell not graded PASS is framed in its grade's colour."""
    members = group.members
    gpus = sorted({g for m in members for g in m.pair or ()})
    index = {g: i for i, g in enumerate(gpus)}
    grid = np.full((len(gpus), len(gpus)), np.nan)
    for m in members:
        grid[index[m.pair[0]], index[m.pair[1]]] = m.value  # type: ignore[index]
    side = 2.2 + 0.6 * len(gpus)
    fig, (ax,) = new_figure(width=max(8.5, side + 2.3), height=side + 1.6)
    ax.grid(False)
    # From zero, as the bars are: noise between healthy pairs stays one colour, a slow pair shows.
    high = max([m.value for m in members] + [m.band[2] for m in members if m.band] + [m.peak or 0 for m in members])
    image = ax.imshow(np.ma.masked_invalid(grid), cmap="viridis", vmin=0, vmax=high or 1, aspect="auto")
    for m in members:
        row, col = index[m.pair[0]], index[m.pair[1]]  # type: ignore[index]
        shade = image.cmap(image.norm(m.value))
        ink = "black" if 0.299 * shade[0] + 0.587 * shade[1] + 0.114 * shade[2] > 0.5 else "white"
        text = format_number(m.value) + ("" if m.grade in ("PASS", "INFO") else f"\n{m.grade}")
        ax.text(col, row, text, ha="center", va="center", fontsize=7.5, color=ink)
        if m.grade not in ("PASS", "INFO"):
            ax.add_patch(Rectangle((col - 0.46, row - 0.46), 0.92, 0.92, fill=False,
                                   edgecolor=GRADE_COLORS.get(m.grade, "black"), linewidth=2.5))
    ax.set_xticks(range(len(gpus)), [str(g) for g in gpus])
    ax.set_yticks(range(len(gpus)), [str(g) for g in gpus])
    ax.set_xlabel("destination GPU")
    ax.set_ylabel("source GPU")
    ax.set_title(f"{group.family} · {len(members)} pairs · {graded_against}", loc="left", fontsize=9, color="0.3")
    bar = fig.colorbar(image, ax=ax, fraction=0.05, pad=0.03)
    bar.set_label(axis_label(group))
    bands = {m.band for m in members if m.band}
    if len(bands) == 1:  # one band for every pair: shown on the scale it is read against
        band_low, centre, band_high = next(iter(bands))
        bar.ax.axhspan(band_low, band_high, color="white", alpha=0.45)
        bar.ax.axhline(centre, color="black", linewidth=1.2)
    for peak in {m.peak for m in members if m.peak and not m.band}:
        bar.ax.axhline(peak, **REFERENCE_LINE)
    return fig


def legend_entries(group: NodeGroup) -> tuple[list, list[str]]:
    """The grades present (on a heatmap only the framed ones), then what the band or the peak is."""
    grades = [g for g in GRADE_COLORS if any(m.grade == g for m in group.members)
              and not (group.pairs and g in ("PASS", "INFO"))]
    handles: list = []
    labels: list[str] = []
    for grade in grades:
        handles.append(Patch(facecolor=GRADE_COLORS[grade], edgecolor="0.25") if not group.pairs
                       else Patch(facecolor="none", edgecolor=GRADE_COLORS[grade], linewidth=2.5))
        labels.append(grade_word(grade))
    banded = [m for m in group.members if m.band]
    if banded:
        low, centre, high = banded[0].band  # type: ignore[misc]
        runs = (banded[0].expected or {}).get("runs")
        same = all(m.band == banded[0].band for m in banded)
        span = f": {format_number(low, 4)}–{format_number(high, 4)} {group.unit}" if same else " of each"
        handles += [Patch(facecolor=BAND_COLOR, alpha=0.3 if not group.pairs else 0.0, edgecolor="none"),
                    Line2D([], [], color=BAND_COLOR if not group.pairs else "black", linewidth=1.3)]
        labels += [f"reference band{span}" + (f" ({runs} runs)" if runs else ""), "band centre"]
    peaked = [m for m in group.members if m.peak and not m.band]
    if peaked:
        # The basis names the first GPU ("PCIe per direction, GPU 0"); the line is each GPU's own.
        basis = re.sub(r",\s*GPUs?\s[\d, →>-]+$", "", str((peaked[0].expected or {}).get("basis") or "peak"))
        peaks = {m.peak for m in peaked}
        value = f": {format_number(peaked[0].peak)} {group.unit}" if len(peaks) == 1 else ""  # type: ignore[arg-type]
        handles.append(Line2D([], [], **REFERENCE_LINE))
        labels.append(f"theoretical peak ({basis}){value}")
    return handles, labels


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


# ---------------------------------------------------------------- the node at a glance

@dataclass(frozen=True)
class Checked:
    """One numeric line of check.json: where it is (index in `lines`), what it is, and what it
    is measured from (the band's centre, else the theoretical peak, else nothing)."""
    index: int
    family: str
    figure: str
    gpus: tuple[int, ...]
    value: float
    unit: str
    grade: str
    tolerance: float | None
    host_bound: bool
    band: tuple[float, float, float] | None
    peak: float | None

    @property
    def reference(self) -> float | None:
        return self.band[1] if self.band else self.peak

    @property
    def label(self) -> str:
        """'copy: bandwidth (async, h2d, pinned, 1 GiB, streams=1) · GPU 0', parameters' names
        left out where the value says what it is."""
        figure = self.figure
        head, _, inside = figure.partition(" (")
        if inside.endswith(")"):
            items = re.split(r"\s+(?=[a-z_]+=)", inside[:-1].strip())
            shown = [item.split("=", 1)[1] if item.split("=", 1)[0] in UNNAMED_KEYS else item for item in items]
            figure = f"{head} ({', '.join(shown)})"
        where = f"GPU {self.gpus[0]}" if len(self.gpus) == 1 else f"GPUs {','.join(map(str, self.gpus))}"
        return f"{self.family}: {figure} · {where}"


@dataclass(frozen=True)
class Health:
    """One health line of check.json: an item of one GPU (or of the node) and its evidence."""
    item: str
    gpus: tuple[int, ...]
    grade: str
    reading: str
    reason: str

    @property
    def label(self) -> str:
        """'health: PCIe link · GPU 0'; 'health: health not read · node' for the node as a whole."""
        where = f"GPU {','.join(map(str, self.gpus))}" if self.gpus else "node"
        return f"health: {self.item} · {where}"

    @property
    def evidence(self) -> str:
        """Its reading, and for a WARN or FAIL the start of check's reason: what to look at."""
        if self.grade not in ("WARN", "FAIL") or not self.reason:
            return self.reading
        text = f"{self.reading}: {self.reason}" if self.reading not in ("", "-") else self.reason
        return text if len(text) <= HEALTH_TEXT else text[:HEALTH_TEXT - 1] + "…"


def health_lines(lines: Sequence[Any]) -> list[Health]:
    """Every health line of check.json, in its order."""
    return [Health(str(line.get("figure") or ""),
                   tuple(g for g in line.get("gpus") or [] if isinstance(g, int) and not isinstance(g, bool)),
                   str(line.get("grade") or "INFO"), str(line.get("reading") or ""), str(line.get("reason") or ""))
            for line in lines if isinstance(line, dict) and line.get("family") == "health"]


def glance_lines(lines: Sequence[Any]) -> list[Checked]:
    """Every line of check.json with a value (health lines carry none), in its order."""
    found = []
    for index, line in enumerate(lines):
        if not isinstance(line, dict) or line.get("family") in (None, "", "health") or not _number(line.get("value")):
            continue
        gpus = tuple(g for g in line.get("gpus") or [] if isinstance(g, int) and not isinstance(g, bool))
        member = Member(gpus, None, float(line["value"]), str(line.get("grade") or "INFO"),
                        line.get("expected") if isinstance(line.get("expected"), dict) else None)
        found.append(Checked(index, str(line["family"]), str(line.get("figure") or ""), gpus, member.value,
                             str(line.get("unit") or ""), member.grade,
                             float(line["tolerance"]) if _number(line.get("tolerance")) else None,
                             bool(line.get("host_bound")), member.band, member.peak))
    return found


def glance_figure(scope: Scope, check: Mapping[str, Any]) -> MplFigure | None:
    """One row per checked figure: its value as a share of its band's centre (circle) or of its
    theoretical peak (diamond), the band shaded, the tolerance marked, coloured by grade; then one
    row per health line: its grade and reading (a health line has no value to place)."""
    lines = glance_lines(check["lines"])
    if not lines:
        return None
    health = health_lines(check["lines"])
    run = scope.run
    rows = len(lines) + len(health)
    fig, (ax,) = new_figure(width=14.0, height=2.4 + 0.3 * rows)
    y = np.arange(rows)[::-1]
    shares = []
    for yi, item in zip(y[len(lines):], health):
        color = GRADE_COLORS.get(item.grade, GRADE_COLORS["INFO"])
        ax.plot([0.012], [yi], marker="s", markersize=8, color=color, markeredgecolor="0.2", linestyle="none",
                transform=ax.get_yaxis_transform(), clip_on=False, zorder=5)
        ax.annotate(f"{grade_word(item.grade)}  {item.evidence}", (1.01, yi), xycoords=("axes fraction", "data"), ha="left",
                    va="center", fontsize=8, color=color if item.grade in ("WARN", "FAIL") else "0.2",
                    fontweight="bold" if item.grade in ("WARN", "FAIL") else "normal", annotation_clip=False)
    if health:
        ax.axhline(len(health) - 0.5, color="0.5", linewidth=0.8, zorder=1)
    for yi, line in zip(y, lines):
        color = GRADE_COLORS.get(line.grade, GRADE_COLORS["INFO"])
        if yi % 2 == 0:
            ax.axhspan(yi - 0.5, yi + 0.5, color="0.965", zorder=0, linewidth=0)
        reference = line.reference
        value_text = f"{format_number(line.value)} {line.unit}".strip()
        if reference:
            share = line.value / reference * 100
            shares.append(share)
            if line.band:
                low, centre, high = line.band
                shares += [low / centre * 100, high / centre * 100]
                ax.add_patch(Rectangle((low / centre * 100, yi - 0.32), (high - low) / centre * 100, 0.64,
                                       color=BAND_COLOR, alpha=0.3, linewidth=0, zorder=2))
                if line.tolerance:
                    better = declared_metric(run, line.family, line.figure)[1]
                    limit = {"higher": 100 * (1 - line.tolerance), "lower": 100 * (1 + line.tolerance)}.get(better)
                    if limit is not None:
                        ax.vlines(limit, yi - 0.36, yi + 0.36, color=GRADE_COLORS["FAIL"], linewidth=1.2, zorder=3)
                        shares.append(limit)
            ax.plot([share], [yi], marker="o" if line.band else "D", markersize=8, color=color,
                    markeredgecolor="0.2", linestyle="none", zorder=5)
            basis = "of the band's centre" if line.band else "of the peak"
            value_text += f"  ({format_number(share, 3)} % {basis})"
        else:
            value_text += "  (no band, no peak)"
        text = f"{grade_word(line.grade)}  {value_text}" + (", host-bound" if line.host_bound else "")
        ax.annotate(text, (1.01, yi), xycoords=("axes fraction", "data"), ha="left", va="center", fontsize=8,
                    color=color if line.grade in ("WARN", "FAIL") else "0.2",
                    fontweight="bold" if line.grade in ("WARN", "FAIL") else "normal", annotation_clip=False)
    ax.axvline(100, color="0.2", linewidth=1.0, zorder=1)
    low = min(shares + [60.0])
    high = max(shares + [110.0])
    ax.set_xlim(max(0.0, low - 8), high + 6)
    ax.set_yticks(y, [line.label for line in lines] + [item.label for item in health], fontsize=8)
    ax.set_ylim(-0.6, rows - 0.4)
    ax.grid(False, axis="y")
    ax.set_xlabel("value ÷ what it is held to (%): the reference band's centre (●), else the theoretical peak (◆); "
                  "health lines (■) by their reading")
    ax.set_title(f"{len(lines)} checked figures, {len(health)} health lines · {reference_text(check)}", loc="left",
                 fontsize=9, color="0.3")
    grades = {line.grade for line in lines} | {item.grade for item in health}
    handles = [Patch(facecolor=GRADE_COLORS[g], edgecolor="0.25") for g in GRADE_COLORS if g in grades]
    labels = [grade_word(g) for g in GRADE_COLORS if g in grades]
    if any(line.band for line in lines):
        handles += [Patch(facecolor=BAND_COLOR, alpha=0.3, edgecolor="none"),
                    Line2D([], [], color=GRADE_COLORS["FAIL"], linewidth=1.2)]
        labels += ["reference band (low–high)", "tolerance: worse than this FAILs"]
    legend = figure_legend(fig, handles, labels, max_cols=6)
    fig.tight_layout()
    text, claims = glance_lesson(check, lines, health)
    finish(fig, text, run.subtitle(), legend, claims)
    fig.subplots_adjust(right=0.74)
    return fig


def tally(grades: Sequence[str]) -> str:
    """'19 PASS, 1 WARN, 14 not graded'."""
    return ", ".join(f"{n} {grade_word(g)}" for g in GRADE_COLORS if (n := sum(1 for grade in grades if grade == g)))


def glance_lesson(check: Mapping[str, Any], lines: Sequence[Checked],
                  health: Sequence[Health]) -> tuple[str, list[dict]]:
    """How many checked figures got each grade, the worst one, as far below its reference, and
    the health lines' grades (a FAIL there is the node's, whatever its figures read)."""
    text = f"The node at a glance: {len(lines)} checked figures, {tally([line.grade for line in lines])}"
    claims: list[dict] = []
    graded = [line for line in lines if line.grade in ("WARN", "FAIL") and line.reference]
    if graded:
        worst = max(graded, key=lambda line: (GRADE_RANK.get(line.grade, 0), -line.value / line.reference))
        share = worst.value / worst.reference * 100  # type: ignore[operator]
        basis = "of its band's centre" if worst.band else "of its peak"
        shown = format_number(share, 2)
        text += f"; worst: {worst.family} {worst.figure.split(' (')[0]} at {shown} % {basis} ({worst.grade})"
        field = "expected.centre" if worst.band else "expected.peak"
        claims.append(claim(shown, share, [{"check_line": worst.index, "field": "value"},
                                           {"check_line": worst.index, "field": field}], "a/b*100"))
    else:
        text += "; none WARN or FAIL"
    if health:
        text += f"; health: {tally([item.grade for item in health])}"
    return text, claims
