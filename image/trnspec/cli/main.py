"""`python -m trnspec <subcommand>`: the command table and the one place exit codes are decided.

`SUBCOMMANDS` lists every subcommand: its name, one line of help, the function that adds its
flags to its parser and the function that runs it (parsed flags in, exit code out). The
config-taking ones (`Subcommand.takes_config`) get `--profile | --config` and `--set` first
(trnspec.cli.config_args). The table is data, so a test can walk every command's flags.

Exit codes: 0 ok; 1 the command ran and failed (a transfer, a file that cannot be written, the
server's own exit status for `serve`); 2 bad input, every problem listed one a line (at most
trnspec.boundary.problems.MAX_LISTED, then a count); 3 (stage) S3 unreachable or no credentials; 130
interrupted. Expected failures are one message naming what and how to fix it, never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from trnspec.boundary.problems import InputError, Problem
from trnspec.boundary.reader_gone import quiet_exit, stdout_reader_gone
from trnspec.boundary.text import printable
from trnspec.checks.all_checks import assess, check, validate, warnings
from trnspec.checks.doctor_probe import examine
from trnspec.cli import fit, plan_deploy, predict, serve, stage
from trnspec.cli.config_args import (
    add_config_arguments,
    add_set_argument,
    config_from_args,
)
from trnspec.cli.sizing_table import print_sizing_plan
from trnspec.config.images import image_spec
from trnspec.config.serving import ConfigError, ServingConfig, list_profiles, load_profile
from trnspec.engine.render import render

__all__ = [
    "SUBCOMMANDS",
    "Subcommand",
    "add_config_arguments",
    "add_set_argument",
    "build_parser",
    "config_from_args",
    "main",
]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130


def _no_flags(parser: argparse.ArgumentParser) -> None:
    """A subcommand with no flags of its own."""


def _cmd_profiles(args: argparse.Namespace) -> int:
    for name in list_profiles():
        cfg = load_profile(name)
        spec = image_spec(cfg.image)
        label = (
            f"legacy ({spec.generation.value}, unsupported since Neuron 2.28)"
            if spec.legacy
            else spec.generation.value
        )
        print(f"{name}\t{label}\t{cfg.description}")
    return EXIT_OK


def _report(problems: Sequence[Problem]) -> int:
    print(ConfigError(problems), file=sys.stderr)
    return EXIT_BAD_INPUT


def _warn(cfg: ServingConfig) -> None:
    for problem in warnings(cfg):
        print(f"WARNING: {problem}", file=sys.stderr)


def _cmd_check(args: argparse.Namespace) -> int:
    cfg = config_from_args(args)
    _warn(cfg)
    problems = check(cfg)
    if problems:
        return _report(problems)
    print(f"ok: {cfg.name}")
    return EXIT_OK


def _cmd_plan(args: argparse.Namespace) -> int:
    cfg = config_from_args(args)
    _warn(cfg)
    assessment = assess(cfg)
    print_sizing_plan(cfg, assessment)
    return _report(assessment.problems) if assessment.problems else EXIT_OK


def _render_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", choices=("json", "shell"), default="json")


def _cmd_render(args: argparse.Namespace) -> int:
    command = render(validate(config_from_args(args)))
    print(command.to_shell() if args.format == "shell" else command.to_json())
    return EXIT_OK


def _cmd_doctor(args: argparse.Namespace) -> int:
    report = examine(config_from_args(args))
    print(report.line(), file=sys.stdout if report.ok else sys.stderr)
    return EXIT_OK if report.ok else EXIT_FAILED


@dataclass(frozen=True)
class Subcommand:
    """One `trnspec` subcommand: what `--help` lists and the two functions that make it."""

    name: str
    help: str
    #: Adds the subcommand's own flags (after the config flags when takes_config).
    add_arguments: Callable[[argparse.ArgumentParser], None]
    #: Runs it: the parsed flags in, the exit code out (bad input raised as InputError).
    main: Callable[[argparse.Namespace], int]
    takes_config: bool = True
    #: The parser's description (default: none).
    description: str | None = None


SUBCOMMANDS: tuple[Subcommand, ...] = (
    Subcommand(
        "profiles", "list the shipped profiles, one a line", _no_flags, _cmd_profiles, False
    ),
    Subcommand("check", "run every check; exit 2 listing each problem", _no_flags, _cmd_check),
    Subcommand("plan", "print the HBM sizing plan and the checks", _no_flags, _cmd_plan),
    Subcommand(
        "doctor",
        "in the pod: check vLLM, vllm-neuron, the method's model class, Neuron devices, LNC",
        _no_flags,
        _cmd_doctor,
    ),
    Subcommand(
        "render", "print the exact vLLM argv and env for the image", _render_flags, _cmd_render
    ),
    Subcommand("stage", stage.HELP, stage.add_arguments, stage.main, False, stage.DESCRIPTION),
    Subcommand("serve", serve.HELP, serve.add_arguments, serve.main, True, serve.DESCRIPTION),
    Subcommand(
        "predict", predict.HELP, predict.add_arguments, predict.main, True, predict.DESCRIPTION
    ),
    Subcommand("fit", fit.HELP, fit.add_arguments, fit.main, False, fit.DESCRIPTION),
    Subcommand(
        "plan-deploy",
        plan_deploy.HELP,
        plan_deploy.add_arguments,
        plan_deploy.main,
        False,
        plan_deploy.DESCRIPTION,
    ),
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="trnspec", description="Speculative-decoding vLLM serving on Trainium2."
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in SUBCOMMANDS:
        p = sub.add_parser(command.name, help=command.help, description=command.description)
        if command.takes_config:
            add_config_arguments(p)
        command.add_arguments(p)
        p.set_defaults(func=command.main)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except InputError as err:
        return _report(err.problems)
    except OSError as err:  # a file or directory the command needed (not a bug: say which)
        if stdout_reader_gone(err):
            return quiet_exit()
        where = f"{printable(err.filename)}: " if err.filename else ""
        print(f"trnspec: {where}{printable(err.strerror or err)}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print("trnspec: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
