"""Reading the deployment settings: config/<profile>.yaml plus `cdk -c key=value` overrides,
validated at once (fields, then cross-checks) into one SettingsError listing every problem.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from trnspec.boundary.problems import InputError, Problem, problems_from_validation
from trnspec.boundary.user_input import InputReadError, load_yaml, read_text_file
from trnspec.plan.deployment_schema import set_dotted

from infra.settings.cross_checks import deployment_cross_checks
from infra.settings.models import DeploymentSettings
from infra.settings.plan_figures import PLAN_FIGURES_FIELD
from infra.settings.plan_file import (
    PLAN_KEY,
    PLAN_OVERRIDE,
    DeploymentPlan,
    merge_plan,
    node_problems,
    plan_path,
    read_plan,
)

#: Where deployment profiles live, relative to the repository root.
CONFIG_DIR = Path(__file__).resolve().parents[2] / "config"

#: Context keys that belong to CDK or to the Makefile, never to settings.
RESERVED_CONTEXT_KEYS = frozenset({"profile"})

#: `serving.plan` values that mean "deploy no plan" (`-c serving.plan=none`, null, ~ or empty):
#: the profile's serving section as written, with the -c overrides.
NO_PLAN = frozenset({"", "none", "null", "~"})
#: The plan's fields that decide what is served (the engine profile and its `--set` overrides):
#: a `-c` that changes one deploys an engine the plan did not price, so it is refused. Replica
#: bounds and the KEDA target stay the user's to adjust on top of a plan (a cost cap, say).
PLAN_ENGINE_FIELDS = ("overrides", "profile")


class SettingsError(InputError):
    """Every problem of one settings load, so the user fixes them in one round."""

    def __init__(self, problems: list[Problem], source: str = "") -> None:
        super().__init__(
            problems, f"invalid deployment settings{f' ({source})' if source else ''}:"
        )


def parse_settings(data: dict[str, Any], source: str = "") -> DeploymentSettings:
    """Validate a plain dict into settings, raising one SettingsError with every problem."""
    if not isinstance(data, dict):
        raise SettingsError([Problem("(root)", data, "expected a mapping of settings")], source)
    try:
        settings = DeploymentSettings.model_validate(data)
    except ValidationError as err:
        raise SettingsError(problems_from_validation(err, DeploymentSettings), source) from None
    problems = deployment_cross_checks(settings)
    if problems:
        raise SettingsError(problems, source)
    return settings


def settings_overrides(context: dict[str, Any]) -> dict[str, str]:
    """The context entries that are settings overrides: not CDK's own keys (feature flags,
    `aws:cdk:*`, lookup results all contain ':'), nor `profile`."""
    return {
        k: v
        for k, v in context.items()
        if ":" not in k and not k.startswith("@") and k not in RESERVED_CONTEXT_KEYS
    }


def apply_overrides(data: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """Set dotted keys (`trn2_pools.0.max_size`, `vpc.nat_gateways`) in a copy of `data`, by
    the walker plan-deploy's `--set` uses too (trnspec.plan.deployment_schema.set_dotted: a list
    segment is an index or a pool name, a missing `trn2_pools` the default pool, `-c` text read
    as YAML 1.2 values, as the engine's `--set`). Problems with the paths themselves are
    collected and raised together.
    """
    out = copy.deepcopy(data)
    problems = [
        Problem(key, raw, fix)
        for key, raw in sorted(overrides.items())
        if (fix := set_dotted(out, key, raw)) is not None
    ]
    if problems:
        raise SettingsError(problems, "context overrides")
    return out


def list_profiles(config_dir: Path = CONFIG_DIR) -> list[str]:
    """Profile names shipped under config/."""
    return sorted(p.stem for p in config_dir.glob("*.yaml"))


def _profile_and_plan(
    profile: str, overrides: dict[str, Any] | None, config_dir: Path
) -> tuple[dict[str, Any], DeploymentPlan | None]:
    path = config_dir / f"{profile}.yaml"
    if not path.is_file():
        raise SettingsError(
            [Problem("profile", profile, f"one of {', '.join(list_profiles(config_dir))}")]
        )
    try:
        data = load_yaml(read_text_file(path)) or {}
    except (OSError, InputReadError) as err:
        raise SettingsError([Problem("profile", profile, f"{path}: {err}")]) from None
    if not isinstance(data, dict):
        raise SettingsError([Problem("profile", profile, f"{path} must hold a mapping")])
    overrides = dict(overrides or {})
    if "serving" in overrides:
        # A whole new serving section replaces the profile's, the plan it names included.
        data = apply_overrides(data, {"serving": overrides.pop("serving")})
    data, overrides = _drop_no_plan(data, overrides)
    problems = _hand_set_figures(data, overrides)
    if problems:
        raise SettingsError(problems, f"profile {profile}")
    plan = None
    named = plan_path(data, overrides)
    overrides.pop(PLAN_OVERRIDE, None)
    if named is not None:
        plan, problems = read_plan(named)
        if problems:
            raise SettingsError(problems, f"profile {profile}")
        assert plan is not None
        data = merge_plan(data, plan)
    merged = apply_overrides(data, overrides)
    if plan is not None:
        problems = plan_clashes(plan, merged.get("serving"))
        if problems:
            raise SettingsError(problems, f"profile {profile}")
    return merged, plan


def _hand_set_figures(data: dict[str, Any], overrides: dict[str, Any]) -> list[Problem]:
    """`serving.plan_figures` comes from the plan file only: a figure shown as predicted that
    the plan did not predict would be wrong."""
    field = f"serving.{PLAN_FIGURES_FIELD}"
    serving = data.get("serving")
    given = {k: v for k, v in overrides.items() if k == field or k.startswith(f"{field}.")}
    if isinstance(serving, dict) and PLAN_FIGURES_FIELD in serving:
        given[field] = serving[PLAN_FIGURES_FIELD]
    return [
        Problem(key, value, "set from the plan file only (serving.plan); remove it")
        for key, value in sorted(given.items())
    ]


def _is_no_plan(value: Any) -> bool:
    return value is None or (isinstance(value, str) and value.strip().lower() in NO_PLAN)


def _drop_no_plan(
    data: dict[str, Any], overrides: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """`-c serving.plan=none` (null, ~, empty) drops the profile's plan; so does `plan: none`
    or `plan: null` in the profile itself. Either way no `plan` key is left for the serving
    settings."""
    serving = data.get("serving")
    named_here = isinstance(serving, dict) and PLAN_KEY in serving
    dropped = PLAN_OVERRIDE in overrides and _is_no_plan(overrides[PLAN_OVERRIDE])
    if dropped:
        overrides = {k: v for k, v in overrides.items() if k != PLAN_OVERRIDE}
    if named_here and (dropped or _is_no_plan(serving[PLAN_KEY])):
        data = {**data, "serving": {k: v for k, v in serving.items() if k != PLAN_KEY}}
    return data, overrides


def plan_clashes(plan: DeploymentPlan, serving: Any) -> list[Problem]:
    """A `-c serving.profile` or `serving.overrides` that changes what the plan chose would
    deploy an engine the plan did not price: one problem per field, naming both values and the
    two ways out."""
    if not isinstance(serving, dict):
        return []
    problems = []
    for field in PLAN_ENGINE_FIELDS:
        if field not in plan.serving:
            continue
        planned, given = plan.serving[field], serving.get(field)
        if _same(planned, given):
            continue
        problems.append(
            Problem(
                f"serving.{field}",
                given,
                f"the plan {plan.path} sets serving.{field}={_show(planned)} (what it priced); "
                f"deploy without it (-c serving.plan=none) or write a plan for this with "
                "`python -m trnspec plan-deploy`",
            )
        )
    return problems


def _same(planned: Any, given: Any) -> bool:
    if isinstance(planned, list | tuple) and isinstance(given, list | tuple):
        return [str(x) for x in planned] == [str(x) for x in given]
    return str(planned) == str(given)


def _show(value: Any) -> str:
    if isinstance(value, list | tuple):
        return "[" + ", ".join(str(x) for x in value) + "]"
    return str(value)


def profile_data(
    profile: str, overrides: dict[str, Any] | None = None, config_dir: Path = CONFIG_DIR
) -> dict[str, Any]:
    """config/<profile>.yaml as read, with its serving plan (`serving.plan`, trnspec
    plan-deploy's file) merged and then the dotted overrides applied (not yet validated)."""
    return _profile_and_plan(profile, overrides, config_dir)[0]


def load_settings(
    profile: str, overrides: dict[str, Any] | None = None, config_dir: Path = CONFIG_DIR
) -> DeploymentSettings:
    """Read config/<profile>.yaml, merge its plan, apply dotted overrides, validate everything at
    once (and that the pools allow the nodes the plan was priced with)."""
    merged, plan = _profile_and_plan(profile, overrides, config_dir)
    settings = parse_settings(merged, source=f"profile {profile}")
    # The pools size only the platform's own cluster; an existing cluster's nodes are checked
    # on the cluster (`python -m trnspec_tools manifests --check`).
    if plan is not None and settings.cluster.existing is None:
        problems = node_problems(plan, [p.max_size for p in settings.trn2_pools])
        if problems:
            raise SettingsError(problems, f"profile {profile}")
    return settings
