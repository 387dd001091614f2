"""The families' declarations as the plots read them: each family's plot module and schema
(parameters with types, the α–β fit's metric names), from meta.json (`families.<name>.plots`,
`.schema`, copied there by the harness) or, for a run whose meta.json lacks them, from this
checkout's manifest (harness/suite.json) and bench/<folder>/schema.json."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from .json_values import as_dict, as_text


@dataclass(frozen=True)
class FamilyDeclaration:
    """What a family declares for plots: its plot module's name and its schema (parameters with
    types), from meta.json (`families.<name>.plots`, `.schema`) or, for a run whose meta.json
    lacks them, from this checkout's manifest (harness/suite.json) and bench/<f>/schema.json."""
    family: str
    plots: str | None = None
    schema: Mapping[str, Any] = field(default_factory=dict)
    source: str = "meta.json"

    @property
    def fit_metrics(self) -> dict[str, str]:
        """The α–β fit's rows by role ("beta", "alpha", "n_half") as the schema's "fit" names them;
        {} without a fit. A schema written before "fit" (a committed reference run's) declared only
        "fit_metric", and its rows carry the names the harness gave them then."""
        fit = self.schema.get("fit")
        if isinstance(fit, Mapping):
            return {role: fit[role] for role in ("beta", "alpha", "n_half") if isinstance(fit.get(role), str)}
        if self.schema.get("fit_metric"):
            return {"beta": "fit_bandwidth", "alpha": "fit_latency", "n_half": "fit_n_half"}
        return {}


def manifest_path() -> Path:
    """harness/suite.json of the checkout this plots/ directory belongs to."""
    return Path(__file__).resolve().parents[2] / "harness" / "suite.json"


def family_declarations(meta: Mapping[str, Any], families: Sequence[str]
                        ) -> tuple[dict[str, FamilyDeclaration], list[str]]:
    """Each family's plot module and schema: meta.json first, the checkout's manifest for what
    meta.json does not say (one warning line per family that needed it)."""
    recorded = meta.get("families") if isinstance(meta.get("families"), dict) else {}
    manifest = _manifest_entries()
    found: dict[str, FamilyDeclaration] = {}
    warnings = []
    for family in families:
        record = as_dict(recorded.get(family))
        schema = record.get("schema")
        if isinstance(schema, str):
            try:
                schema = json.loads(schema)
            except ValueError:
                schema = None
        plots = as_text(record.get("plots"))
        if isinstance(schema, dict) and plots:
            found[family] = FamilyDeclaration(family, plots, schema)
            continue
        entry = manifest.get(family, {})
        schema = schema if isinstance(schema, dict) else checkout_schema(family, manifest)
        plots = plots or as_text(entry.get("plots"))
        if entry:
            warnings.append(f"meta.json does not declare family {family} (schema and plot module); "
                            f"using {manifest_path()} and {entry.get('folder')}/schema.json of this checkout")
        found[family] = FamilyDeclaration(family, plots, schema if isinstance(schema, dict) else {},
                                          "meta.json" if not entry else "manifest")
    return found, warnings


def checkout_schema(family: str, manifest: Mapping[str, dict] | None = None) -> dict | None:
    """This checkout's declaration of a family (bench/<folder>/schema.json through harness/suite.json),
    None when the manifest does not list it or the file is unreadable."""
    entry = (manifest if manifest is not None else _manifest_entries()).get(family, {})
    schema = _read_json(manifest_path().parent.parent / str(entry["folder"]) / "schema.json") \
        if entry.get("folder") else None
    return schema if isinstance(schema, dict) else None


def _manifest_entries() -> dict[str, dict]:
    manifest = _read_json(manifest_path())
    entries = manifest.get("families") if isinstance(manifest, dict) else None
    return {e["name"]: e for e in entries or [] if isinstance(e, dict) and isinstance(e.get("name"), str)}


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def declared_parameters(schemas: Iterable[Mapping[str, Any]]) -> dict[str, str | None]:
    """Parameter name → 'int' | 'text' (None: another or no type) from schemas'
    `parameters.<name>.type`, the first schema that declares a name deciding."""
    types: dict[str, str | None] = {}
    for schema in schemas:
        parameters = schema.get("parameters")
        for name, spec in (parameters.items() if isinstance(parameters, dict) else []):
            kind = spec.get("type") if isinstance(spec, dict) else None
            types.setdefault(name, kind if kind in ("int", "text") else None)
    return types
