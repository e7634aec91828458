"""Reading the deployment settings: config/<profile>.yaml plus `cdk -c key=value` overrides,
validated at once (fields, then cross-checks) into one SettingsError listing every problem.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from trnspec.boundary.problems import InputError, Problem, problems_from_validation
from trnspec.boundary.user_input import InputReadError, load_yaml, parse_value, read_text_file

from infra.settings.cross_checks import deployment_cross_checks
from infra.settings.models import DeploymentSettings
from infra.settings.plan_file import (
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


def _scalar(value: Any) -> Any:
    """`-c` values arrive as strings: one rule with the engine's `--set`
    (trnspec's user_input.parse_value): YAML 1.2 values, text fields keep the text as written."""
    return parse_value(value) if isinstance(value, str) else value


def apply_overrides(data: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """Set dotted keys (`trn2_pools.0.max_size`, `vpc.nat_gateways`) in a copy of `data`.

    A list segment is an index or a pool name (`trn2_pools.trn2.max_size`). Problems with the
    paths themselves are collected and raised together.
    """
    out = copy.deepcopy(data)
    problems: list[Problem] = []
    for key, raw in sorted(overrides.items()):
        parts = key.split(".")
        node: Any = out
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            if isinstance(node, list):
                idx = _list_index(node, part)
                if idx is None:
                    problems.append(
                        Problem(
                            key,
                            raw,
                            f"no item {part!r} in {'.'.join(parts[:i])} "
                            f"(indexes 0..{len(node) - 1} or a pool name)",
                        )
                    )
                    break
                if last:
                    node[idx] = _scalar(raw)
                else:
                    node = node[idx]
            elif isinstance(node, dict):
                if last:
                    node[part] = _scalar(raw)
                else:
                    node = node.setdefault(part, _default_container(parts, i))
            else:
                problems.append(Problem(key, raw, f"{'.'.join(parts[:i])} is not a section"))
                break
    if problems:
        raise SettingsError(problems, "context overrides")
    return out


def _default_container(parts: list[str], i: int) -> Any:
    """Missing intermediate: `trn2_pools` is a list of pools (its defaults), others sections."""
    if parts[i] == "trn2_pools":
        return [p.model_dump(mode="json") for p in DeploymentSettings().trn2_pools]
    return {}


def _list_index(node: list[Any], part: str) -> int | None:
    if part.isdigit():
        idx = int(part)
        return idx if idx < len(node) else None
    for idx, item in enumerate(node):
        if isinstance(item, dict) and item.get("name") == part:
            return idx
    return None


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
    plan = None
    named = plan_path(data, overrides)
    overrides.pop(PLAN_OVERRIDE, None)
    if named is not None:
        plan, problems = read_plan(named)
        if problems:
            raise SettingsError(problems, f"profile {profile}")
        assert plan is not None
        data = merge_plan(data, plan)
    return apply_overrides(data, overrides), plan


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
    if plan is not None:
        problems = node_problems(plan, [p.max_size for p in settings.trn2_pools])
        if problems:
            raise SettingsError(problems, f"profile {profile}")
    return settings
