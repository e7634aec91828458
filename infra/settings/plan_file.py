"""Deploying a plan: `serving.plan=FILE` (in a profile or as `cdk -c serving.plan=FILE`) merges the
plan file's `serving:` fields (profile, overrides, replicas, KEDA target) into the serving section
before any other override, so the deployment runs what `python -m trnspec plan-deploy` chose.

A plan file is what that command writes (`kind: trnspec-deployment-plan`); only its `serving`
fields are deployed, `plan` is the record of what they were chosen from, and its
`plan.chosen.nodes_at_peak` is checked against the pools' max_size. A relative path is read from
the repository root (where `cdk` runs). `-c serving.x=...` overrides still apply after the plan.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trnspec.boundary.problems import Problem
from trnspec.boundary.user_input import InputReadError, load_yaml, read_text_file

#: The key that names a plan file, in the serving section or as a dotted override.
PLAN_KEY = "plan"
PLAN_OVERRIDE = f"serving.{PLAN_KEY}"
#: What `trnspec plan-deploy` writes (trnspec.cli.plan_deploy.PLAN_KIND).
PLAN_KIND = "trnspec-deployment-plan"
#: The serving fields a plan sets.
PLAN_FIELDS = frozenset(
    {"profile", "overrides", "min_replicas", "max_replicas", "streams_per_replica"}
)
REPO_ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class DeploymentPlan:
    """The deployed part of a plan file and the node count it was priced with."""

    path: str
    serving: dict[str, Any]
    nodes_at_peak: int | None


def read_plan(path: str, root: Path = REPO_ROOT) -> tuple[DeploymentPlan | None, list[Problem]]:
    """Read and check a plan file; problems name `serving.plan`, the path and the fix."""
    file = Path(path) if Path(path).is_absolute() else root / path

    def bad(fix: str) -> tuple[None, list[Problem]]:
        return None, [Problem(PLAN_OVERRIDE, path, fix)]

    try:
        doc = load_yaml(read_text_file(file))
    except (OSError, InputReadError) as err:
        return bad(f"cannot read {file} ({err}); write one with `python -m trnspec plan-deploy`")
    if not isinstance(doc, dict) or doc.get("kind") != PLAN_KIND:
        return bad(f"not a plan file (kind: {PLAN_KIND}); write one with trnspec plan-deploy")
    serving = doc.get("serving")
    if not isinstance(serving, dict) or not serving:
        return bad("the plan has no `serving` mapping")
    extra = sorted(set(serving) - PLAN_FIELDS)
    if extra:
        return bad(f"a plan sets only {', '.join(sorted(PLAN_FIELDS))}; remove {', '.join(extra)}")
    chosen = (doc.get("plan") or {}).get("chosen") or {}
    nodes = chosen.get("nodes_at_peak") if isinstance(chosen, dict) else None
    if nodes is not None and (not isinstance(nodes, int) or nodes < 1):
        return bad(f"plan.chosen.nodes_at_peak={nodes!r} must be a positive integer")
    return DeploymentPlan(path, dict(serving), nodes), []


def plan_path(data: dict[str, Any], overrides: dict[str, Any]) -> str | None:
    """The plan file named by `-c serving.plan=...`, else by the profile's serving section."""
    if PLAN_OVERRIDE in overrides:
        return str(overrides[PLAN_OVERRIDE])
    serving = data.get("serving")
    if isinstance(serving, dict) and serving.get(PLAN_KEY) is not None:
        return str(serving[PLAN_KEY])
    return None


def merge_plan(data: dict[str, Any], plan: DeploymentPlan) -> dict[str, Any]:
    """A copy of `data` whose serving section carries the plan's fields (and no `plan` key)."""
    out = copy.deepcopy(data)
    serving = dict(out.get("serving") or {})
    serving.pop(PLAN_KEY, None)
    serving.update(copy.deepcopy(plan.serving))
    out["serving"] = serving
    return out


def node_problems(plan: DeploymentPlan, pool_max_sizes: list[int]) -> list[Problem]:
    """The pools must be allowed the nodes the plan was priced with."""
    if plan.nodes_at_peak is None or sum(pool_max_sizes) >= plan.nodes_at_peak:
        return []
    return [
        Problem(
            "trn2_pools.0.max_size",
            pool_max_sizes[0] if pool_max_sizes else None,
            f"the plan {plan.path} needs {plan.nodes_at_peak} node(s) at peak and the pools "
            f"allow {sum(pool_max_sizes)}: raise max_size, or plan for fewer streams",
        )
    ]
