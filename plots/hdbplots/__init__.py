"""hdbench plot modules, imported by the name a family declares.

A family's manifest entry (harness/suite.json) names its plot module (`"plots": "copy"`); the
harness copies it into the run's meta.json (`families.<name>.plots`), and plot_run imports
exactly that module, never one guessed from the CSV's `family` column. A module is looked up as
`<name>.py` in this package's directory first, then in each directory of the environment
variable HDBENCH_PLOT_MODULES (os.pathsep-separated), so a family that lives outside plots/
(the stand-in family of the tests) brings its own module with no edit here. A module declares
`FIGURES = [hdbplots.figures.Figure(...)]` (see figures.Figure and docs/plots.md) and draws with
the shared helpers: results_csv (typed rows), run (the run and its node), declarations,
selection, formatting, drawing and claims.
"""
from __future__ import annotations

import importlib
import importlib.util
import os
import re
import sys
from pathlib import Path
from types import ModuleType

# The figures do no linear algebra, but a threaded BLAS under numpy (Ubuntu's OpenBLAS) starts a
# pool of one thread per core at import, each with its own buffers: on the 16-core H200 node the
# 200-node fleet's drawers took 13.8 s of CPU for 7.4 s of wall and 788 MiB in one process (3.9 s
# and 258 MiB on a 2-core machine). Set before numpy loads; a user's own setting wins.
for _pool in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_pool, "1")

PLOT_MODULES_ENV = "HDBENCH_PLOT_MODULES"
_MODULE_NAME = re.compile(r"[a-z][a-z0-9_]*")
# The shared helpers, never a family's plot module: a meta.json naming one gets "not found".
_NOT_PLOT_MODULES = {"claims", "declarations", "drawing", "figures", "formatting", "json_values", "results_csv", "run",
                     "selection"}


def search_path() -> list[Path]:
    """Where plot modules are looked for, in order: this package, then HDBENCH_PLOT_MODULES."""
    extra = [Path(p) for p in os.environ.get(PLOT_MODULES_ENV, "").split(os.pathsep) if p.strip()]
    return [Path(__file__).resolve().parent] + extra


def find_module(name: str) -> Path | None:
    """The file of plot module `name`, or None when no directory of the search path has it.

    Only plain lowercase identifiers are looked up, so a value in meta.json can never import an
    arbitrary module; a shared helper (_NOT_PLOT_MODULES) is not a family's module.
    """
    if not _MODULE_NAME.fullmatch(name) or name in _NOT_PLOT_MODULES:
        return None
    for directory in search_path():
        candidate = directory / f"{name}.py"
        if candidate.is_file():
            return candidate
    return None


def load_module(name: str) -> ModuleType:
    """Import plot module `name` (LookupError when it is not on the search path).

    A module of this package is imported as hdbplots.<name> (it may use relative imports); one
    from HDBENCH_PLOT_MODULES as hdbplots_extra_<name>, and imports the helpers by their full
    names (`hdbplots.figures`, ...). An error inside the module propagates: that is a bug to
    report, not "no plots".
    """
    path = find_module(name)
    if path is None:
        where = ", ".join(str(p) for p in search_path())
        raise LookupError(f"plot module {name!r} not found (searched {where}; set {PLOT_MODULES_ENV} "
                          f"to add a directory)")
    if path.parent == Path(__file__).resolve().parent:
        return importlib.import_module(f"{__name__}.{name}")
    qualified = f"hdbplots_extra_{name}"
    if qualified in sys.modules:
        return sys.modules[qualified]
    spec = importlib.util.spec_from_file_location(qualified, path)
    if spec is None or spec.loader is None:
        raise LookupError(f"plot module {name!r}: cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[qualified] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[qualified]
        raise
    return module
