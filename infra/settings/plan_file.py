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
from trnspec.plan.deployment_schema import PLAN_KIND

from infra.settings.plan_figures import PLAN_FIGURES_FIELD, PlanFigures, read_plan_figures

#: The key that names a plan file, in the serving section or as a dotted override.
PLAN_KEY = "plan"
PLAN_OVERRIDE = f"serving.{PLAN_KEY}"
#: The serving fields a plan sets.
PLAN_FIELDS = frozenset(
    {"profile", "overrides", "min_replicas", "max_replicas", "streams_per_replica", "calibration"}
)
REPO_ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class DeploymentPlan:
    """The deployed part of a plan file, the node count it was priced with and the figures it
    predicted for what it deploys (None when it records none)."""

    path: str
    serving: dict[str, Any]
    nodes_at_peak: int | None
    figures: PlanFigures | None = None


def read_plan(path: str, root: Path = REPO_ROOT) -> tuple[DeploymentPlan | None, list[Problem]]:
    """Read and check a plan file; one problem per bad field, each naming `serving.plan`, the
    path, the field and the fix (nothing is merged from a plan with a problem)."""
    file = Path(path) if Path(path).is_absolute() else root / path

    def bad(fix: str) -> Problem:
        return Problem(PLAN_OVERRIDE, path, fix)

    try:
        doc = load_yaml(read_text_file(file))
    except (OSError, InputReadError) as err:
        return None, [
            bad(f"cannot read {file} ({err}); write one with `python -m trnspec plan-deploy`")
        ]
    if not isinstance(doc, dict) or doc.get("kind") != PLAN_KIND:
        return None, [bad(f"not a plan file (kind: {PLAN_KIND}); write one with plan-deploy")]
    problems: list[Problem] = []
    serving = doc.get("serving")
    if not isinstance(serving, dict) or not serving:
        problems.append(bad(f"serving={_short(serving)} must be a mapping of serving fields"))
    elif extra := sorted(set(serving) - PLAN_FIELDS):
        problems.append(
            bad(f"a plan sets only {', '.join(sorted(PLAN_FIELDS))}; remove {', '.join(extra)}")
        )
    nodes, record_problems = _nodes_at_peak(doc.get("plan"))
    problems += [bad(fix) for fix in record_problems]
    figures, figure_problems = read_plan_figures(doc.get("plan"))
    problems += [bad(fix) for fix in figure_problems]
    if problems or not isinstance(serving, dict):
        return None, problems
    return DeploymentPlan(path, dict(serving), nodes, figures), []


def _nodes_at_peak(record: object) -> tuple[int | None, list[str]]:
    """`plan.chosen.nodes_at_peak` (None when the plan records none), or why the record is bad:
    `plan` and `plan.chosen` are mappings, the count a positive integer (not true/false)."""
    if record is None:
        return None, []
    if not isinstance(record, dict):
        return None, [f"plan={_short(record)} must be a mapping (what plan-deploy chose from)"]
    chosen = record.get("chosen")
    if chosen is None:
        return None, []
    if not isinstance(chosen, dict):
        return None, [f"plan.chosen={_short(chosen)} must be a mapping (the chosen candidate)"]
    nodes = chosen.get("nodes_at_peak")
    if nodes is None:
        return None, []
    if isinstance(nodes, bool) or not isinstance(nodes, int) or nodes < 1:
        return None, [f"plan.chosen.nodes_at_peak={_short(nodes)} must be a positive integer"]
    return int(nodes), []


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def plan_path(data: dict[str, Any], overrides: dict[str, Any]) -> str | None:
    """The plan file named by `-c serving.plan=...`, else by the profile's serving section."""
    if PLAN_OVERRIDE in overrides:
        return str(overrides[PLAN_OVERRIDE])
    serving = data.get("serving")
    if isinstance(serving, dict) and serving.get(PLAN_KEY) is not None:
        return str(serving[PLAN_KEY])
    return None


def merge_plan(data: dict[str, Any], plan: DeploymentPlan) -> dict[str, Any]:
    """A copy of `data` whose serving section carries the plan's fields and predicted figures
    (and no `plan` key)."""
    out = copy.deepcopy(data)
    serving = dict(out.get("serving") or {})
    serving.pop(PLAN_KEY, None)
    serving.update(copy.deepcopy(plan.serving))
    if plan.figures is not None:
        serving[PLAN_FIGURES_FIELD] = plan.figures.model_dump()
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
