"""What a plan reads of a deployment config (config/*.yaml, the infra settings format), without
the infra package (the engine never imports it): the Trn2 pools, `trn2_pools[].{name,
instance_type, max_size, lnc}`, with the infra defaults (trn2.48xlarge, max_size 2, LNC 2),
`serving.scale_to_zero` (default false) and `serving.max_startup_minutes` (default 90), after
`--set` overrides in the `cdk -c` form (`trn2_pools.0.max_size=4`,
`trn2_pools.trn2.instance_type=...`). A plan made for these pools prices only their instance
types and keeps nodes at peak within their max_size; with scale to zero its ramp starts from zero
replicas, as the deployed autoscaler does (the plan file sets min and max replicas, never
scale_to_zero); the startup budget bounds what a calibration can bill (trnspec.plan.idle_cost).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, TypeAdapter, ValidationError

from trnspec.boundary.errors import BoundaryError
from trnspec.boundary.numbers import int_in
from trnspec.boundary.user_input import (
    InputReadError,
    Int,
    load_yaml,
    parse_value,
    read_text_file,
)
from trnspec.config.pod_contract import DEFAULT_MAX_STARTUP_MINUTES, MAX_STARTUP_MINUTES_RANGE
from trnspec.hardware.topology import INSTANCE_TYPES

#: The infra settings' defaults for a pool (infra/settings/models.py, Trn2PoolSettings).
DEFAULT_INSTANCE_TYPE = "trn2.48xlarge"
DEFAULT_MAX_SIZE = 2
DEFAULT_LNC = 2
#: The infra settings' bound on a pool's max_size.
MAX_POOL_SIZE = 64


@dataclass(frozen=True)
class Pool:
    name: str
    instance_type: str
    max_size: int
    lnc: int


def _set(doc: dict[str, Any], assignment: str) -> None:
    path, sep, raw = assignment.partition("=")
    parts = path.strip().split(".")
    if not sep or not all(parts):
        raise BoundaryError("--set", assignment, "give PATH=VALUE, e.g. trn2_pools.0.max_size=4")
    node: Any = doc
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if isinstance(node, list):
            names = [p.get("name") if isinstance(p, dict) else None for p in node]
            idx = int(part) if part.isdigit() else names.index(part) if part in names else None
            if idx is None or not 0 <= idx < len(node):
                raise BoundaryError("--set", assignment, f"no list entry {part!r} at {path}")
            if last:
                node[idx] = parse_value(raw)
            else:
                node = node[idx]
        elif isinstance(node, dict):
            if last:
                node[part] = parse_value(raw)
            else:
                node = node.setdefault(part, {})
        else:
            raise BoundaryError("--set", assignment, f"{'.'.join(parts[:i])} is not a mapping")


def _pool(i: int, entry: Any) -> Pool:
    at = f"trn2_pools.{i}"
    if not isinstance(entry, Mapping):
        raise BoundaryError(at, entry, "give a mapping with name and instance_type")
    itype = entry.get("instance_type", DEFAULT_INSTANCE_TYPE)
    if not isinstance(itype, str) or itype not in INSTANCE_TYPES:
        raise BoundaryError(
            f"{at}.instance_type", itype, f"give one of {', '.join(sorted(INSTANCE_TYPES))}"
        )
    lnc = entry.get("lnc", DEFAULT_LNC)
    if lnc not in (1, 2) or isinstance(lnc, bool):
        raise BoundaryError(f"{at}.lnc", lnc, "give 1 or 2")
    return Pool(
        name=str(entry.get("name", f"pool{i}")),
        instance_type=str(itype),
        max_size=int(
            int_in(entry.get("max_size", DEFAULT_MAX_SIZE), f"{at}.max_size", 1, MAX_POOL_SIZE)
        ),
        lnc=int(lnc),
    )


@dataclass(frozen=True)
class DeploymentConfig:
    """The parts of a deployment config a plan depends on."""

    pools: tuple[Pool, ...]
    scale_to_zero: bool
    #: The startup budget a calibration Job's deadline includes (serving.max_startup_minutes).
    max_startup_minutes: int = DEFAULT_MAX_STARTUP_MINUTES


#: serving.max_startup_minutes as infra.settings.serving types it.
_STARTUP_MINUTES = TypeAdapter(
    Annotated[Int, Field(ge=MAX_STARTUP_MINUTES_RANGE[0], le=MAX_STARTUP_MINUTES_RANGE[1])]
)


def _serving(doc: Mapping[str, Any]) -> Mapping[str, Any]:
    serving = doc.get("serving")
    if serving is None:  # absent or empty (`serving:`): the infra settings take it as unset
        return {}
    if not isinstance(serving, Mapping):
        raise BoundaryError("serving", serving, "give a mapping (the serving settings)")
    return serving


def _scale_to_zero(serving: Mapping[str, Any]) -> bool:
    value = serving.get("scale_to_zero", False)
    try:
        # pydantic's bool, as infra.settings.serving reads it: the same values mean the same
        return TypeAdapter(bool).validate_python(value)
    except ValidationError:
        raise BoundaryError("serving.scale_to_zero", value, "give true or false") from None


def _max_startup_minutes(serving: Mapping[str, Any]) -> int:
    value = serving.get("max_startup_minutes", DEFAULT_MAX_STARTUP_MINUTES)
    try:
        return int(_STARTUP_MINUTES.validate_python(value))
    except ValidationError:
        lo, hi = MAX_STARTUP_MINUTES_RANGE
        raise BoundaryError(
            "serving.max_startup_minutes", value, f"give whole minutes from {lo} to {hi}"
        ) from None


def read_deployment_config(path: str, sets: Sequence[str] = ()) -> DeploymentConfig:
    """The config's pools, scale-to-zero switch and startup budget after `sets`; BoundaryError
    naming --config or the field."""
    try:
        doc = load_yaml(read_text_file(Path(path)))
    except (OSError, InputReadError) as err:
        why = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        raise BoundaryError("--config", path, f"cannot read it ({why})") from None
    if not isinstance(doc, dict):
        raise BoundaryError("--config", path, "not a deployment config (a YAML mapping)")
    doc = copy.deepcopy(doc)
    for assignment in sets:
        _set(doc, assignment)
    entries = doc.get("trn2_pools")
    if not isinstance(entries, list) or not entries:
        raise BoundaryError("--config", path, "has no trn2_pools: list the Trn2 node pools")
    serving = _serving(doc)
    return DeploymentConfig(
        tuple(_pool(i, e) for i, e in enumerate(entries)),
        _scale_to_zero(serving),
        _max_startup_minutes(serving),
    )


def max_nodes(pools: Sequence[Pool]) -> dict[str, int]:
    """Nodes each instance type may reach: the sum of its pools' max_size."""
    out: dict[str, int] = {}
    for p in pools:
        out[p.instance_type] = out.get(p.instance_type, 0) + p.max_size
    return out
