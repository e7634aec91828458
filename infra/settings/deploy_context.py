"""What a deploy was given: the profile, its `-c` settings overrides and the plan's `command`.

The serving stack outputs it (`DeployContext`, `PlanCommand`: infra/outputs.py), so a tool that
reads the stack later (`calibrate fetch`) prints the exact next `plan-deploy` and `cdk deploy`:
a redeploy without the same `-c` items (the cluster admins, a reservation id, a non-default
profile) is refused or is another deployment.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trnspec.boundary.user_input import InputReadError, load_yaml, read_text_file

from infra.settings.loading import CONFIG_DIR, NO_PLAN
from infra.settings.plan_file import PLAN_KEY, PLAN_OVERRIDE, REPO_ROOT

#: `-c` items left out of the next deploy: the plan is the one replaced, and a calibration's
#: settings belong to the plan (a decided plan has no calibration, so `-c serving.calibration.*`
#: would create a section without its arm).
REPLACED_PREFIXES = (PLAN_OVERRIDE, "serving.calibration")


@dataclass(frozen=True)
class DeployContext:
    """One deploy's command-line context, as `cdk deploy -c` took it."""

    profile: str
    overrides: tuple[tuple[str, str], ...]
    """Every `-c` settings override (not CDK's own keys, not `profile`), in the order given."""
    plan_command: str | None = None
    """The `plan.command` of the plan file deployed (None: no plan, or one without it)."""

    def context_args(self) -> list[str]:
        """`-c profile=P -c KEY=VALUE ...` for a redeploy of this deployment with another plan:
        every override but the plan and the calibration's (REPLACED_PREFIXES)."""
        args = ["-c", f"profile={self.profile}"]
        for key, value in self.overrides:
            if not key.startswith(REPLACED_PREFIXES):
                args += ["-c", f"{key}={value}"]
        return args

    def left_out(self) -> list[str]:
        """The overrides context_args leaves out, as `KEY=VALUE`."""
        return [f"{k}={v}" for k, v in self.overrides if k.startswith(REPLACED_PREFIXES)]

    def output_text(self) -> str:
        """The `DeployContext` output: context_args, shell-quoted."""
        return shlex.join(self.context_args())


def parse_output(text: str) -> list[str]:
    """The `DeployContext` output back as arguments (shlex: what output_text wrote)."""
    return shlex.split(text)


def deploy_context(
    profile: str, overrides: dict[str, Any] | None = None, config_dir: Path = CONFIG_DIR
) -> DeployContext:
    """The context of `cdk deploy -c profile=PROFILE -c ...overrides`, with the plan's command
    read from the plan file the deploy names (None when it names none or it cannot be read: the
    settings loader reports an unreadable plan)."""
    given = tuple((str(k), _text(v)) for k, v in (overrides or {}).items())
    return DeployContext(profile, given, _plan_command(profile, dict(given), config_dir))


def _text(value: Any) -> str:
    return value if isinstance(value, str) else str(value)


def _plan_command(profile: str, overrides: dict[str, str], config_dir: Path) -> str | None:
    named = overrides.get(PLAN_OVERRIDE)
    if named is None:
        serving = _read(config_dir / f"{profile}.yaml").get("serving")
        named = serving.get(PLAN_KEY) if isinstance(serving, dict) else None
    if named is None or str(named).strip().lower() in NO_PLAN:
        return None
    path = Path(str(named))
    plan = _read(path if path.is_absolute() else REPO_ROOT / path).get("plan")
    command = plan.get("command") if isinstance(plan, dict) else None
    return command if isinstance(command, str) else None


def _read(path: Path) -> dict[str, Any]:
    try:
        doc = load_yaml(read_text_file(path))
    except (OSError, InputReadError):
        return {}
    return doc if isinstance(doc, dict) else {}
