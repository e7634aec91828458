"""`trnspec serve`: the dry run, bad input refused before any I/O, and the options from flags,
then the pod's environment, then the pod contract's defaults."""

from __future__ import annotations

import json
from typing import Any

import pytest
from trnspec.boundary.problems import InputError
from trnspec.cli.main import main as cli_main
from trnspec.cli.serve import resolve_options


def test_serve_dry_run_prints_the_plan(capsys: Any) -> None:
    code = cli_main(
        [
            "serve",
            "--profile",
            "qwen3-32b-draft",
            "--compile-cache",
            "s3://cache/x",
            "--dry-run",
            "--set",
            "target.source=s3://models/Qwen3-32B",
        ]
    )
    assert code == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["stage"][0]["source"] == "s3://models/Qwen3-32B"
    assert plan["cache"]["remote"].startswith("s3://cache/x/qwen3-32b_qwen3-1.7b-draft-model-k7-")


@pytest.mark.parametrize(
    ("argv", "field"),
    [
        (["--set", "tensor_parallel_size=48"], "tensor_parallel_size=48"),
        (["--compile-cache", "not-a-uri"], "--compile-cache=not-a-uri"),
    ],
)
def test_serve_refuses_bad_input_with_exit_2_before_any_io(
    argv: list[str], field: str, capsys: Any
) -> None:
    assert cli_main(["serve", "--profile", "qwen3-32b-draft", "--dry-run", *argv]) == 2
    assert field in capsys.readouterr().err


def parse_serve(argv: list[str]) -> Any:
    from trnspec.cli.main import build_parser

    return build_parser().parse_args(["serve", "--profile", "local-tiny", *argv])


@pytest.mark.parametrize(
    ("argv", "environ", "expected"),
    [
        (
            [],
            {},
            ("/var/lib/trnspec/models", "/var/lib/trnspec/compiled", None, "/tmp/trnspec-ready"),
        ),
        (
            [],
            {
                "TRNSPEC_DATA_DIR": "/data",
                "TRNSPEC_COMPILE_CACHE_URI": "s3://b/compile-cache/",
                "TRNSPEC_READY_FILE": "/run/ready",
            },
            ("/data/models", "/data/compiled", "s3://b/compile-cache/", "/run/ready"),
        ),
        (
            [
                "--models-root",
                "/m",
                "--compiled-root",
                "/c",
                "--compile-cache",
                "s3://x/y",
                "--ready-file",
                "/r",
            ],
            {"TRNSPEC_DATA_DIR": "/data", "TRNSPEC_COMPILE_CACHE_URI": "s3://b/c"},
            ("/m", "/c", "s3://x/y", "/r"),
        ),
    ],
    ids=["defaults", "pod-environment", "flags-win"],
)
def test_options_come_from_flags_then_the_pod_environment(
    argv: list[str], environ: dict[str, str], expected: tuple[Any, ...]
) -> None:
    o = resolve_options(parse_serve(argv), environ)
    assert (o.models_root, o.compiled_root, o.compile_cache, o.ready_file) == expected


@pytest.mark.parametrize("raw", ["soon", "-1", "nan", "inf"])
def test_a_bad_drain_seconds_environment_value_is_a_named_problem(raw: str) -> None:
    with pytest.raises(InputError) as err:
        resolve_options(parse_serve([]), {"TRNSPEC_DRAIN_SECONDS": raw})
    assert err.value.problems[0].field == "TRNSPEC_DRAIN_SECONDS"


@pytest.mark.parametrize("flag", ["--drain-timeout", "--poll-interval"])
@pytest.mark.parametrize("raw", ["nan", "-1", "inf", "-inf", "1e999", "true", ""])
def test_drain_and_poll_flags_are_finite_non_negative_seconds(
    flag: str, raw: str, capsys: Any
) -> None:
    with pytest.raises(SystemExit) as exit_:
        cli_main(["serve", "--profile", "local-tiny", "--dry-run", f"{flag}={raw}"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert f"error: argument {flag}: " in err and "must be" in err and "Traceback" not in err


def test_a_poll_interval_of_zero_is_refused_and_a_drain_of_zero_is_allowed() -> None:
    with pytest.raises(SystemExit):
        parse_serve(["--poll-interval", "0"])
    assert parse_serve(["--drain-timeout", "0"]).drain_timeout == 0.0
