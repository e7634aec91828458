"""The part of a deployment config (config/*.yaml) that both the deploy (infra.settings) and a
plan (trnspec.plan.pools) read, defined once: a Trn2 pool's instance type, node bound and LNC,
the serving section's scale-to-zero switch and startup budget, each with its default and bound;
the plan file's kind; and the one walker that sets a dotted path (`--set` of plan-deploy, `cdk
-c` of the deploy) in a config.

A leaf: it imports only pydantic and the engine's boundary and pod contract, so infra.settings
imports it (infra may import the engine; the engine never imports infra). infra's models
(Trn2PoolSettings, ServingSettings) type their fields with these; the plan reads a config with
the same types, so the two cannot disagree on a default or a bound.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field

from trnspec.boundary.errors import BoundaryError
from trnspec.boundary.numbers import int_text
from trnspec.boundary.user_input import Int, parse_value, refuse_bool
from trnspec.config.pod_contract import DEFAULT_MAX_STARTUP_MINUTES, MAX_STARTUP_MINUTES_RANGE

#: A Trn2 pool's defaults: the config's one pool when it lists none is named DEFAULT_POOL_NAME.
DEFAULT_POOL_NAME = "trn2"
DEFAULT_INSTANCE_TYPE = "trn2.48xlarge"
DEFAULT_POOL_MAX_SIZE = 2
DEFAULT_LNC = 2
#: The most nodes a pool may hold (its min, desired and max size).
MAX_POOL_NODES = 64
#: serving.scale_to_zero: off unless the config turns it on.
DEFAULT_SCALE_TO_ZERO = False
#: What `trnspec plan-deploy` writes as `kind:`, checked by the deploy (infra.settings.plan_file).
PLAN_KIND = "trnspec-deployment-plan"

#: trn2_pools[].min_size and desired_size.
PoolNodes = Annotated[Int, Field(ge=0, le=MAX_POOL_NODES)]
#: trn2_pools[].max_size: at least one node.
PoolMaxSize = Annotated[Int, Field(ge=1, le=MAX_POOL_NODES)]
#: trn2_pools[].lnc: the logical NeuronCore config (a boolean is no LNC).
Lnc = Annotated[Literal[1, 2], BeforeValidator(refuse_bool)]
#: serving.max_startup_minutes.
StartupMinutes = Annotated[
    Int, Field(ge=MAX_STARTUP_MINUTES_RANGE[0], le=MAX_STARTUP_MINUTES_RANGE[1])
]
__all__ = [
    "DEFAULT_INSTANCE_TYPE",
    "DEFAULT_LNC",
    "DEFAULT_MAX_STARTUP_MINUTES",
    "DEFAULT_POOL_MAX_SIZE",
    "DEFAULT_POOL_NAME",
    "DEFAULT_SCALE_TO_ZERO",
    "MAX_POOL_NODES",
    "PLAN_KIND",
    "Lnc",
    "PoolMaxSize",
    "PoolNodes",
    "StartupMinutes",
    "default_container",
    "set_dotted",
]


def default_container(parts: Sequence[str], i: int) -> Any:
    """A missing section on a dotted path: `trn2_pools` is the default list of one pool, any
    other a mapping."""
    return [{"name": DEFAULT_POOL_NAME}] if parts[i] == "trn2_pools" else {}


def _list_index(node: list[Any], part: str) -> int | None:
    if part.isascii() and part.isdigit():
        try:
            return int_text(part, "index", 0, len(node) - 1)
        except BoundaryError:
            return None
    for idx, item in enumerate(node):
        if isinstance(item, dict) and item.get("name") == part:
            return idx
    return None


def set_dotted(
    doc: dict[str, Any],
    key: str,
    raw: Any,
    missing: Callable[[Sequence[str], int], Any] = default_container,
) -> str | None:
    """Set `key` (`trn2_pools.0.max_size`, `trn2_pools.trn2.lnc`, `serving.scale_to_zero`) in
    `doc` in place to `raw` (text is read as YAML 1.2, trnspec.boundary.user_input.parse_value);
    a list segment is an index or a pool name, a missing section is made by `missing`. The fix
    when the path does not fit the document, else None."""
    parts = key.split(".")
    if not all(parts):
        return "give a dotted PATH=VALUE"
    value = parse_value(raw) if isinstance(raw, str) else raw
    node: Any = doc
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if isinstance(node, list):
            idx = _list_index(node, part)
            if idx is None:
                return (
                    f"no item {part!r} in {'.'.join(parts[:i])}"
                    f" (indexes 0..{len(node) - 1} or a pool name)"
                )
            if last:
                node[idx] = value
            else:
                node = node[idx]
        elif isinstance(node, dict):
            if last:
                node[part] = value
            else:
                node = node.setdefault(part, missing(parts, i))
        else:
            return f"{'.'.join(parts[:i])} is not a section"
    return None
