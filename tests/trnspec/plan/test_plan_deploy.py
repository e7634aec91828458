"""plan-deploy as a pure function of a typed request (trnspec.plan.plan_deploy): which instance
types a profile is planned on, which plans are decided on, the pool to add, the ramp's floor and
policy, the idle cost's startup budget, the error that names the flag to change, and the command
line that gives the same request again (trnspec.cli.plan_deploy.command_line)."""

from __future__ import annotations

import argparse
import shlex
from dataclasses import replace
from functools import cache

import pytest
from trnspec.cli.plan_deploy import add_arguments, command_line, request_from_args
from trnspec.config.pod_contract import DEFAULT_MAX_STARTUP_MINUTES
from trnspec.config.serving import ConfigError, ServingConfig, load_profile
from trnspec.plan.plan_deploy import PlanResult, instance_overrides, nothing_fits, plan_deploy
from trnspec.plan.plan_request import (
    NO_ACCEPTANCE,
    Acceptance,
    PlanRequest,
    PoolsGiven,
    given_acceptance,
)
from trnspec.plan.pools import DeploymentConfig, Pool
from trnspec.plan.ramp import deployed_policy

SPEC, PLAIN = "qwen3-4b-dflash", "qwen3-4b-baseline"


@cache
def _profile(name: str) -> ServingConfig:
    return load_profile(name)


def _request(**changes: object) -> PlanRequest:
    base = PlanRequest(
        profile=(_profile(SPEC), _profile(PLAIN)),
        acceptance=given_acceptance(None, 2.1, 15, 15),
        tpot_ms=30.0,
        peak_streams=16,
    )
    return replace(base, **changes)  # type: ignore[arg-type]


def _pools(*pools: Pool, scale_to_zero: bool = False, startup: int = 90) -> PoolsGiven:
    return PoolsGiven("c.yaml", (), DeploymentConfig(tuple(pools), scale_to_zero, startup))


def _planned(**changes: object) -> PlanResult:
    """plan_deploy of the base request with `changes` (each asked once per module)."""
    return _plan_of(tuple(sorted(changes.items())))


@cache
def _plan_of(changes: tuple[tuple[str, object], ...]) -> PlanResult:
    return plan_deploy(_request(**dict(changes)))


def test_without_pools_each_profile_is_planned_once_on_its_own_instance_type() -> None:
    result = _planned()
    assert [(p.profile, p.instance_type, p.in_pools) for p in result.plans] == [
        (SPEC, _profile(SPEC).hardware.instance_type, None),
        (PLAIN, _profile(PLAIN).hardware.instance_type, None),
    ]
    assert result.decision is not None and result.unrestricted is None
    assert result.pool_to_add is None


def test_the_decision_serves_a_variant_the_plans_kept_and_the_ramp_and_idle_cost_time_it() -> None:
    result = _planned()
    decision = result.decision
    assert decision is not None and result.ramp is not None and result.idle is not None
    kept = [v for p in result.plans for v in (p.speculative, p.plain) if v is not None]
    assert decision.serving in kept
    assert result.ramp.peak_replicas == decision.serving.replicas_at_peak
    assert result.ramp.floor == 1  # min_replicas, no scale to zero
    assert result.idle.min_replicas.serving_replicas == 1
    assert result.idle.config_scales_to_zero is None


def test_min_replicas_is_the_ramp_floor_and_what_idles() -> None:
    result = _planned(min_replicas=3)
    assert result.ramp is not None and result.idle is not None
    assert result.ramp.floor == 3
    assert result.idle.min_replicas.serving_replicas == 3


def test_a_profile_is_planned_on_every_pool_type_and_on_its_own_type_no_pool_has() -> None:
    pools = _pools(Pool("small", "trn2.3xlarge", 2, 2))
    result = _planned(config=pools)
    own = _profile(SPEC).hardware.instance_type
    assert own != "trn2.3xlarge"
    assert [(p.profile, p.instance_type, p.in_pools) for p in result.plans] == [
        (SPEC, "trn2.3xlarge", True),
        (SPEC, own, False),
        (PLAIN, "trn2.3xlarge", True),
        (PLAIN, own, False),
    ]
    # only what the pools can run is decided on
    assert result.decision is not None
    assert result.decision.serving.instance_type == "trn2.3xlarge"
    assert result.unrestricted is not None


def test_pools_of_one_type_and_lnc_plan_it_once() -> None:
    pools = (Pool("a", "trn2.48xlarge", 2, 2), Pool("b", "trn2.48xlarge", 1, 2))
    cfg = _profile(SPEC)
    assert cfg.hardware.instance_type == "trn2.48xlarge" and cfg.hardware.lnc == 2
    assert instance_overrides(cfg, pools) == [()]
    assert instance_overrides(cfg, (*pools, Pool("c", "trn2.48xlarge", 1, 1))) == [
        (),
        ("hardware.lnc=1",),
    ]
    assert instance_overrides(cfg, (Pool("s", "trn2.3xlarge", 1, 2),)) == [
        ("hardware.instance_type=trn2.3xlarge",),
        (),
    ]


def test_the_pool_to_add_is_the_cheapest_plan_on_a_type_no_pool_has() -> None:
    # trn2u.48xlarge has no published price: at a price this high the pool's plan loses
    pools = _pools(Pool("u", "trn2u.48xlarge", 2, 2))
    result = _planned(config=pools, price_per_hour=1000.0)
    add = result.pool_to_add
    assert result.decision is not None and result.unrestricted is not None and add is not None
    assert add.best == result.unrestricted.serving
    assert add.best.instance_type == "trn2.48xlarge"
    assert add.here == result.decision.serving
    # the decision is made on the pools' plans only, even where another type is cheaper
    assert result.decision.serving.instance_type == "trn2u.48xlarge"
    assert "max_size: " + str(add.best.nodes_at_peak) in add.describe()


def test_no_pool_to_add_when_the_cheapest_plan_runs_on_the_pools() -> None:
    result = _planned(config=_pools(Pool("trn2", "trn2.48xlarge", 2, 2)))
    assert result.unrestricted is None and result.pool_to_add is None


def test_a_config_that_scales_to_zero_ramps_from_zero_and_its_startup_budget_bounds_the_bill() -> (
    None
):
    pools = _pools(Pool("trn2", "trn2.48xlarge", 2, 2), scale_to_zero=True, startup=30)
    result = _planned(config=pools)
    assert result.ramp is not None and result.idle is not None
    assert result.ramp.floor == 0 and result.ramp.from_zero
    assert result.idle.config_scales_to_zero is True
    if result.idle.calibrating is not None:
        assert result.idle.calibrating.startup_minutes == 30
    kept = _planned(config=_pools(Pool("trn2", "trn2.48xlarge", 2, 2)))
    assert kept.ramp is not None and kept.ramp.floor == 1


def test_an_undecided_plan_bills_its_calibration_with_the_default_startup_budget() -> None:
    result = _planned()
    assert result.decision is not None and result.idle is not None
    if not result.decision.calibrate:
        pytest.skip("the model is confident on this goal")
    assert result.idle.calibrating is not None
    assert result.idle.calibrating.startup_minutes == DEFAULT_MAX_STARTUP_MINUTES
    assert result.idle.calibrating.held.arm_replicas >= 1


def test_the_ramp_takes_the_deployed_policy_unless_the_request_names_one() -> None:
    plain = _planned()
    assert plain.ramp is not None and plain.decision is not None
    peak = plain.decision.serving.replicas_at_peak
    assert plain.ramp.policy == deployed_policy(1, peak, None)
    given = _planned(scale_up_pods=3, scale_up_period_s=45, pod_start_minutes=2.5)
    assert given.ramp is not None
    assert (given.ramp.policy.pods, given.ramp.policy.period_s) == (3, 45)
    assert given.ramp.policy.pod_start_s == 150.0


def test_a_ttft_target_reaches_the_ramp() -> None:
    result = _planned(ttft_ms=2000.0)
    assert result.ramp is not None and result.ramp.ttft_target_ms == 2000.0


def test_the_candidate_batches_bound_every_kept_variant() -> None:
    result = _planned(max_num_seqs=(1, 2))
    kept = [v for p in result.plans for v in (p.speculative, p.plain) if v is not None]
    assert kept and {v.max_num_seqs for v in kept} <= {1, 2}


def test_a_request_that_does_not_fit_max_model_len_names_input_len() -> None:
    with pytest.raises(ConfigError) as err:
        plan_deploy(_request(input_len=9_000_000))
    assert err.value.problems[0].field == "--input-len"


@pytest.mark.parametrize(
    ("changes", "flag"),
    [
        ({"tpot_ms": 1.0}, "--tpot-ms"),
        ({"peak_streams": 100_000}, "--peak-streams"),
    ],
)
def test_when_nothing_fits_the_error_names_the_flag_to_change(
    changes: dict[str, object], flag: str
) -> None:
    result = _planned(**changes)
    assert result.decision is None and result.ramp is None and result.idle is None
    assert nothing_fits(result).problems[0].field == flag


def test_when_only_the_pools_node_bound_stops_every_variant_the_error_names_the_config() -> None:
    # one node of 16 replicas: 20 streams need two at batch 1; larger batches miss the target
    pools = _pools(Pool("trn2", "trn2.48xlarge", 1, 2))
    result = _planned(config=pools, peak_streams=20, max_num_seqs=(1,))
    assert result.decision is None
    problem = nothing_fits(result).problems[0]
    assert (problem.field, problem.value) == ("--config", "c.yaml")


def test_acceptance_given_as_a_rate_or_a_length_and_how_it_is_replayed() -> None:
    assert given_acceptance(0.7, None, None, 15) == Acceptance(
        0.7, "--acceptance-rate", (("acceptance_rate", 0.7),)
    )
    by_length = given_acceptance(None, 2.1, None, 15)
    assert by_length.source == "--acceptance-length 2.1 at k=15"
    assert dict(by_length.replay) == {"acceptance_length": 2.1, "acceptance_k": None}
    # a shorter window accepts more per token for the same length
    assert given_acceptance(None, 2.1, 3, 15).rate > by_length.rate
    with pytest.raises(ConfigError) as err:
        given_acceptance(None, None, None, 15)
    assert err.value.problems[0].field == "--acceptance-rate"


def _parse(command: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    argv = shlex.split(command)
    assert argv[:4] == ["python", "-m", "trnspec", "plan-deploy"]
    return parser.parse_args(argv[4:])


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"acceptance": given_acceptance(0.55, None, None, 15)},
        {"acceptance": given_acceptance(None, 2.5, 7, 15)},
        {
            "min_replicas": 2,
            "max_num_seqs": (1, 4, 16),
            "price_per_hour": 30.5,
            "input_len": 1024,
            "output_len": 300,
            "ttft_ms": 1500.0,
            "scale_up_pods": 2,
            "scale_up_period_s": 30,
            "pod_start_minutes": 20.0,
        },
        {"profile": (_profile(PLAIN),), "acceptance": NO_ACCEPTANCE},
    ],
    ids=["length-at-k", "rate", "length-at-own-k", "every-number", "plain-only"],
)
def test_the_command_line_gives_the_same_request_again(changes: dict[str, object]) -> None:
    request = _request(**changes)
    assert request_from_args(_parse(command_line(request))) == request


def test_the_command_line_replays_a_config_with_its_overrides_in_order(tmp_path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("trn2_pools:\n  - name: trn2\n")
    sets = ("trn2_pools.0.max_size=3", "trn2_pools.trn2.lnc=1")
    request = _request(config=PoolsGiven(str(path), sets, DeploymentConfig((), False)))
    args = _parse(command_line(request))
    assert (args.config, args.overrides) == (str(path), list(sets))
    again = request_from_args(args)
    assert again.config is not None
    assert again.config.deployment.pools == (Pool("trn2", "trn2.48xlarge", 3, 1),)


def test_the_command_line_quotes_a_path_and_a_set_that_hold_shell_syntax(tmp_path) -> None:
    """The command is printed for a user to paste and kept in the plan (plan.command, which
    `calibrate fetch` splits again): a config path or a --set value with spaces or `$(...)` is
    one word of it."""
    path = tmp_path / "my configs $(touch x)" / "c; id.yaml"
    path.parent.mkdir()
    path.write_text("trn2_pools:\n  - name: trn2\n")
    sets = ("trn2_pools.trn2.labels.team=a b && id",)
    request = _request(config=PoolsGiven(str(path), sets, DeploymentConfig((), False)))
    args = _parse(command_line(request))
    assert (args.config, args.overrides) == (str(path), list(sets))


def test_a_served_acceptance_is_replayed_as_its_length_and_window() -> None:
    served = Acceptance(0.5, "served", (("acceptance_length", "2.1234"), ("acceptance_k", 7)))
    command = command_line(_request(acceptance=served))
    assert " --acceptance-length 2.1234 --acceptance-k 7 " in command
    assert "--acceptance-from" not in command and "--window" not in command


def test_the_command_line_omits_what_was_not_given_and_never_the_output_flags() -> None:
    command = command_line(_request())
    for flag in ("--out", "--format", "--price-per-hour", "--max-num-seqs", "--config", "--set"):
        assert f"{flag} " not in command
    assert command.count("--profile ") == 2
    assert "--min-replicas 1 " in command and "--tpot-ms 30 " in command


def test_the_replay_names_only_flags_of_the_parser() -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    dests = {a.dest for a in parser._actions}
    assert set(_request().replay()) <= dests
