"""`plan-deploy` and `predict` flags and files at the boundary: every number finite and in
range (refused at parse, exit 2, naming the flag), the tune report read by the bounded reader,
`--out` written by the atomic writer (never through a symlink, a FIFO or a device, never over an
input)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from trnspec.cli.main import main

BASE = ("--profile", "qwen3-4b-dflash", "--tpot-ms", "30", "--peak-streams", "4")
RATE = ("--acceptance-rate", "0.6")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exit_:
        code = int(exit_.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def _replace(argv: tuple[str, ...], flag: str, value: str) -> list[str]:
    out = list(argv)
    if flag in out:
        out[out.index(flag) + 1] = value
        return out
    return [*out, flag, value]


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--tpot-ms", "nan"),
        ("--tpot-ms", "inf"),
        ("--tpot-ms", "-30"),
        ("--price-per-hour", "nan"),
        ("--price-per-hour", "0"),
        ("--input-len", "-1"),
        ("--output-len", "0"),
        ("--peak-streams", "1000000"),
        ("--peak-streams", "true"),
        ("--acceptance-k", "0"),
        ("--acceptance-rate", "nan"),
    ],
)
def test_every_plan_deploy_number_is_finite_in_range_and_refused_naming_its_own_flag(
    capsys: pytest.CaptureFixture[str], flag: str, value: str
) -> None:
    code, out, err = run(capsys, "plan-deploy", *_replace((*BASE, *RATE), flag, value))
    assert code == 2 and out == ""
    assert f"error: argument {flag}: " in err and "Traceback" not in err


def test_predict_refuses_an_acceptance_length_measured_at_k_0(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["predict", "--profile", "qwen3-32b-draft", "--acceptance-length", "2"]
    code, _, err = run(capsys, *argv, "--acceptance-k", "0")
    assert code == 2 and "argument --acceptance-k: 0: must be" in err


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ('{"fit": {"alpha": true}}', "fit.alpha=True: must be a finite number"),
        ('{"fit": {"alpha": NaN}}', "not JSON (NaN is not a finite number)"),
        ('{"fit": {"alpha": 1e999}}', "too large to be finite"),
        ('{"fit": {"alpha": 0.5, "alpha": 0.9}}', "duplicate key 'alpha'"),
        ("[" * (1 << 20), "nested deeper than"),
        ("[1, 2]", "not a tune report with fit.alpha"),
    ],
)
def test_a_tune_report_is_read_by_the_bounded_reader_and_its_alpha_is_a_number(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, says: str
) -> None:
    report = tmp_path / "t.json"
    report.write_text(text, encoding="utf-8")
    code, out, err = run(capsys, "plan-deploy", *BASE, "--tune-report", str(report))
    assert code == 2 and out == ""
    assert says in err and err.count("\n") == 1 and "Traceback" not in err


def test_plan_out_replaces_a_symlink_never_its_target(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me", encoding="utf-8")
    link = tmp_path / "plan.yaml"
    link.symlink_to(victim)
    code, _, err = run(capsys, "plan-deploy", *BASE, *RATE, "--out", str(link))
    assert code == 0, err
    assert victim.read_text(encoding="utf-8") == "keep me"
    assert not link.is_symlink() and "trnspec-deployment-plan" in link.read_text(encoding="utf-8")


@pytest.mark.parametrize("kind", ["fifo", "device", "the tune report"])
def test_plan_out_is_refused_before_the_plan_when_it_cannot_be_a_new_regular_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    report = tmp_path / "t.json"
    report.write_text(json.dumps({"fit": {"alpha": 0.6}}), encoding="utf-8")
    out_path = {"fifo": tmp_path / "fifo", "device": Path("/dev/null"), "the tune report": report}[
        kind
    ]
    if kind == "fifo":
        os.mkfifo(out_path)
    argv = ["plan-deploy", *BASE, "--tune-report", str(report), "--out", str(out_path)]
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "" and err.startswith("--out=")
    assert json.loads(report.read_text(encoding="utf-8")) == {"fit": {"alpha": 0.6}}


def test_a_peak_no_replica_count_can_serve_is_blamed_on_peak_streams_not_the_target(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = _replace((*BASE, *RATE), "--peak-streams", "100000")
    code, _, err = run(capsys, "plan-deploy", *argv)
    assert code == 2 and err.startswith("--peak-streams=100000: ") and "--tpot-ms=" not in err
