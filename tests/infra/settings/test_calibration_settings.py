"""`serving.calibration`: the speculative arm and what the Job measures, typed where it enters."""

from __future__ import annotations

from typing import Any

import pytest

from infra.settings.serving import ServingSettingsError, load_serving_settings

ARM = {"speculative": {"profile": "qwen3-4b-dflash", "overrides": ["max_num_seqs=4"]}}


def test_a_calibration_section_is_read_with_its_defaults() -> None:
    s = load_serving_settings({"profile": "qwen3-4b-baseline", "calibration": ARM})
    assert s.calibration is not None
    cal = s.calibration
    assert cal.speculative.profile == "qwen3-4b-dflash"
    assert cal.speculative.overrides == ("max_num_seqs=4",)
    assert (cal.concurrency, cal.rounds, cal.prompts_key) == ((1, 2, 4), 4, None)
    assert (cal.output_len, cal.deadline_minutes) == (256, 120)


def test_without_the_section_there_is_no_calibration() -> None:
    assert load_serving_settings({}).calibration is None


@pytest.mark.parametrize(
    ("extra", "field", "fix"),
    [
        ({"rounds": 3}, "serving.calibration.rounds", "must be even"),
        ({"rounds": True}, "serving.calibration.rounds", "not true"),
        ({"concurrency": [1, 4, 2]}, "serving.calibration.concurrency", "strictly increasing"),
        ({"concurrency": [0, 1]}, "serving.calibration.concurrency", "between 1 and 1024"),
        ({"concurrency": []}, "serving.calibration.concurrency", ""),
        ({"prompts_key": "s3://b/p.jsonl"}, "serving.calibration.prompts_key", "inside the model"),
        ({"prompts_key": "../p.jsonl"}, "serving.calibration.prompts_key", "inside the model"),
        ({"deadline_minutes": 5}, "serving.calibration.deadline_minutes", ""),
        ({"output_len": 0}, "serving.calibration.output_len", ""),
        ({"speed": 1}, "serving.calibration.speed", "unknown field"),
    ],
)
def test_a_bad_calibration_field_is_named_with_its_fix(
    extra: dict[str, Any], field: str, fix: str
) -> None:
    with pytest.raises(ServingSettingsError) as err:
        load_serving_settings({"calibration": {**ARM, **extra}})
    (problem,) = err.value.problems
    assert problem.field == field
    assert fix in problem.fix


def test_the_speculative_arm_is_required() -> None:
    with pytest.raises(ServingSettingsError) as err:
        load_serving_settings({"calibration": {"rounds": 2}})
    assert [p.field for p in err.value.problems] == ["serving.calibration.speculative"]


def test_the_rerun_tokens_come_from_cdk_context_as_text() -> None:
    """`cdk deploy -c serving.calibration.rerun=2` on the default profile (its plan is a
    calibration) and `-c serving.weights_rerun=2`: `-c` values arrive as text, a number kept as
    the token written."""
    from infra.settings import load_settings

    admin = {"admin_principal_arns": "[arn:aws:iam::123456789012:role/TrnspecAdmin]"}
    base = load_serving_settings(load_settings("default", admin).serving)
    again = load_serving_settings(
        load_settings(
            "default", {**admin, "serving.calibration.rerun": "2", "serving.weights_rerun": "2"}
        ).serving
    )
    assert base.calibration is not None and again.calibration is not None
    assert (base.calibration.rerun, base.weights_rerun) == (None, None)
    assert (again.calibration.rerun, again.weights_rerun) == ("2", "2")
    assert again.calibration.model_copy(update={"rerun": None}) == base.calibration
