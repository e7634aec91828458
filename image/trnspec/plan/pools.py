"""What a plan reads of a deployment config (config/*.yaml, the infra settings format): the Trn2
pools, `trn2_pools[].{name, instance_type, max_size, lnc}`, `serving.scale_to_zero` and
`serving.max_startup_minutes`, after `--set` overrides in the `cdk -c` form
(`trn2_pools.0.max_size=4`, `trn2_pools.trn2.instance_type=...`). Defaults, bounds and the
override walker are the deploy's own (trnspec.plan.deployment_schema, which infra.settings
imports too); the file is read by trnspec.plan.readers.evidence.

A plan made for these pools prices only their instance types and keeps nodes at peak within their
max_size; with scale to zero its ramp starts from zero replicas, as the deployed autoscaler does
(the plan file sets min and max replicas, never scale_to_zero); the startup budget bounds what a
calibration can bill (trnspec.plan.idle_cost).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import TypeAdapter, ValidationError

from trnspec.boundary.errors import BoundaryError
from trnspec.config.pod_contract import MAX_STARTUP_MINUTES_RANGE
from trnspec.hardware.topology import INSTANCE_TYPES
from trnspec.plan.deployment_schema import (
    DEFAULT_INSTANCE_TYPE,
    DEFAULT_LNC,
    DEFAULT_MAX_STARTUP_MINUTES,
    DEFAULT_POOL_MAX_SIZE,
    DEFAULT_SCALE_TO_ZERO,
    MAX_POOL_NODES,
    Lnc,
    PoolMaxSize,
    StartupMinutes,
    set_dotted,
)


@dataclass(frozen=True)
class Pool:
    name: str
    instance_type: str
    max_size: int
    lnc: int


@dataclass(frozen=True)
class DeploymentConfig:
    """The parts of a deployment config a plan depends on."""

    pools: tuple[Pool, ...]
    scale_to_zero: bool
    #: The startup budget a calibration Job's deadline includes (serving.max_startup_minutes).
    max_startup_minutes: int = DEFAULT_MAX_STARTUP_MINUTES


_MAX_SIZE: TypeAdapter[int] = TypeAdapter(PoolMaxSize)
_LNC: TypeAdapter[int] = TypeAdapter(Lnc)
_STARTUP_MINUTES: TypeAdapter[int] = TypeAdapter(StartupMinutes)
# pydantic's bool, as infra.settings.serving reads it: the same values mean the same
_BOOL: TypeAdapter[bool] = TypeAdapter(bool)


def _field(adapter: TypeAdapter[Any], value: object, at: str, fix: str) -> Any:
    try:
        return adapter.validate_python(value)
    except ValidationError:
        raise BoundaryError(at, value, fix) from None


def _pool(i: int, entry: Any) -> Pool:
    at = f"trn2_pools.{i}"
    if not isinstance(entry, Mapping):
        raise BoundaryError(at, entry, "give a mapping with name and instance_type")
    itype = entry.get("instance_type", DEFAULT_INSTANCE_TYPE)
    if not isinstance(itype, str) or itype not in INSTANCE_TYPES:
        raise BoundaryError(
            f"{at}.instance_type", itype, f"give one of {', '.join(sorted(INSTANCE_TYPES))}"
        )
    lnc = _field(_LNC, entry.get("lnc", DEFAULT_LNC), f"{at}.lnc", "give 1 or 2")
    max_size = _field(
        _MAX_SIZE,
        entry.get("max_size", DEFAULT_POOL_MAX_SIZE),
        f"{at}.max_size",
        f"give whole nodes from 1 to {MAX_POOL_NODES}",
    )
    return Pool(str(entry.get("name", f"pool{i}")), itype, int(max_size), int(lnc))


def _serving(doc: Mapping[str, Any]) -> Mapping[str, Any]:
    serving = doc.get("serving")
    if serving is None:  # absent or empty (`serving:`): the infra settings take it as unset
        return {}
    if not isinstance(serving, Mapping):
        raise BoundaryError("serving", serving, "give a mapping (the serving settings)")
    return serving


def deployment_config(path: str, doc: object, sets: Sequence[str] = ()) -> DeploymentConfig:
    """A config's pools, scale-to-zero switch and startup budget after `sets` (pure: `doc` is
    the config as read from `path`); BoundaryError naming --config, --set or the field."""
    if not isinstance(doc, dict):
        raise BoundaryError("--config", path, "not a deployment config (a YAML mapping)")
    doc = copy.deepcopy(doc)
    for assignment in sets:
        key, sep, raw = assignment.partition("=")
        fix = set_dotted(doc, key.strip(), raw) if sep else "give PATH=VALUE"
        if fix is not None:
            raise BoundaryError("--set", assignment, f"{fix}, e.g. trn2_pools.0.max_size=4")
    entries = doc.get("trn2_pools")
    if not isinstance(entries, list) or not entries:
        raise BoundaryError("--config", path, "has no trn2_pools: list the Trn2 node pools")
    serving = _serving(doc)
    lo, hi = MAX_STARTUP_MINUTES_RANGE
    return DeploymentConfig(
        tuple(_pool(i, e) for i, e in enumerate(entries)),
        _field(
            _BOOL,
            serving.get("scale_to_zero", DEFAULT_SCALE_TO_ZERO),
            "serving.scale_to_zero",
            "give true or false",
        ),
        int(
            _field(
                _STARTUP_MINUTES,
                serving.get("max_startup_minutes", DEFAULT_MAX_STARTUP_MINUTES),
                "serving.max_startup_minutes",
                f"give whole minutes from {lo} to {hi}",
            )
        ),
    )


def max_nodes(pools: Sequence[Pool]) -> dict[str, int]:
    """Nodes each instance type may reach: the sum of its pools' max_size."""
    out: dict[str, int] = {}
    for p in pools:
        out[p.instance_type] = out.get(p.instance_type, 0) + p.max_size
    return out
