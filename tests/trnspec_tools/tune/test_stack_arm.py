"""`tune --stack`: a deployed stack is the speculative arm at its profile's k."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

from trnspec_tools.bench.options import UsageError
from trnspec_tools.tune.stack_arm import stack_arm
from trnspec_tools.tune.tune import build_parser, main
from trnspec_tools.tune.tune_options import tune_options

BASE = ["--out", "r.json", "--stack", "TrnspecPlatform-serving"]


@contextlib.contextmanager
def fake_stack(stack: str, region: str | None, via: str) -> Iterator[str]:
    yield f"http://{stack.lower()}.{via}:8000"


def args(*extra: str):
    return tune_options(build_parser().parse_args([*BASE, *extra]))


def test_the_stack_is_measured_as_the_speculative_arm_at_its_profiles_window():
    a = args("--trn2-profile", "llama31-8b-eagle3", "--baseline", "http://b:8000")
    with stack_arm(a, fake_stack) as used:
        assert used.endpoints == {3: "http://trnspecplatform-serving.auto:8000"}
    # the analysis after the measurement still sees a remote run
    assert used.endpoints == {3: "http://trnspecplatform-serving.auto:8000"} and used.remote


def test_without_stack_the_arms_are_left_as_given():
    a = tune_options(build_parser().parse_args(["--out", "r.json", "--k", "1,2"]))
    with stack_arm(a, fake_stack) as used:
        assert used.endpoints == {} and used == a


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--baseline", "http://b:8000"], "--trn2-profile P"),
        (["--trn2-profile", "llama31-8b-eagle3"], "--baseline URL"),
        (["--trn2-profile", "llama31-8b-eagle3", "--baseline", "u", "--k", "3"], "not both"),
        (["--trn2-profile", "qwen3-32b-baseline", "--baseline", "u"], "has no speculation"),
    ],
)
def test_a_stack_needs_its_profile_and_a_baseline_and_no_other_arms(extra, needle):
    with pytest.raises(UsageError, match=needle), stack_arm(args(*extra), fake_stack):
        pass


def test_tune_refuses_the_stack_before_reaching_aws_and_exits_2(capsys, tmp_path):
    code = main(["--out", str(tmp_path / "r.json"), "--stack", "S", "--baseline", "http://b"])
    assert code == 2 and "--trn2-profile P" in capsys.readouterr().err
