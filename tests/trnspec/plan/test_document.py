"""The plan file's `plan:` records what the plan was chosen from and what it adds, typed
(trnspec.plan.document): every field of InputsRecord and PlanExtras is written under its own
name, so a field dropped from the written record, or added and never written, fails here; a
record not given is left out. The bytes of a whole file are pinned by the committed default plan
(test_deploy_plan)."""

from __future__ import annotations

from dataclasses import fields, is_dataclass, replace
from functools import cache

from trnspec.config.serving import load_profile
from trnspec.plan.document import (
    DeploymentRecord,
    InputsRecord,
    MeasuredRecord,
    PlanExtras,
    PoolRecord,
    plan_document,
)
from trnspec.plan.plan_deploy import PlanResult, plan_deploy
from trnspec.plan.plan_request import PlanRequest, PoolsGiven, given_acceptance
from trnspec.plan.pools import DeploymentConfig, Pool

COMMAND = "python -m trnspec plan-deploy --profile qwen3-4b-dflash"
MISSING = object()


@cache
def _result() -> PlanResult:
    """A decided plan with a ramp, an idle cost and a pool to add (trn2u.48xlarge has no
    published price: at this price its plan loses to trn2.48xlarge, which no pool has)."""
    pools = PoolsGiven(
        "c.yaml", (), DeploymentConfig((Pool("u", "trn2u.48xlarge", 2, 2),), True, 90)
    )
    request = PlanRequest(
        profile=(load_profile("qwen3-4b-dflash"), load_profile("qwen3-4b-baseline")),
        acceptance=given_acceptance(None, 2.1, 15, 15),
        tpot_ms=30.0,
        peak_streams=16,
        min_replicas=2,
        input_len=384,
        output_len=128,
        price_per_hour=1000.0,
        config=pools,
    )
    return plan_deploy(request)


def _as_written(value: object) -> object:
    """A record as its fields say it is written: each field under its own name."""
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: _as_written(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, tuple):
        return [_as_written(v) for v in value]
    return value


def test_the_inputs_are_read_from_the_request_the_plan_answered() -> None:
    result = _result()
    assert InputsRecord.of(result, COMMAND) == InputsRecord(
        acceptance_rate=result.acceptance_rate,
        acceptance_source="--acceptance-length 2.1 at k=15",
        tpot_target_ms=30.0,
        peak_streams=16,
        min_replicas=2,
        input_len=384,
        output_len=128,
        candidates=("qwen3-4b-dflash", "qwen3-4b-baseline"),
        command=COMMAND,
        measured=None,
        deployment=DeploymentRecord((PoolRecord("u", "trn2u.48xlarge", 2),), True),
    )


def test_every_input_is_recorded_under_its_own_name() -> None:
    result = _result()
    assert result.decision is not None
    measured = MeasuredRecord("rows.yaml", 2, ("measured slower than plain at batch 1",))
    inputs = replace(InputsRecord.of(result, COMMAND), measured=measured)
    plan = plan_document(result.decision, inputs, result.plans)["plan"]
    written = _as_written(inputs)
    assert isinstance(written, dict) and None not in written.values()
    # the deployment's fields sit beside the others (plan.pools, plan.scale_to_zero)
    expected = {k: v for k, v in written.items() if k != "deployment"}
    expected.update(written["deployment"])
    assert {key: plan.get(key, MISSING) for key in expected} == expected


def test_every_extra_is_recorded_under_its_own_name() -> None:
    result = _result()
    assert result.decision is not None
    extras = PlanExtras.of(result)
    assert extras == PlanExtras(result.ramp, result.idle, result.pool_to_add)
    assert None not in (getattr(extras, f.name) for f in fields(extras))
    plan = plan_document(result.decision, InputsRecord.of(result, COMMAND), result.plans, extras)
    assert result.ramp is not None and result.idle is not None and result.pool_to_add is not None
    written = {
        "ramp": result.ramp.describe(),
        "idle_cost": result.idle.record(),
        "pool_to_add": result.pool_to_add.describe(),
    }
    assert set(written) == {f.name for f in fields(PlanExtras)}
    assert {key: plan["plan"].get(key, MISSING) for key in written} == written


def test_a_record_not_given_is_left_out_and_min_replicas_and_output_len_reach_serving() -> None:
    result = _result()
    assert result.decision is not None
    inputs = replace(InputsRecord.of(result, COMMAND), deployment=None)
    doc = plan_document(result.decision, inputs, result.plans)
    left_out = {"measured", "pools", "scale_to_zero", *(f.name for f in fields(PlanExtras))}
    assert left_out.isdisjoint(doc["plan"])
    assert doc["serving"]["min_replicas"] == 2
    assert list(doc["plan"])[-1] == "compared" and doc["plan"]["command"] == COMMAND
    calibration = doc["serving"].get("calibration")
    assert calibration is None or calibration["output_len"] == 128
