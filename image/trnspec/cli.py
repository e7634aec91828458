"""`python -m trnspec <subcommand>`: profiles | plan | check | render (+ stage | serve | predict).

Bad input exits 2 with every problem listed, never a traceback. Subcommands from other modules
plug in through `register(subparsers)`: trnspec.stage_cli and trnspec.serve each add theirs and
set `func` (a callable taking the parsed args and returning the exit code).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Iterator, Sequence

from trnspec.config import (
    ConfigError,
    Problem,
    ServingConfig,
    apply_overrides,
    list_profiles,
    load_config,
    load_profile,
)

EXIT_OK = 0
EXIT_BAD_INPUT = 2

#: Modules that contribute subcommands; each exposes register(subparsers).
EXTENSION_MODULES = ("trnspec.stage_cli", "trnspec.serve", "trnspec.predict")


def add_config_arguments(parser: argparse.ArgumentParser) -> None:
    """--profile | --config, and repeatable --set: the way every subcommand names a config."""
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--profile", help="a shipped profile (see `trnspec profiles`)")
    source.add_argument("--config", metavar="FILE", help="a YAML/JSON ServingConfig file")
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="PATH=VALUE",
        help="override a field, e.g. --set speculation.num_speculative_tokens=5 (repeatable)",
    )


def config_from_args(args: argparse.Namespace) -> ServingConfig:
    """The config named by --profile/--config with --set applied; ConfigError on bad input."""
    if args.profile:
        cfg = load_profile(args.profile)
    elif args.config:
        cfg = load_config(args.config)
    else:
        raise ConfigError(
            [
                Problem(
                    "--profile",
                    None,
                    f"give --profile ({', '.join(list_profiles())}) or --config FILE",
                )
            ]
        )
    return apply_overrides(cfg, args.overrides) if args.overrides else cfg


def _cmd_profiles(args: argparse.Namespace) -> int:
    for name in list_profiles():
        print(f"{name}\t{load_profile(name).description}")
    return EXIT_OK


def _report(problems: Sequence[Problem]) -> int:
    print(ConfigError(problems), file=sys.stderr)
    return EXIT_BAD_INPUT


def _cmd_check(args: argparse.Namespace) -> int:
    from trnspec.checks import check

    cfg = config_from_args(args)
    problems = check(cfg)
    if problems:
        return _report(problems)
    print(f"ok: {cfg.name}")
    return EXIT_OK


def _cmd_plan(args: argparse.Namespace) -> int:
    from trnspec.checks import assess
    from trnspec.plan_table import print_plan

    cfg = config_from_args(args)
    assessment = assess(cfg)
    print_plan(cfg, assessment)
    return _report(assessment.problems) if assessment.problems else EXIT_OK


def _cmd_render(args: argparse.Namespace) -> int:
    from trnspec.checks import validate
    from trnspec.render import render

    command = render(validate(config_from_args(args)))
    print(command.to_shell() if args.format == "shell" else command.to_json())
    return EXIT_OK


def _extension_registrars() -> Iterator[Callable[[argparse._SubParsersAction], None]]:
    for name in EXTENSION_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as err:
            if err.name == name:  # not written yet; a broken import inside it still surfaces
                continue
            raise
        yield module.register


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="trnspec", description="Speculative-decoding vLLM serving on Trainium2."
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("profiles", help="list the shipped profiles, one a line")
    p.set_defaults(func=_cmd_profiles)

    p = sub.add_parser("check", help="run every check; exit 2 listing each problem")
    add_config_arguments(p)
    p.set_defaults(func=_cmd_check)

    p = sub.add_parser("plan", help="print the HBM sizing plan and the checks")
    add_config_arguments(p)
    p.set_defaults(func=_cmd_plan)

    p = sub.add_parser("render", help="print the exact vLLM argv and env for the image")
    add_config_arguments(p)
    p.add_argument("--format", choices=("json", "shell"), default="json")
    p.set_defaults(func=_cmd_render)

    for register in _extension_registrars():
        register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except ConfigError as err:
        return _report(err.problems)


if __name__ == "__main__":
    sys.exit(main())
