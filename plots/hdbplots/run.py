"""One run directory as the plots see it: its typed rows (results_csv), its families' declarations
and the node facts of meta.json (every GPU, its PCIe and NVLink rates as the harness records them
in node.gpus[i].pcie.peak_GBps and nvlink.data_per_link_GBps: no rate table is kept in Python)."""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from .declarations import FamilyDeclaration, family_declarations
from .formatting import SUBTITLE_SEPARATOR
from .json_values import as_dict, as_text, positive
from .results_csv import (SCHEMA_VERSION, InputError, Row, core_columns, parameter_columns, parse_rows, read_csv,
                          with_spread)
from .selection import group


@dataclass(frozen=True)
class GpuInfo:
    """One GPU of meta.json's node.gpus; every field but the index may be unknown (None)."""
    index: int | None = None
    name: str | None = None
    uuid: str | None = None
    pcie_gen: int | None = None
    pcie_width: int | None = None
    # One direction's rate of this GPU's own PCIe link (GB/s): node.gpus[i].pcie.peak_GBps, which
    # the harness computes from the link (harness/src/peaks.cpp) and records; None when unknown.
    pcie_peak_gbps: float | None = None
    hbm_peak_gbps: float | None = None
    nvlink_links: int | None = None            # node.gpus[i].nvlink.links_active
    nvlink_data_per_link_gbps: float | None = None  # node.gpus[i].nvlink.data_per_link_GBps, one direction

    @property
    def link(self) -> str | None:
        """'PCIe Gen5 x16', or None when meta.json does not say."""
        return f"PCIe Gen{self.pcie_gen} x{self.pcie_width}" if self.pcie_gen and self.pcie_width else None

    @property
    def nvlink_gbps(self) -> float | None:
        """This GPU's NVLink data rate per direction: active links × the per-link data rate."""
        if self.nvlink_links and self.nvlink_data_per_link_gbps:
            return self.nvlink_links * self.nvlink_data_per_link_gbps
        return None

    def describe(self) -> str:
        """'NVIDIA H200, PCIe Gen5 x16': what the card is and how it reaches the host."""
        return ", ".join(p for p in (self.name or "unknown GPU", self.link) if p)


@dataclass(frozen=True)
class NodeInfo:
    """The few meta.json facts plots need; every field may be unknown (None).

    `gpus` holds every GPU of the node (a figure asks for the GPU it is about, Run.gpu_info, or
    for the GPUs a path crosses, Run.pcie_limit / Run.nvlink_bus_rate: never "the first GPU");
    `topology` is node.topology.
    """
    driver: str | None = None
    cuda_runtime: str | None = None
    gpus: tuple[GpuInfo, ...] = ()
    topology: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Run:
    """One run directory: its rows, its parameter columns, node facts and meta.json."""
    directory: Path
    run_id: str
    node: NodeInfo
    rows: tuple[Row, ...]
    meta: Mapping[str, Any] = field(default_factory=dict)
    param_columns: tuple[str, ...] = ()
    declarations: Mapping[str, "FamilyDeclaration"] = field(default_factory=dict)

    def families(self) -> list[str]:
        """Families in CSV order, each once."""
        return list(dict.fromkeys(r.family for r in self.rows if r.family))

    def ok_rows(self, family: str) -> list[Row]:
        """Measured/derived rows of one family; skipped and failed rows never reach a plot."""
        return [r for r in self.rows if r.family == family and r.status == "ok"
                and r.value is not None and math.isfinite(r.value)]

    def not_ok_rows(self) -> list[Row]:
        return [r for r in self.rows if r.status != "ok"]

    def family_meta(self, family: str) -> Mapping[str, Any]:
        """meta.json's families.<name> record ({} when absent)."""
        families = self.meta.get("families")
        record = families.get(family) if isinstance(families, dict) else None
        return record if isinstance(record, dict) else {}

    @property
    def verdict(self) -> bool:
        """A verdict run (`hdbench run --verdict`, meta.json `verdict`): only the checked and gated
        cases were measured, so a figure shows those points of its sweep and says so."""
        return self.meta.get("verdict") is True

    def subtitle(self) -> str:
        """The node's GPUs and links, software identity and run id, so a saved PNG is
        self-describing: '2 × NVIDIA H200, PCIe Gen5 x16 each  ·  driver …  ·  run …'."""
        return self._identity(describe_gpus(self.node.gpus) if self.node.gpus else GpuInfo().describe())

    def device_subtitle(self, device: int | str | None, uuid: str = "") -> str:
        """The subtitle of a figure about one GPU: 'GPU 1: NVIDIA H200, PCIe Gen5 x16  ·  …'."""
        gpu = self.gpu_info(device, uuid)
        name = gpu.describe() if gpu else "unknown GPU"
        return self._identity(f"GPU {device}: {name}" if device not in (None, "") else name)

    def gpu_info(self, device: int | str | None, uuid: str = "") -> GpuInfo | None:
        """meta.json's record of the GPU a row ran on: by UUID (exact even when CUDA and
        nvidia-smi number the cards differently), else by index; None/"" means the first GPU."""
        if uuid:
            for gpu in self.node.gpus:
                if gpu.uuid == uuid:
                    return gpu
        if device in (None, ""):
            return self.node.gpus[0] if self.node.gpus else None
        for gpu in self.node.gpus:
            if gpu.index is not None and str(gpu.index) == str(device).strip():
                return gpu
        return None

    def pcie_peak(self, device: int | str | None, uuid: str = "") -> float | None:
        """One direction's PCIe peak of the GPU a row ran on (GB/s), None when unknown."""
        gpu = self.gpu_info(device, uuid)
        return gpu.pcie_peak_gbps if gpu else None

    def row_devices(self, row: Row) -> list[int]:
        """The CUDA indices of every GPU a row spans, in device order: from its UUIDs through
        meta.json when they are known there, else `device`, `device`+1, … (`gpus` of them)."""
        uuids = split_list(row.gpu_uuid)
        count = row.gpus or max(1, len(uuids))
        known = [self.gpu_info(None, u) for u in uuids]
        if len(uuids) == count and all(g is not None and g.uuid == u for g, u in zip(known, uuids)):
            return [g.index for g in known if g is not None and g.index is not None]
        return [] if row.device is None else list(range(row.device, row.device + count))

    def row_gpus(self, row: Row) -> list[GpuInfo | None]:
        """The GPU record of every device of a row, in the row's order (None where unknown)."""
        uuids = split_list(row.gpu_uuid)
        return [self.gpu_info(d, uuids[i] if i < len(uuids) else "") for i, d in enumerate(self.row_devices(row))]

    def pcie_limit(self, gpus: Iterable[GpuInfo | None]) -> tuple[float, GpuInfo] | None:
        """(GB/s, GPU) of the slowest PCIe link of `gpus`, one direction: what a path through the
        host that crosses each of their links can reach (a host-staged pair: the smaller link of
        the two, as the p2p report rates it; a loopback: its GPU's own link). None when a GPU or
        its link rate is unknown. Of equal links the first GPU given is named."""
        chosen = list(gpus)
        if not chosen or any(g is None or g.pcie_peak_gbps is None for g in chosen):
            return None
        slowest = min(chosen, key=lambda g: g.pcie_peak_gbps)  # type: ignore[arg-type,return-value]
        return slowest.pcie_peak_gbps, slowest  # type: ignore[return-value,union-attr]

    def pair_gpus(self, src: int | str | None, dst: int | str | None, uuids: str = "") -> list[GpuInfo | None]:
        """The GPU records of a pair (a loopback: one GPU): by the row's UUIDs when meta.json knows
        them (`gpu_uuid` lists them in device order), else by the src and dst indices."""
        devices = list(dict.fromkeys(d for d in (src, dst) if d not in (None, "")))
        known = [self.gpu_info(None, u) for u in split_list(uuids)]
        if len(known) == len(devices) and all(known):
            return known
        return [self.gpu_info(d) for d in devices]

    def nvlink_bus_rate(self, gpus: Iterable[GpuInfo | None] | None = None) -> tuple[float, GpuInfo] | None:
        """(GB/s, GPU) of the slowest GPU's NVLink per direction (links_active × data_per_link_GBps of
        meta.json, the harness's `nvlink_bus` class), over `gpus` or every GPU of the node;
        None when meta.json does not give both numbers for every one of them."""
        chosen = [g for g in (self.node.gpus if gpus is None else gpus)]
        if not chosen or any(g is None or g.nvlink_gbps is None for g in chosen):
            return None
        slowest = min(chosen, key=lambda g: g.nvlink_gbps)  # type: ignore[arg-type,return-value]
        return slowest.nvlink_gbps, slowest  # type: ignore[return-value,union-attr]

    def _identity(self, gpus: str) -> str:
        parts = [gpus]
        if self.node.driver:
            parts.append(f"driver {self.node.driver}")
        if self.node.cuda_runtime:
            parts.append(f"CUDA {self.node.cuda_runtime}")
        parts.append(f"run {self.run_id}")
        if self.verdict:
            parts.append("verdict run: sweeps not measured")
        return SUBTITLE_SEPARATOR.join(parts)


def last_attempts(rows: Sequence[Row]) -> list[Row]:
    """Each case's rows of its last attempt: what the harness's verdict read (a run measures the
    cases behind a FAIL again, and results.csv keeps every try in its `attempt` column). A family's
    own row (no case) is always kept; a file without the column is one attempt."""
    def case_of(row: Row) -> tuple:
        return (row.family, row.case, row.device, row.gpus, tuple(sorted(row.params().items())))
    last: dict[tuple, int] = {}
    for row in rows:
        if row.case:
            last[case_of(row)] = max(last.get(case_of(row), 1), row.get("attempt", 1))
    return [row for row in rows if not row.case or row.get("attempt", 1) == last[case_of(row)]]


def load_run(directory: Path) -> tuple[Run, list[str]]:
    """Read DIR/results.csv and DIR/meta.json (which must record results.csv's core columns:
    core_columns()); return the run and warnings."""
    csv_path = directory / "results.csv"
    if not csv_path.is_file():
        raise InputError(f"{csv_path}: no such file (is {directory} a run directory?)")
    meta = load_meta(directory / "meta.json")
    header, records = read_csv(csv_path)
    core = core_columns(meta, directory)
    missing = [c for c in core.names if c not in header and c not in core.later]
    if missing:
        raise InputError(f"{csv_path}: not an hdbench results.csv of schema {SCHEMA_VERSION} "
                         f"(missing columns: {', '.join(missing)})")
    family_at = header.index("family")
    families = list(dict.fromkeys(r[family_at].strip() for r in records if family_at < len(r) and r[family_at].strip()))
    declarations, notes = family_declarations(meta, families)
    params, column_notes = parameter_columns(header, declarations, core)
    run_id, rows = parse_rows(csv_path, header, records, params, core)
    rows = last_attempts(rows)
    run_id = run_id or str(meta.get("run_id") or directory.name)
    statistics = sorted({r.statistic for r in rows if r.statistic and r.statistic not in core.statistics})
    if statistics:
        notes.append(f"results.csv has statistic {', '.join(statistics)}, which meta.json's results_csv "
                     f"does not list")
    return (Run(directory, run_id, node_info(meta), tuple(with_spread(rows)), meta, tuple(params), declarations),
            notes + column_notes)


def load_meta(path: Path) -> dict:
    """meta.json, {} when there is none (core_columns() then says how to get one); an unreadable
    one is an InputError."""
    if not path.is_file():
        return {}
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise InputError(f"{path}: unreadable ({error})") from None
    if not isinstance(meta, dict):
        raise InputError(f"{path}: not a JSON object")
    return meta


def node_info(meta: Mapping[str, Any]) -> NodeInfo:
    """Every GPU's name, PCIe link, HBM peak and NVLink; tolerate any missing level."""
    node = as_dict(meta.get("node"))
    records = [as_dict(g) for g in node.get("gpus")] if isinstance(node.get("gpus"), list) else []
    topology = as_dict(node.get("topology"))
    gpus = tuple(parse_gpu(g, position) for position, g in enumerate(records))
    return NodeInfo(driver=as_text(node.get("driver_release"))
                    or (as_text(records[0].get("driver_release")) if records else None),
                    cuda_runtime=as_text(node.get("cuda_runtime")), gpus=gpus, topology=topology)


def parse_gpu(gpu: Mapping[str, Any], position: int) -> GpuInfo:
    """One node.gpus record; without an "index" the list position stands in for it. Every rate is
    the one the harness records there (harness/src/traffic.cpp record_link_rates; no rate is
    computed or written in the plot code): one direction's PCIe peak pcie.peak_GBps, from the link's
    maximum generation and width (the current ones when the maximum is missing), and the NVLink
    nvlink.links_active and data_per_link_GBps (the data rate of the rate nvidia-smi reported)."""
    pcie = as_dict(gpu.get("pcie"))
    # The maximum is the link's capability; an idle link often trains down, so "current" is a fallback.
    gen = positive(pcie.get("gen_max")) or positive(pcie.get("gen_current"))
    width = positive(pcie.get("width_max")) or positive(pcie.get("width_current"))
    raw_index = gpu.get("index")
    index = raw_index if isinstance(raw_index, int) and not isinstance(raw_index, bool) else position
    nvlink = as_dict(gpu.get("nvlink"))
    links = positive(nvlink.get("links_active"))
    gen, width = (int(gen) if gen else None), (int(width) if width else None)
    return GpuInfo(index=index, name=as_text(gpu.get("name")), uuid=as_text(gpu.get("uuid")),
                   pcie_gen=gen, pcie_width=width, pcie_peak_gbps=positive(pcie.get("peak_GBps")),
                   hbm_peak_gbps=positive(gpu.get("hbm_peak_GBps")),
                   nvlink_links=int(links) if links else None,
                   nvlink_data_per_link_gbps=positive(nvlink.get("data_per_link_GBps")))


def describe_gpus(gpus: Sequence[GpuInfo]) -> str:
    """The node's GPUs in one line: '2 × NVIDIA H200, PCIe Gen5 x16 each' when they are alike,
    else one group per kind: 'GPUs 0–2: NVIDIA H200, PCIe Gen5 x16; GPU 3: NVIDIA H200, PCIe Gen4 x16'."""
    kinds = group(gpus, lambda g: (g.name, g.link))
    if len(kinds) == 1:
        members = next(iter(kinds.values()))
        text = members[0].describe()
        if len(members) == 1:
            return text
        return f"{len(members)} × {text}" + (" each" if members[0].link else "")
    return "; ".join(f"{'GPUs' if len(members) > 1 else 'GPU'} {index_ranges(g.index for g in members)}: "
                     f"{members[0].describe()}" for members in kinds.values())


def index_ranges(indices: Iterable[int | None]) -> str:
    """[0, 1, 2, 5] → '0–2, 5'."""
    known = sorted({i for i in indices if i is not None})
    spans: list[list[int]] = []
    for i in known:
        if spans and i == spans[-1][1] + 1:
            spans[-1][1] = i
        else:
            spans.append([i, i])
    return ", ".join(f"{a}" if a == b else f"{a}–{b}" if b > a + 1 else f"{a}, {b}" for a, b in spans)


def split_list(text: str) -> list[str]:
    """'GPU-a, GPU-b' → ['GPU-a', 'GPU-b']: the gpu_uuid column of a case spanning GPUs."""
    return [part.strip() for part in text.split(",") if part.strip()]
