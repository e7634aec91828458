"""plan-deploy picks the cheapest deployment that meets the TPOT target and never deploys a
speculative variant slower than the plain server at any load it can see; its figures are the
nodes AWS bills (trnspec.plan.deploy_plan, trnspec.cli.plan_deploy)."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from trnspec.cli.main import main
from trnspec.config.serving import ConfigError, ServingConfig, apply_overrides, load_profile
from trnspec.hardware.packing import ReplicaPlacement, placement_for
from trnspec.hardware.pricing import PRICES
from trnspec.perf.step_time import decode_context_tokens
from trnspec.perf.trn2_fit import Calibration, trn2_calibration
from trnspec.plan import deploy_plan
from trnspec.plan.deploy_plan import (
    Fleet,
    PlanInputs,
    Skip,
    Variant,
    candidate_ks,
    plan_profile,
    plan_profiles,
    price_for,
    rank,
    with_calibration,
)

REPO = Path(__file__).resolve().parents[3]
PRICE = PRICES["trn2.48xlarge"].usd_per_hour
assert PRICE is not None


def _inputs(tpot_ms: float = 30, peak: int = 16, min_replicas: int = 1) -> PlanInputs:
    return PlanInputs(
        tpot_ms, peak, min_replicas, (1, 2, 4, 8, 16, 32), decode_context_tokens(512, 256)
    )


def test_a_plan_bills_whole_nodes_for_the_replicas_at_peak() -> None:
    plan = plan_profile(load_profile("qwen3-4b-baseline"), 0.0, [], PRICE, _inputs(peak=40))
    v = plan.plain
    assert v is not None and plan.speculative is None and plan.choice is v
    assert v.replicas_at_peak == max(1, math.ceil(40 / v.max_num_seqs))
    assert v.nodes_at_peak == math.ceil(v.replicas_at_peak / v.replicas_per_node)
    billed = v.nodes_at_peak * PRICE / 3600
    assert v.cost_per_1m_output_tokens_usd == pytest.approx(
        billed / (v.replicas_at_peak * v.tokens_per_s_per_replica) * 1e6
    )
    assert v.idle_cost_per_hour_usd == PRICE  # min_replicas 1 occupies one node
    placement = placement_for(load_profile("qwen3-4b-baseline"))
    assert placement is not None and v.replicas_per_node == placement.packing.replicas


def test_every_variant_meets_the_tpot_target_or_none_is_offered() -> None:
    loose = plan_profile(load_profile("qwen3-4b-baseline"), 0.0, [], PRICE, _inputs(tpot_ms=100))
    tight = plan_profile(load_profile("qwen3-4b-baseline"), 0.0, [], PRICE, _inputs(tpot_ms=1))
    assert loose.plain is not None and loose.plain.tpot_ms <= 100
    assert tight.plain is None and tight.choice is None


def test_a_speculative_variant_is_chosen_only_where_it_beats_plain_at_every_batch() -> None:
    # High acceptance on the legacy draft-model profile: speculation pays at small batches.
    cfg = load_profile("qwen3-32b-draft")
    good = plan_profile(cfg, 0.8, range(1, 8), PRICE, _inputs(tpot_ms=200, peak=4))
    assert good.speculative is not None and good.speculative.pays
    assert good.speculative.min_speedup >= 1.0
    # No acceptance at all: every speculative variant is slower, and none is chosen.
    bad = plan_profile(cfg, 0.0, range(1, 8), PRICE, _inputs(tpot_ms=200, peak=4))
    assert bad.speculative is None or not bad.speculative.pays
    assert bad.choice is bad.plain


def test_a_dflash_profile_is_planned_only_at_its_drafters_window() -> None:
    plan = plan_profile(load_profile("qwen3-4b-dflash"), 0.9, range(1, 16), PRICE, _inputs())
    assert plan.speculative is not None and plan.speculative.k == 15
    assert any("k=7" in str(s) and "block_size" in str(s) for s in plan.skipped)


def test_the_default_pair_at_its_published_acceptance_is_cheaper_without_speculation() -> None:
    """AWS's Qwen3-4B DFlash figures (acceptance length 2.1 at k=15) against the plain server the
    plan would deploy: DFlash schedules synchronously (--no-async-scheduling), the plain server
    does not, and the model prices that difference."""
    from trnspec.perf.step_time import alpha_from_tokens_per_step

    alpha = alpha_from_tokens_per_step(2.1, 15)
    plan = plan_profile(load_profile("qwen3-4b-dflash"), alpha, [15], PRICE, _inputs())
    assert plan.speculative is not None and not plan.speculative.pays
    assert plan.choice is plan.plain
    assert plan.plain is not None and "speculation.method=none" in plan.plain.overrides


def _plan_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(["plan-deploy", *argv])
    except SystemExit as exc:  # argparse refuses a flag's value: usage and exit 2
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def test_every_variant_carries_the_band_of_its_whole_regime() -> None:
    """A variant's band is the one from unseen sources for its own stack, method, batch, TP,
    context and model size: an axis left out of the query would hide how far the figure
    extrapolates (the plain plugin has no row at TP 4) and give it a narrower band."""
    from trnspec.perf.error_bands import source_band_for
    from trnspec.perf.step_time import alpha_from_tokens_per_step

    cfg = load_profile("qwen3-4b-dflash")
    alpha = alpha_from_tokens_per_step(2.1, 15)
    inputs = _inputs()
    plan = plan_profile(cfg, alpha, [15], PRICE, inputs)
    assert plan.speculative is not None and plan.plain is not None
    cal, qwen4 = trn2_calibration(), trn2_calibration().shapes["qwen3-4b"]
    for v, group in ((plan.speculative, "plugin-sync"), (plan.plain, "plugin")):
        full = source_band_for(
            cal, group, "dflash", v.k, v.max_num_seqs, tp=4,
            context_tokens=inputs.context_tokens, target=qwen4,
        )  # fmt: skip
        assert (v.error, v.band_note) == (full.max_abs_error, full.describe())
    without_tp = source_band_for(
        cal, "plugin", "none", 0, 1, context_tokens=inputs.context_tokens, target=qwen4
    )
    assert plan.plain.error is not None and without_tp.max_abs_error is not None
    assert plan.plain.error > without_tp.max_abs_error
    assert "outside the data in tensor parallel size" in plan.plain.band_note
    # no plugin row has a mean context of 1024-8191 tokens: a long context is outside the data
    long = plan_profile(cfg, alpha, [15], PRICE, replace(inputs, context_tokens=3000))
    assert long.plain is not None
    _, outside = long.plain.band_note.split("outside the data in ")
    assert "context (mean KV tokens)" in outside


def test_the_committed_default_plan_is_what_the_command_writes_today(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """config/plans/default.yaml records its own command; running it again (from the repository
    root, where its --config path is) must write the same file (regenerate it when the model,
    prices or profiles change)."""
    monkeypatch.chdir(REPO)
    text = (REPO / "config/plans/default.yaml").read_text()
    committed = yaml.safe_load(text)
    argv = committed["plan"]["command"].removeprefix("python -m trnspec plan-deploy ").split()
    out = tmp_path / "plan.yaml"
    code, _, err = _plan_cli(capsys, *argv, "--out", str(out))
    assert code == 0, err
    assert out.read_text() == text  # byte for byte: the keys' order and every rounding


def _plan_from_report(capsys: pytest.CaptureFixture[str], report: Path) -> tuple[int, str, str]:
    argv = ["--profile", "qwen3-4b-dflash", "--tpot-ms", "40", "--peak-streams", "8"]
    return _plan_cli(capsys, *argv, "--tune-report", str(report))


def test_a_tune_report_gives_the_acceptance(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "tune.json"
    report.write_text(json.dumps({"fit": {"alpha": 0.7}}))
    code, out, _ = _plan_from_report(capsys, report)
    assert code == 0
    assert "a=0.700 (fit.alpha of" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--tpot-ms", "0", "--peak-streams", "4", "--acceptance-rate", "0.5"],
            "argument --tpot-ms: 0: must be a finite number > 0",
        ),
        (["--tpot-ms", "30", "--peak-streams", "4"], "--acceptance-rate"),
        (
            ["--tpot-ms", "30", "--peak-streams", "4", "--acceptance-rate", "2"],
            "argument --acceptance-rate: 2: must be a finite number >= 0 and <= 1",
        ),
        (["--tpot-ms", "0.5", "--peak-streams", "4", "--acceptance-rate", "0.5"], "no variant"),
        (
            [
                *("--tpot-ms", "30", "--peak-streams", "4", "--acceptance-rate", "0.5"),
                *("--max-num-seqs", "1,x"),
            ],
            "--max-num-seqs=1,x: give comma-separated integers",
        ),
    ],
    ids=["tpot-zero", "no-acceptance", "rate-above-one", "target-unreachable", "batches-not-ints"],
)
def test_bad_input_exits_2_naming_the_flag(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code, _, err = _plan_cli(capsys, "--profile", "qwen3-4b-dflash", *argv)
    assert code == 2
    assert message in err


def test_a_bad_tune_report_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A short relative path: a long one is shortened in the message (the value is bounded).
    monkeypatch.chdir(tmp_path)
    report = Path("tune.json")
    report.write_text(json.dumps({"rows": []}))
    code, _, err = _plan_from_report(capsys, report)
    assert code == 2
    assert f"--tune-report={report}: not a tune report with fit.alpha" in err


# ------------------------------------------------------------------ properties of the planner

#: Speculative profiles and acceptances the properties range over (low to high acceptance).
GRID = [
    (profile, alpha)
    for profile in ("llama31-8b-eagle3", "qwen3-32b-draft")
    for alpha in (0.1, 0.25, 0.4, 0.6, 0.8)
]


def _speedups(
    cfg_name: str, alpha: float, k: int, batches: range, cal: Calibration | None = None
) -> list[float]:
    """Speculation over plain at each batch, computed from the model directly (with `cal`'s
    constants when given, else the shipped fit's)."""
    from trnspec.perf.profile_model import profile_model
    from trnspec.plan.deploy_plan import with_calibration

    context = decode_context_tokens(512, 256)
    cal = cal or trn2_calibration()
    spec = with_calibration(profile_model(load_profile(cfg_name), context), cal)
    plain_cfg = apply_overrides(load_profile(cfg_name), ["speculation.method=none"])
    plain = with_calibration(profile_model(plain_cfg, context), cal)
    s = spec.grid(alpha, [k], list(batches))
    base = plain.grid(alpha, [0], list(batches))
    return [p.output_tokens_per_s / q.output_tokens_per_s for p, q in zip(s, base, strict=True)]


@pytest.mark.parametrize(("profile", "alpha"), GRID)
def test_a_deployable_speculative_variant_beats_plain_at_every_batch_up_to_its_own(
    profile: str, alpha: float
) -> None:
    """A replica of max_num_seqs b decodes any batch 1..b as load comes and goes: speculation
    is deployable only if it is faster than plain at each of them, not only at b."""
    batches = (1, 2, 3, 4, 6, 8, 16)
    inputs = PlanInputs(1e6, 4, 1, batches, decode_context_tokens(512, 256))
    cfg = load_profile(profile)
    for k in range(1, 8):
        plan = plan_profile(cfg, alpha, [k], PRICE, inputs)
        v = plan.speculative
        if v is None:
            continue
        speedups = _speedups(profile, alpha, k, range(1, v.max_num_seqs + 1))
        assert v.min_speedup == pytest.approx(min(speedups))
        assert v.pays == all(s >= 1.0 for s in speedups)
        if plan.choice is v:
            assert all(s >= 1.0 for s in speedups)


def test_speculation_faster_at_its_full_batch_but_slower_below_it_is_not_deployable() -> None:
    """A variant faster than plain at its full batch but slower below it never pays. The shipped
    fit has no such case (its speedups fall with batch everywhere on the grid); with the plain
    server's host cost per sequence at 1.2 ms (the 19-row fit's, a constant the data moved once
    already), EAGLE3 on Llama-3.1-8B has several, found by search, and the plan keeps plain."""
    shipped = trn2_calibration()
    plain_stack = shipped.efficiency["plugin"]
    cal = replace(
        shipped,
        efficiency={
            **shipped.efficiency,
            "plugin": replace(plain_stack, sequence_overhead_s=1.2e-3),
        },
    )
    found = []
    for profile, alpha in GRID:
        for k in range(1, 8):
            for b in (2, 3, 4, 6, 8, 16):
                s = _speedups(profile, alpha, k, range(1, b + 1), cal)
                if s[-1] >= 1.0 and min(s) < 1.0:
                    found.append((profile, alpha, k, b))
    assert found, "the model has no such case on the grid: widen the grid"
    for profile, alpha, k, b in found[:6]:
        inputs = PlanInputs(1e6, 4, 1, (b,), decode_context_tokens(512, 256))
        plan = plan_profile(load_profile(profile), alpha, [k], PRICE, inputs, cal=cal)
        assert plan.speculative is not None and not plan.speculative.pays
        assert plan.choice is plan.plain


def test_the_cost_of_a_plan_counts_every_replica_on_every_billed_node() -> None:
    """16 TP-4 replicas on one trn2.48xlarge: the node's hour buys 16 replicas' tokens."""
    cfg = load_profile("llama31-8b-eagle3")
    inputs = PlanInputs(1e6, 16, 1, (1,), decode_context_tokens(512, 256))
    plan = plan_profile(
        cfg, 0.6, [1], PRICE, inputs, base_overrides=["hardware.instance_type=trn2.48xlarge"]
    )
    v = plan.plain
    assert v is not None and (v.replicas_at_peak, v.nodes_at_peak, v.replicas_per_node) == (
        16,
        1,
        16,
    )
    one_replica = PRICE / (v.tokens_per_s_per_replica * 3600) * 1e6
    assert v.cost_per_1m_output_tokens_usd == pytest.approx(one_replica / 16)


def test_every_variant_left_out_says_why() -> None:
    """A variant within the TPOT target but over the replica cap is left out for the cap, and
    one over the target for the target, each with the figure that failed."""
    cfg = load_profile("qwen3-4b-baseline")
    inputs = PlanInputs(30, 200, 1, (1, 32), decode_context_tokens(512, 256))
    plan = plan_profile(cfg, 0.0, [], PRICE, inputs)
    reasons = {s.batch: s for s in plan.skipped}
    assert "cap of 64" in reasons[1].reason and reasons[1].figure == 200
    assert "TPOT" in reasons[32].reason and reasons[32].figure is not None
    assert reasons[32].figure > 30


def test_a_veto_from_measured_rows_keeps_speculation_out_at_and_above_that_batch() -> None:
    cfg = load_profile("qwen3-32b-draft")
    inputs = PlanInputs(200, 4, 1, (1, 2, 4), decode_context_tokens(512, 256))
    free = plan_profile(cfg, 0.8, range(1, 8), PRICE, inputs)
    assert free.speculative is not None and free.speculative.pays

    def veto(target: str, group: str, batch: int) -> str | None:
        return "measured slower than plain at batch 2" if batch == 2 else None

    vetoed = plan_profile(cfg, 0.8, range(1, 8), PRICE, inputs, veto=veto)
    assert vetoed.speculative is not None and vetoed.speculative.max_num_seqs == 1
    assert {s.batch for s in vetoed.skipped if "measured slower" in s.reason} == {2, 4}
    assert not any(s.k == 0 and "measured" in s.reason for s in vetoed.skipped)


def test_the_default_plan_measures_when_undecided_and_states_its_margin_when_not() -> None:
    """Undecided: plain Qwen3-4B serves and Qwen3-4B DFlash is calibrated beside it, at levels up
    to the arms' batch; confident: no calibration, and the margin is recorded."""
    doc = yaml.safe_load((REPO / "config/plans/default.yaml").read_text())
    serving, decision = doc["serving"], doc["plan"]["decision"]
    if decision["verdict"] == "undecided":
        assert "undecided at this confidence: measure" in decision["reason"]
        assert serving["profile"] == "qwen3-4b-baseline"
        calibration = serving["calibration"]
        assert calibration["speculative"]["profile"] == "qwen3-4b-dflash"
        top = int(
            next(o for o in serving["overrides"] if o.startswith("max_num_seqs=")).split("=")[1]
        )
        assert calibration["concurrency"][0] == 1 and calibration["concurrency"][-1] <= top
    else:
        assert "calibration" not in serving
        assert decision["margin_at_band_edges"] > 1


# ------------------------------------------------------------------ the planner's parts


def test_a_skip_reads_as_its_window_batch_reason_and_failing_figure() -> None:
    assert str(Skip(3, 4, "TPOT (ms) above the 30 ms target", 41.25)) == (
        "k=3 b=4: TPOT (ms) above the 30 ms target (41.25)"
    )
    assert str(Skip(0, 8, "does not fit a node (chips)")) == "k=0 b=8: does not fit a node (chips)"


def _priced(v: Variant, cost: float, speedup: float, nodes: int = 1) -> Variant:
    return replace(v, cost_per_1m_output_tokens_usd=cost, min_speedup=speedup, nodes_at_peak=nodes)


def _a_variant() -> Variant:
    plan = plan_profile(load_profile("qwen3-4b-baseline"), 0.0, [], PRICE, _inputs())
    assert plan.plain is not None
    return plan.plain


@pytest.mark.parametrize("paying", [1.0, 1.5])
def test_a_paying_variant_ranks_before_any_that_does_not_however_cheap(paying: float) -> None:
    """Paying means never slower than plain (a min speedup of exactly 1 pays)."""
    v = _a_variant()
    assert rank(_priced(v, 9.0, paying)) < rank(_priced(v, 1.0, 0.99))


def test_a_cost_tie_goes_to_fewer_nodes_and_a_cent_is_no_tie() -> None:
    """Costs within a billionth of a dollar per 1M tokens tie."""
    v = _a_variant()
    assert rank(_priced(v, 5.0 + 3e-10, 1.0, nodes=1)) < rank(_priced(v, 5.0, 1.0, nodes=2))
    assert rank(_priced(v, 5.2, 1.0, nodes=2)) < rank(_priced(v, 5.21, 1.0, nodes=1))


def test_a_plan_priced_with_another_calibration_uses_its_constants_everywhere() -> None:
    from trnspec.perf.profile_model import profile_model

    cal = trn2_calibration()
    other = replace(
        cal,
        hardware=replace(cal.hardware, memory_bytes_per_s=cal.hardware.memory_bytes_per_s / 2),
        efficiency={
            g: replace(e, step_overhead_s=e.step_overhead_s + 0.001)
            for g, e in cal.efficiency.items()
        },
    )
    model = with_calibration(profile_model(load_profile("qwen3-4b-dflash"), 640), other)
    assert model.group != model.plain_group
    assert model.efficiency == other.efficiency[model.group]
    assert model.plain_efficiency == other.efficiency[model.plain_group]
    assert model.deployment.hardware == other.hardware


def test_pools_without_the_instance_type_hold_none_of_its_nodes() -> None:
    fleet = Fleet({"trn2.3xlarge": 2})
    assert fleet.node_limit("trn2.48xlarge") == 0 and fleet.node_limit("trn2.3xlarge") == 2
    assert Fleet().node_limit("trn2.48xlarge") is None
    cfg = load_profile("qwen3-4b-baseline")  # trn2.48xlarge
    plan = plan_profile(cfg, 0.0, [], PRICE, _inputs(peak=200), fleet=fleet)
    assert plan.in_pools is False and plan.plain is not None


def test_the_veto_is_asked_about_every_batch_up_to_the_variants_of_its_target_and_stack() -> None:
    asked: set[tuple[str, str, int]] = set()

    def veto(target: str, group: str, batch: int) -> str | None:
        asked.add((target, group, batch))
        return "measured slower than plain at batch 3" if batch == 3 else None

    cfg = load_profile("qwen3-32b-draft")
    inputs = PlanInputs(200, 4, 1, (1, 3), decode_context_tokens(512, 256))
    plan = plan_profile(cfg, 0.8, [2], PRICE, inputs, veto=veto)
    assert asked == {("Qwen3-32B", "nxdi-fork", b) for b in (1, 2, 3)}
    assert plan.speculative is not None and plan.speculative.max_num_seqs == 1
    assert [(s.k, s.batch) for s in plan.skipped if "measured" in s.reason] == [(2, 3)]


@pytest.mark.parametrize("ephemeral_gib", [None, 1_000_000])
def test_a_variant_whose_replica_fits_no_node_is_left_out_saying_why(
    monkeypatch: pytest.MonkeyPatch, ephemeral_gib: int | None
) -> None:
    def placed(cfg: ServingConfig) -> ReplicaPlacement | None:
        return None if ephemeral_gib is None else placement_for(cfg, ephemeral_gib=ephemeral_gib)

    monkeypatch.setattr(deploy_plan, "placement_for", placed)
    cfg = load_profile("qwen3-4b-baseline")
    inputs = PlanInputs(1e6, 4, 1, (1, 2), decode_context_tokens(512, 256))
    plan = plan_profile(cfg, 0.0, [], PRICE, inputs)
    assert plan.plain is None
    none_fit = placed(cfg)
    why = none_fit.packing.reason if none_fit else "storage not sizable offline"
    assert ephemeral_gib is None or "ephemeral-storage" in why
    assert plan.skipped == tuple(Skip(0, b, f"does not fit a node ({why})") for b in (1, 2))


@pytest.mark.parametrize(
    ("profile", "top"),
    [("llama31-8b-eagle3", 7), ("llama31-8b-dflash", 9), ("qwen3-4b-dflash", 15)],
)
def test_the_candidate_windows_run_from_1_to_the_larger_of_the_images_and_the_profiles(
    profile: str, top: int
) -> None:
    assert list(candidate_ks(load_profile(profile))) == list(range(1, top + 1))


def test_a_price_is_the_one_given_else_the_tables_else_a_problem_naming_the_flag() -> None:
    assert price_for("trn2.48xlarge", 10.0) == 10.0
    assert price_for("trn2.48xlarge", None) == PRICE
    with pytest.raises(ConfigError) as err:
        price_for("trn2u.48xlarge", None)
    (problem,) = err.value.problems
    assert str(problem).startswith("--price-per-hour: trn2u.48xlarge: no published on-demand price")


def test_every_candidate_is_planned_at_its_windows_and_its_instances_price() -> None:
    cfgs = [load_profile("llama31-8b-eagle3"), load_profile("qwen3-4b-baseline")]
    inputs = PlanInputs(1e6, 4, 1, (1, 4), decode_context_tokens(512, 256))
    plans = plan_profiles(cfgs, 0.7, None, inputs)
    assert [p.profile for p in plans] == [c.name for c in cfgs]
    for cfg, plan in zip(cfgs, plans, strict=True):
        assert plan == plan_profile(
            cfg, 0.7, candidate_ks(cfg), price_for(cfg.hardware.instance_type, None), inputs
        )
    spec = plans[0].speculative
    assert spec is not None and spec.price_per_hour_usd == PRICES["trn2.3xlarge"].usd_per_hour
    overridden = [p.plain for p in plan_profiles(cfgs, 0.7, 10.0, inputs)]
    assert [v.price_per_hour_usd if v else None for v in overridden] == [10.0, 10.0]


def test_every_candidate_is_planned_with_the_calibration_and_veto_given() -> None:

    cfgs = [load_profile("llama31-8b-eagle3")]
    inputs = PlanInputs(1e6, 4, 1, (1, 4), decode_context_tokens(512, 256))
    cal = trn2_calibration()
    slower = cal.hardware.memory_bytes_per_s / 2
    slow = replace(cal, hardware=replace(cal.hardware, memory_bytes_per_s=slower))
    (default,) = plan_profiles(cfgs, 0.7, None, inputs)
    (recalibrated,) = plan_profiles(cfgs, 0.7, None, inputs, cal=slow)
    assert default.plain is not None and recalibrated.plain is not None
    assert recalibrated.plain.tpot_ms > default.plain.tpot_ms

    def refuse(target: str, group: str, batch: int) -> str:
        return "measured slower than plain"

    (vetoed,) = plan_profiles(cfgs, 0.7, None, inputs, veto=refuse)
    assert vetoed.speculative is None
    assert {s.reason for s in vetoed.skipped} == {"measured slower than plain"}


def test_a_variant_exactly_at_the_tpot_target_meets_it() -> None:
    cfg = load_profile("qwen3-4b-baseline")
    inputs = PlanInputs(1e6, 4, 1, (4,), decode_context_tokens(512, 256))
    free = plan_profile(cfg, 0.0, [], PRICE, inputs).plain
    assert free is not None
    at = plan_profile(cfg, 0.0, [], PRICE, replace(inputs, tpot_target_ms=free.tpot_ms)).plain
    assert at == free
    over = plan_profile(cfg, 0.0, [], PRICE, replace(inputs, tpot_target_ms=free.tpot_ms / 2))
    (skip,) = over.skipped
    assert (skip.k, skip.batch, skip.figure) == (0, 4, round(free.tpot_ms, 2))


def test_the_replica_cap_admits_exactly_its_number_of_replicas() -> None:
    cfg = load_profile("qwen3-4b-baseline")
    at_cap = plan_profile(cfg, 0.0, [], PRICE, PlanInputs(1e6, 64, 1, (1,), 640))
    assert at_cap.plain is not None and at_cap.plain.replicas_at_peak == 64
    over = plan_profile(cfg, 0.0, [], PRICE, PlanInputs(1e6, 65, 1, (1,), 640))
    assert [(s.k, s.batch, s.figure) for s in over.skipped] == [(0, 1, 65)]


def test_the_pools_node_bound_admits_exactly_its_number_of_nodes() -> None:
    """16 replicas a trn2.48xlarge: 32 streams at batch 1 need 2 nodes, 33 need 3."""
    cfg = load_profile("qwen3-4b-baseline")
    fleet = Fleet({"trn2.48xlarge": 2})
    fits = plan_profile(cfg, 0.0, [], PRICE, PlanInputs(1e6, 32, 1, (1,), 640), fleet=fleet)
    assert fits.plain is not None and fits.plain.nodes_at_peak == 2 and fits.in_pools
    over = plan_profile(cfg, 0.0, [], PRICE, PlanInputs(1e6, 33, 1, (1,), 640), fleet=fleet)
    assert over.skipped == (
        Skip(0, 1, "nodes at peak above the 2 the config's trn2.48xlarge pools allow", 3),
    )
    one = plan_profile(
        cfg, 0.0, [], PRICE, PlanInputs(1e6, 32, 1, (1,), 640), fleet=Fleet({"trn2.48xlarge": 1})
    )
    assert one.plain is None and one.skipped[0].figure == 2 and one.in_pools is True
    unbounded = plan_profile(cfg, 0.0, [], PRICE, PlanInputs(1e6, 33, 1, (1,), 640))
    assert unbounded.in_pools is None and unbounded.plain is not None


def test_a_variant_records_what_it_is_and_where_it_runs() -> None:
    """k>0 is speculative and priced in the profile's stack; k=0 is the plain server."""
    cfg = load_profile("llama31-8b-eagle3")
    inputs = PlanInputs(1e6, 4, 3, (2,), decode_context_tokens(512, 256))
    plan = plan_profile(
        cfg, 0.9, [1], PRICE, inputs, base_overrides=["hardware.instance_type=trn2.48xlarge"]
    )
    spec, plain = plan.speculative, plan.plain
    assert spec is not None and plain is not None
    for v in (spec, plain):
        placement = placement_for(apply_overrides(cfg, list(v.overrides)))
        assert placement is not None and v.packing_reason == placement.packing.reason
        assert v.target == "Llama-3.1-8B" and v.instance_type == "trn2.48xlarge"
        assert v.idle_nodes == 1 and v.replicas_per_node == 16
    assert (spec.k, spec.speculative, plain.k, plain.speculative) == (1, True, 0, False)
    assert "plugin-sync, eagle3" in spec.band_note and "plugin, none" in plain.band_note
    assert plan.instance_type == "trn2.48xlarge" and plan.has_speculation is True
    plain_only = plan_profile(load_profile("qwen3-4b-baseline"), 0.0, [1], PRICE, inputs)
    assert plain_only.has_speculation is False and plain_only.speculative is None


def test_each_window_and_batch_is_judged_once() -> None:
    """k=0 is always the plain twin; a 0 among the windows asked adds nothing."""
    cfg = load_profile("llama31-8b-eagle3")
    inputs = PlanInputs(1e-3, 4, 1, (1, 2), decode_context_tokens(512, 256))  # nothing meets it
    plan = plan_profile(cfg, 0.7, [0, 2], PRICE, inputs)
    assert [(s.k, s.batch) for s in plan.skipped] == [(0, 1), (2, 1), (0, 2), (2, 2)]
