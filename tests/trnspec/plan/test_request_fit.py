"""A prediction or plan is only for requests the engine accepts: prompt + output within
max_model_len (vLLM refuses longer ones), refused otherwise naming --input-len and the fix."""

from __future__ import annotations

import pytest
from trnspec.cli.main import main
from trnspec.config.serving import ConfigError, load_profile
from trnspec.plan.predict import PredictQuery, build
from trnspec.plan.request_fit import request_fit_problems

CFG = load_profile("llama31-8b-eagle3")  # max_model_len 4096


def test_a_request_that_exactly_fills_the_context_fits() -> None:
    assert request_fit_problems(CFG.max_model_len - 256, 256, CFG) == []


def test_one_token_more_is_refused_naming_the_flag_the_total_and_the_limit() -> None:
    (problem,) = request_fit_problems(CFG.max_model_len - 255, 256, CFG)
    assert problem.field == "--input-len"
    assert str(CFG.max_model_len + 1) in problem.fix
    assert f"max_model_len {CFG.max_model_len}" in problem.fix


def test_predict_refuses_a_prompt_longer_than_the_engine_takes() -> None:
    with pytest.raises(ConfigError, match="--input-len"):
        build(PredictQuery(acceptance_rate=0.7, input_len=32_000), CFG)


@pytest.mark.parametrize("command", ["predict", "plan-deploy"])
def test_both_commands_exit_2_with_one_line(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [command, "--profile", "llama31-8b-eagle3", "--acceptance-rate", "0.7"]
    argv += ["--input-len", "32000"]
    if command == "plan-deploy":
        argv += ["--tpot-ms", "30", "--peak-streams", "4"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "--input-len=32000:" in err and "max_model_len 4096" in err  # the value as given
    assert "Traceback" not in err
