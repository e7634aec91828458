"""The user steers the plan from the command line: `-c serving.plan=none` drops it, a profile or
engine override that contradicts it is refused in one line naming both, the deployed name says
what is served, and one cluster admin ARN may be given without brackets."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from infra.settings import load_settings
from infra.settings.loading import SettingsError

REPO = Path(__file__).resolve().parents[3]
DEFAULT_PLAN = yaml.safe_load((REPO / "config/plans/default.yaml").read_text())
ADMIN = "arn:aws:iam::123456789012:role/Admin"


@pytest.mark.parametrize("value", ["none", "None", "null", "~", ""])
def test_plan_none_deploys_the_profile_without_its_plan(value: str) -> None:
    serving = load_settings("default", {"serving.plan": value}).serving
    assert serving == {}  # the profile's serving section without its plan: the defaults


def test_plan_none_keeps_the_other_serving_overrides() -> None:
    overrides = {"serving.plan": "none", "serving.profile": "qwen3-4b-dflash-3xl"}
    assert load_settings("default", overrides).serving == {"profile": "qwen3-4b-dflash-3xl"}


@pytest.mark.parametrize("written", ["none", "null"])
def test_a_profile_may_say_no_plan_itself(tmp_path: Path, written: str) -> None:
    (tmp_path / "p.yaml").write_text(f"serving:\n  plan: {written}\n  max_replicas: 3\n")
    assert load_settings("p", config_dir=tmp_path).serving == {"max_replicas": 3}


def test_a_profile_that_contradicts_the_plan_is_refused_naming_both() -> None:
    with pytest.raises(SettingsError) as err:
        load_settings("default", {"serving.profile": "qwen3-4b-dflash"})
    (line,) = [x for x in str(err.value).splitlines() if x.strip().startswith("serving.")]
    planned = DEFAULT_PLAN["serving"]["profile"]
    assert line.strip().startswith("serving.profile=qwen3-4b-dflash: the plan config/plans/")
    assert f"sets serving.profile={planned}" in line
    assert "-c serving.plan=none" in line


def test_an_engine_override_that_contradicts_the_plan_is_refused() -> None:
    with pytest.raises(SettingsError) as err:
        load_settings("default", {"serving.overrides": "[max_num_seqs=8]"})
    assert "serving.overrides=" in str(err.value)
    assert "sets serving.overrides=[max_num_seqs=1]" in str(err.value)


def test_repeating_the_plans_own_values_is_not_a_clash() -> None:
    serving = DEFAULT_PLAN["serving"]
    overrides = {
        "serving.profile": serving["profile"],
        "serving.overrides": "[" + ",".join(serving["overrides"]) + "]",
    }
    assert load_settings("default", overrides).serving["profile"] == serving["profile"]


def test_one_admin_arn_may_be_given_without_brackets() -> None:
    assert load_settings("default", {"admin_principal_arns": ADMIN}).admin_principal_arns == (
        ADMIN,
    )


def test_several_bare_admin_arns_are_told_how_to_write_the_list() -> None:
    with pytest.raises(SettingsError) as err:
        load_settings("default", {"admin_principal_arns": f"{ADMIN},{ADMIN}2"})
    assert "-c admin_principal_arns='[ARN1,ARN2]'" in str(err.value)
