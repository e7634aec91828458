"""`trnspec plan-deploy` as a user runs it: the band of every figure, the verdict, measured rows
that keep speculation out, the pools of a deployment config, the reasons variants were left out
and the ramp (trnspec.cli.plan_deploy)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml
from trnspec.cli.main import main
from trnspec.hardware.pricing import PRICES

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "plan"))
from rows_fixture import rows_text

REPO = Path(__file__).resolve().parents[3]
DEFAULT_GOAL = (
    *("--profile", "qwen3-4b-dflash", "--profile", "qwen3-4b-baseline"),
    *("--acceptance-length", "2.1", "--acceptance-k", "15", "--tpot-ms", "30"),
    *("--peak-streams", "16"),
)


def plan(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(["plan-deploy", *argv])
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def test_every_row_that_decides_carries_its_band_or_says_there_is_none(capsys) -> None:
    code, out, _ = plan(capsys, *DEFAULT_GOAL)
    assert code == 0
    rows = [line for line in out.splitlines() if line.split()[:1] in (["qwen3-4b-dflash"],)]
    rows += [line for line in out.splitlines() if " plain " in line and "x " in line]
    assert rows
    for line in rows:
        assert "+/-" in line or " unknown" in line, line
    assert "held-out bands: speculation" in out
    assert "band = held-out error from sources the fit never saw (unknown: measure)" in out


def test_an_undecided_plan_says_measure_and_writes_a_calibration_plan(
    capsys, tmp_path: Path
) -> None:
    out_file = tmp_path / "plan.yaml"
    code, out, _ = plan(capsys, *DEFAULT_GOAL, "--out", str(out_file))
    doc = yaml.safe_load(out_file.read_text())
    assert code == 0
    if doc["plan"]["decision"]["verdict"] != "undecided":
        pytest.skip("the refitted model is confident on the default goal")
    assert "verdict: undecided at this confidence: measure" in out
    assert doc["serving"]["profile"] == "qwen3-4b-baseline"
    assert doc["serving"]["calibration"]["speculative"]["profile"] == "qwen3-4b-dflash"


def test_measured_rows_slower_than_plain_keep_speculation_out_and_refit(
    capsys, tmp_path: Path
) -> None:
    rows = tmp_path / "trn2_rows.yaml"
    rows.write_text(rows_text(0.64))
    out_file = tmp_path / "plan.yaml"
    code, out, err = plan(capsys, *DEFAULT_GOAL, "--measured", str(rows), "--out", str(out_file))
    assert code == 0, err
    assert "measured slower than plain at batch 1 (my-qwen3-4b-dflash-c1 is 0.64x" in out
    doc = yaml.safe_load(out_file.read_text())
    assert "calibration" not in doc["serving"]
    assert doc["plan"]["decision"]["verdict"] == "plain"
    assert doc["plan"]["measured"]["rows"] == 2
    assert f"--measured {rows}" in doc["plan"]["command"]
    # the refit gave the plain floor held-out data
    assert doc["plan"]["chosen"]["error_band"] is not None


def test_a_bad_measured_file_exits_2_in_one_line(capsys, tmp_path: Path) -> None:
    code, out, err = plan(capsys, *DEFAULT_GOAL, "--measured", str(tmp_path / "none.yaml"))
    assert code == 2 and out == "" and err.count("\n") == 1 and "--measured=" in err


def test_a_plan_for_the_configs_pools_says_which_pool_to_add_priced(capsys) -> None:
    """llama31-8b-eagle3 is a trn2.3xlarge profile; the default config has a trn2.48xlarge pool:
    the plan runs on that pool, and says what adding a trn2.3xlarge pool would save."""
    code, out, err = plan(
        capsys,
        *("--profile", "llama31-8b-eagle3", "--acceptance-rate", "0.6"),
        *("--tpot-ms", "60", "--peak-streams", "64"),
        *("--config", str(REPO / "config/default.yaml")),
    )
    assert code == 0, err
    assert "llama31-8b-eagle3 on trn2.48xlarge:" in out
    assert "no pool of the config has trn2.3xlarge: priced to compare" in out
    chosen = next(line for line in out.splitlines() if line.startswith("plan: llama31"))
    assert "hardware.instance_type=trn2.48xlarge" in chosen and "trn2.48xlarge" in chosen
    advice = next(line for line in out.splitlines() if line.startswith("the cheapest plan needs"))
    assert "trn2.3xlarge" in advice and "add a pool" in advice and "$2.235/h" in advice


def test_a_plan_never_needs_more_nodes_than_the_pools_allow(capsys) -> None:
    code, out, err = plan(
        capsys,
        *("--profile", "qwen3-32b-baseline", "--tpot-ms", "60", "--peak-streams", "64"),
        *("--config", str(REPO / "config/default.yaml"), "--set", "trn2_pools.0.max_size=1"),
        "--format",
        "json",
    )
    assert "nodes at peak above the 1 the config's trn2.48xlarge pools allow" in out
    assert code == 2 and "no variant fits the pools' max_size" in err


def test_the_chat_goal_row_shows_why_speculation_was_left_out(capsys) -> None:
    """DFlash meets a 50 ms TPOT at batch 1, but 200 streams at batch 1 need 200 replicas: the
    table says the cap left it out, not that no variant meets the target."""
    code, out, _ = plan(
        capsys,
        *("--profile", "qwen3-4b-dflash", "--acceptance-rate", "0.6"),
        *("--tpot-ms", "50", "--peak-streams", "200"),
    )
    assert code == 0
    assert "none meets the target" not in out
    (cap,) = [line for line in out.splitlines() if "b=1-2: replicas at peak above the cap" in line]
    assert "k=0,15 " in cap and cap.endswith("(serving.max_replicas): 100-200")


def test_when_only_the_cap_stops_every_variant_the_error_names_the_peak_not_the_tpot(
    capsys,
) -> None:
    code, _, err = plan(
        capsys,
        *("--profile", "qwen3-4b-baseline", "--tpot-ms", "1000", "--peak-streams", "2000"),
        *("--max-num-seqs", "1,2,4"),
    )
    assert code == 2 and err.startswith("--peak-streams=2000") and "raise it" not in err


def test_the_plan_prints_the_ramp_and_warns_when_the_queue_breaks_the_ttft_target(
    capsys,
) -> None:
    code, out, _ = plan(capsys, *DEFAULT_GOAL, "--ttft-ms", "2000", "--pod-start-minutes", "20")
    assert code == 0
    # the deployed scaleUp policy: ceil((16 - 1) / 3) pods per 60 s
    assert "ramp: 1 -> 16 replicas in 3 step(s) at 5 pod(s) per 60 s: 3 min" in out
    assert "+ 20 min pod start = 23 min" in out
    assert "WARNING: 15 streams wait for a slot" in out and "2000 ms TTFT target" in out


def test_a_config_that_scales_to_zero_ramps_from_zero_and_waits_a_pod_start(
    capsys, tmp_path: Path
) -> None:
    # config/first-node.yaml sets serving.scale_to_zero; the plan file keeps it, so the deployed
    # ScaledObject rests at 0 replicas and a request then waits for a new pod
    out_file = tmp_path / "plan.yaml"
    # 32 streams: more than one replica at peak on the one-chip node, so there is a ramp
    goal = (*DEFAULT_GOAL, "--peak-streams", "32")
    first_node = ("--config", str(REPO / "config/first-node.yaml"), "--out", str(out_file))
    code, out, err = plan(capsys, *goal, "--ttft-ms", "2000", *first_node)
    assert code == 0, err
    doc = yaml.safe_load(out_file.read_text())
    peak = doc["serving"]["max_replicas"]
    assert peak > 1
    pods = -(-peak // 3)
    steps = -(-peak // pods)
    assert f"ramp: 0 -> {peak} replicas in {steps} step(s) at {pods} pod(s) per 60 s" in out
    assert "a request at zero replicas waits for a new pod's start" in out
    assert doc["plan"]["scale_to_zero"] is True
    code, out, _ = plan(
        capsys, *goal, "--ttft-ms", "2000", "--pod-start-minutes", "20", *first_node[:2]
    )
    assert (
        "WARNING: scale to zero: a request at zero replicas waits for a new pod's start:"
        " first token about 20 min later, above the 2000 ms TTFT target" in out
    )
    code, out, _ = plan(capsys, *goal, *first_node[:2], "--set", "serving.scale_to_zero=false")
    assert f"ramp: 1 -> {peak} replicas" in out and "zero replicas" not in out


def test_the_plan_prints_and_records_its_idle_cost_in_both_modes(capsys, tmp_path: Path) -> None:
    out_file = tmp_path / "plan.yaml"
    code, out, _ = plan(capsys, *DEFAULT_GOAL, "--min-replicas", "2", "--out", str(out_file))
    assert code == 0
    doc = yaml.safe_load(out_file.read_text())
    chosen, idle = doc["plan"]["chosen"], doc["plan"]["idle_cost"]
    nodes = -(-2 // chosen["replicas_per_node"])
    price = PRICES[chosen.get("instance_type", "trn2.48xlarge")].usd_per_hour
    assert price is not None
    kept = idle["min_replicas"]
    # at zero load no calibration Job runs, so no arm replica is counted
    assert (kept["serving_replicas"], kept["calibration_arm_replicas"]) == (2, 0)
    assert kept["nodes"] == nodes and kept["usd_per_hour"] == pytest.approx(nodes * price)
    assert kept["usd_per_30_day_month"] == pytest.approx(nodes * price * 720)
    zero = idle["scale_to_zero"]
    assert (zero["serving_replicas"], zero["nodes"], zero["usd_per_hour"]) == (0, 0, 0.0)
    assert "idle, min_replicas 2 as planned: 2 replica(s)" in out
    assert f"= ${nodes * price:,.2f}/h, ${nodes * price * 720:,.2f} per 30-day month" in out
    assert "idle, scale to zero" in out and "not priced by the plan" in out
    if "calibration" in doc["serving"]:
        running = idle["calibrating"]
        assert (running["serving_replicas"], running["calibration_arm_replicas"]) == (2, 1)
        assert "while the calibration Job runs: 2 replica(s) + 1 calibration-arm" in out
    else:
        assert "calibrating" not in idle


def test_a_policy_given_on_the_command_line_times_the_ramp_and_is_recorded(capsys) -> None:
    code, out, _ = plan(
        capsys,
        *DEFAULT_GOAL,
        "--format",
        "json",
        "--scale-up-pods",
        "1",
        "--scale-up-period-s",
        "300",
    )
    assert code == 0
    assert "in 15 step(s) at 1 pod(s) per 300 s: 75 min" in out
    assert "--scale-up-pods 1 --scale-up-period-s 300" in out


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--set", "trn2_pools.0.max_size=3"], "--set=trn2_pools.0.max_size=3"),
        (["--scale-up-pods", "0"], "argument --scale-up-pods"),
        (["--ttft-ms", "nan"], "argument --ttft-ms"),
        (["--pod-start-minutes", "-1"], "argument --pod-start-minutes"),
        (["--min-replicas", "true"], "argument --min-replicas"),
        (["--config", "/nonexistent/c.yaml"], "--config=/nonexistent/c.yaml"),
    ],
)
def test_new_flags_are_read_by_the_boundary_readers(capsys, argv, needle) -> None:
    code, _, err = plan(capsys, *DEFAULT_GOAL, *argv)
    assert code == 2 and needle in err


def test_measured_rows_are_read_from_the_bucket_the_calibration_wrote(capsys, s3_bkt) -> None:
    key = "calibration/20261202T000000Z/trn2_rows.yaml"
    s3_bkt.put_object(Bucket="bkt", Key=key, Body=rows_text(0.64).encode())
    code, out, err = plan(capsys, *DEFAULT_GOAL, "--measured", f"s3://bkt/{key}")
    assert code == 0, err
    assert f"measured: 2 rows from s3://bkt/{key}" in out
    assert "measured slower than plain at batch 1" in out


def test_a_calibration_plan_bounds_its_bill_by_the_configs_startup_budget(capsys) -> None:
    """The default goal is undecided (config/plans/default.yaml is a calibration plan)."""
    config = ("--config", str(REPO / "config/default.yaml"))
    bounds = []
    for minutes in (30, 300):
        code, out, _ = plan(
            capsys, *DEFAULT_GOAL, *config, "--set", f"serving.max_startup_minutes={minutes}"
        )
        assert code == 0 and f"the startup budget {minutes} min" in out
        (line,) = [x for x in out.splitlines() if x.startswith("while the calibration Job runs")]
        bounds.append(line.split("for at most ")[1].split(" (")[0])
    # The Job's deadline (calibration_arm.job_deadline_seconds: 15 min pod start, the wait for
    # the arms: 30 s poll + 15 min + the probe's about 128 min of weights waits + the budget,
    # then 120 min) and the release: each minute of startup budget is a minute of the bound.
    assert bounds == ["5 h 30 min", "10 h 00 min"]


def test_the_json_output_and_the_plan_file_give_a_variant_the_same_keys_and_figures(
    capsys, tmp_path: Path
) -> None:
    """A script reading `--format json` and the deploy reading the plan file see one variant the
    same way: the profile it serves, the same keys, the same rounding."""
    out_file = tmp_path / "plan.yaml"
    code, out, err = plan(capsys, *DEFAULT_GOAL, "--format", "json", "--out", str(out_file))
    assert code == 0 and f"wrote {out_file}" in err
    chosen = json.loads(out)["decision"]["serving"]
    recorded = yaml.safe_load(out_file.read_text())["plan"]
    assert chosen["profile"] == recorded["chosen"]["profile"]
    assert {k: v for k, v in chosen.items() if k in recorded["chosen"]} == recorded["chosen"]
    assert set(recorded["chosen"]) <= set(chosen)
    assert chosen["instance_type"] == "trn2.48xlarge"
    assert chosen["streams_per_replica"] >= 1


def test_a_plan_that_cannot_be_written_is_kept_and_named(
    capsys, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--out on a full disk: the plan file goes to a fallback directory under the temporary
    directory, one line names both paths, and the exit status is 1 (issue 50)."""
    import errno
    import tempfile

    import trnspec.boundary.write as write

    out_file = tmp_path / "plans" / "plan.yaml"
    real = write.write_file

    def full(path: Path, data: bytes | str) -> Path:
        if Path(path) == out_file:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(path, data)

    monkeypatch.setattr(write, "write_file", full)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "spare"))
    (tmp_path / "spare").mkdir()
    code, _, err = plan(capsys, *DEFAULT_GOAL, "--out", str(out_file))
    (kept,) = (tmp_path / "spare").glob("trnspec-plan-deploy-*/0-plan.yaml")
    assert code == 1
    assert err.strip().splitlines()[-1] == (
        f"plan-deploy: error: cannot write {out_file} (No space left on device); kept it at {kept}"
    )
    doc = yaml.safe_load(kept.read_text())
    assert doc["plan"]["command"].startswith("python -m trnspec plan-deploy --profile")
    assert "serving" in doc and not out_file.exists()
