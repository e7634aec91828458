"""`python -m trnspec_tools`: one command whose subcommands are the modules' own command lines."""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from trnspec_tools.cli import COMMANDS, main

REPO = Path(__file__).resolve().parents[2]


def test_every_subcommand_runs_its_modules_parser(capsys: pytest.CaptureFixture[str]) -> None:
    for name in COMMANDS:
        with pytest.raises(SystemExit) as exit_info:
            main([name, "--help"])
        assert exit_info.value.code == 0, name
        out = capsys.readouterr().out
        assert out.startswith("usage: ") and "__main__" not in out.splitlines()[0], name


def test_every_command_module_declares_its_flags_apart_from_its_main() -> None:
    for name, (module_name, _) in COMMANDS.items():
        module = importlib.import_module(module_name)
        parser = argparse.ArgumentParser()
        module.add_cli_args(parser)
        flags = {opt for action in parser._actions for opt in action.option_strings}
        steps = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        assert flags - {"-h", "--help"} or steps, name  # a command of steps declares them
        assert callable(module.main), name


def test_an_unknown_command_is_named_with_the_choices(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["benchmark"]) == 2
    err = capsys.readouterr().err
    assert "'benchmark'" in err and "bench, tune, smoke, demo, capacity, models" in err


def test_no_command_prints_the_list_and_fails(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    out = capsys.readouterr().out
    assert all(f"  {name} " in out for name in COMMANDS)


@pytest.mark.parametrize(
    ("script", "command"),
    [
        ("bench.py", "bench"),
        ("tune.py", "tune"),
        ("smoke.py", "smoke"),
        ("demo.py", "demo"),
        ("capacity.py", "capacity"),
        ("make_tiny_models.py", "models"),
    ],
)
def test_the_documented_script_prints_the_same_help_as_the_command(
    script: str, command: str
) -> None:
    def help_of(argv: list[str]) -> str:
        return subprocess.run(
            [sys.executable, *argv, "--help"], cwd=REPO, capture_output=True, text=True, check=True
        ).stdout

    script_help = help_of([f"scripts/{script}"])
    assert script_help.startswith(f"usage: {script} ")
    assert script_help == help_of(["-m", "trnspec_tools", command])


def test_no_package_module_imports_a_script() -> None:
    texts = {p: p.read_text() for p in (REPO / "trnspec_tools").rglob("*.py")}
    assert not [p for p, t in texts.items() if "from scripts" in t or "import scripts" in t]
