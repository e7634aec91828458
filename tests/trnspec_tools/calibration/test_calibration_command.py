"""`python -m trnspec_tools calibrate`: each step answers with its own flags, and only the step
that runs is imported (`run` runs in the serving image, without infra or moto)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from trnspec_tools.calibration.command import SUBCOMMANDS, main

IMPORTED_BY_HELP = """
import json, sys
from trnspec_tools.calibration.command import main
try:
    main([{step!r}, "--help"])
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


@pytest.mark.parametrize(
    ("step", "flag"), [("run", "--plain"), ("fetch", "--stack"), ("local", "--concurrency")]
)
def test_each_step_answers_help_with_its_flags(
    step: str, flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main([step, "--help"])
    assert exit_info.value.code == 0
    assert flag in capsys.readouterr().out


def test_the_command_lists_every_step(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert all(step in out for step in SUBCOMMANDS)


def test_run_imports_neither_the_other_steps_nor_what_they_need() -> None:
    """The calibration Job's `calibrate run` (tests/infra/serving/bundle/test_bundle_in_image.py
    runs it from the bundle's packages): `fetch` needs the CDK app's outputs, `local` moto and the
    local engine."""
    result = subprocess.run(
        [sys.executable, "-c", IMPORTED_BY_HELP.format(step="run")],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    modules = set(json.loads(result.stderr.splitlines()[-1]))
    assert {module for module, _ in SUBCOMMANDS.values()} & modules == {SUBCOMMANDS["run"][0]}
    assert not {m.partition(".")[0] for m in modules} & {"infra", "moto", "kubernetes"}
