"""plan-deploy picks the cheapest deployment that meets the TPOT target and never deploys a
speculative variant slower than the plain server at any load it can see; its figures are the
nodes AWS bills (trnspec.perf.deploy_plan, trnspec.cli.plan_deploy)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import yaml
from trnspec.cli.main import main
from trnspec.config.serving import load_profile
from trnspec.hardware.packing import placement_for
from trnspec.hardware.pricing import PRICES
from trnspec.perf.deploy_plan import PlanInputs, plan_profile
from trnspec.perf.model import decode_context_tokens

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
    assert any("k=7" in s and "block_size" in s for s in plan.skipped)


def test_the_default_pair_at_its_published_acceptance_is_cheaper_without_speculation() -> None:
    """AWS's Qwen3-4B DFlash figures (acceptance length 2.1 at k=15) against the plain server the
    plan would deploy: DFlash schedules synchronously (--no-async-scheduling), the plain server
    does not, and the model prices that difference."""
    from trnspec.perf.model import alpha_from_tokens_per_step

    alpha = alpha_from_tokens_per_step(2.1, 15)
    plan = plan_profile(load_profile("qwen3-4b-dflash"), alpha, [15], PRICE, _inputs())
    assert plan.speculative is not None and not plan.speculative.pays
    assert plan.choice is plan.plain
    assert plan.plain is not None and "speculation.method=none" in plan.plain.overrides


def _plan_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(["plan-deploy", *argv])
    except SystemExit as exit_:  # a flag refused by its type= reader: argparse's exit 2
        code = int(exit_.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def test_the_committed_default_plan_is_what_the_command_writes_today(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """config/plans/default.yaml records its own command; running it again must write the same
    file (regenerate it when the model, prices or profiles change)."""
    committed = yaml.safe_load((REPO / "config/plans/default.yaml").read_text())
    argv = committed["plan"]["command"].removeprefix("python -m trnspec plan-deploy ").split()
    out = tmp_path / "plan.yaml"
    code, _, err = _plan_cli(capsys, *argv, "--out", str(out))
    assert code == 0, err
    assert yaml.safe_load(out.read_text()) == committed


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
            "argument --tpot-ms: 0: must be",
        ),
        (["--tpot-ms", "30", "--peak-streams", "4"], "--acceptance-rate"),
        (
            ["--tpot-ms", "30", "--peak-streams", "4", "--acceptance-rate", "2"],
            "argument --acceptance-rate: 2: must be",
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
