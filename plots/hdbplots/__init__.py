"""hdbench plot families, found by module name.

A family's figures live in `hdbplots/<family>.py`, which defines
`figures(run: common.Run) -> list[common.FigureJob]`. plot_run.py asks `family_module(name)`
for the `family` column's value, so a new family (overlap, sync, p2p, allreduce) is one new
module and no change anywhere else.
"""
from __future__ import annotations

import importlib
import importlib.util
import re
from types import ModuleType

_FAMILY_NAME = re.compile(r"[a-z][a-z0-9_]*")


def family_module(family: str) -> ModuleType | None:
    """The plotting module of a family, or None when there is none.

    Only plain lowercase identifiers are looked up, and only modules that define `figures`
    count, so a CSV value can never import an arbitrary module or a helper like `common`.
    An error *inside* an existing module propagates: that is a bug to report, not "no plots".
    """
    if not _FAMILY_NAME.fullmatch(family):
        return None
    name = f"{__name__}.{family}"
    if importlib.util.find_spec(name) is None:
        return None
    module = importlib.import_module(name)
    return module if callable(getattr(module, "figures", None)) else None
