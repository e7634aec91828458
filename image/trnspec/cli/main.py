"""`python -m trnspec <subcommand>`: profiles | plan | check | doctor | render (+ stage | serve |
predict).

Exit codes: 0 ok; 1 the command ran and failed (a transfer, a file that cannot be written, the
server's own exit status for `serve`); 2 bad input, every problem listed one a line (at most
trnspec.boundary.problems.MAX_LISTED, then a count); 3 (stage) S3 unreachable or no credentials; 130
interrupted. Expected failures are one message naming what and how to fix it, never a traceback.
Subcommands from other modules
plug in through `register(subparsers)`: trnspec.cli.stage and trnspec.serve each add theirs and
set `func` (a callable taking the parsed args and returning the exit code).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Iterator, Sequence

from trnspec.config.serving import (
    ConfigError,
    Problem,
    ServingConfig,
    apply_overrides,
    list_profiles,
    load_config,
    load_profile,
)

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130

#: Modules that contribute subcommands; each exposes register(subparsers).
EXTENSION_MODULES = (
    "trnspec.cli.stage",
    "trnspec.cli.serve",
    "trnspec.cli.predict",
    "trnspec.cli.plan_deploy",
)


def add_config_arguments(parser: argparse.ArgumentParser) -> None:
    """--profile | --config, and repeatable --set: the way every subcommand names a config."""
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--profile", help="a shipped profile (see `trnspec profiles`)")
    source.add_argument("--config", metavar="FILE", help="a YAML/JSON ServingConfig file")
    add_set_argument(parser)


def add_config_subcommand(
    subparsers: argparse._SubParsersAction, name: str, help: str, doc: str | None = None
) -> argparse.ArgumentParser:
    """A subcommand that names a config (add_config_arguments), for its own flags to follow; its
    description is the first paragraph of `doc` (the module docstring of the command)."""
    description = doc.split("\n\n")[0] if doc else None
    parser = subparsers.add_parser(name, help=help, description=description)
    add_config_arguments(parser)
    return parser


def add_set_argument(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    help: str = "override a field, e.g. --set speculation.num_speculative_tokens=5 (repeatable)",
) -> None:
    """Repeatable `--set PATH=VALUE` into `args.overrides`: the one flag for the override
    grammar of `apply_overrides`, shared by trnspec and the tools that launch a profile."""
    parser.add_argument(
        "--set", dest="overrides", action="append", default=[], metavar="PATH=VALUE", help=help
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
    from trnspec.config.images import image_spec

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
    from trnspec.checks.all_checks import warnings

    for problem in warnings(cfg):
        print(f"WARNING: {problem}", file=sys.stderr)


def _cmd_check(args: argparse.Namespace) -> int:
    from trnspec.checks.all_checks import check

    cfg = config_from_args(args)
    _warn(cfg)
    problems = check(cfg)
    if problems:
        return _report(problems)
    print(f"ok: {cfg.name}")
    return EXIT_OK


def _cmd_plan(args: argparse.Namespace) -> int:
    from trnspec.checks.all_checks import assess
    from trnspec.cli.sizing_table import print_sizing_plan

    cfg = config_from_args(args)
    _warn(cfg)
    assessment = assess(cfg)
    print_sizing_plan(cfg, assessment)
    return _report(assessment.problems) if assessment.problems else EXIT_OK


def _cmd_render(args: argparse.Namespace) -> int:
    from trnspec.checks.all_checks import validate
    from trnspec.engine.render import render

    command = render(validate(config_from_args(args)))
    print(command.to_shell() if args.format == "shell" else command.to_json())
    return EXIT_OK


def _cmd_doctor(args: argparse.Namespace) -> int:
    from trnspec.checks.doctor_probe import examine

    report = examine(config_from_args(args))
    print(report.line(), file=sys.stdout if report.ok else sys.stderr)
    return EXIT_OK if report.ok else EXIT_FAILED


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

    p = add_config_subcommand(sub, "check", help="run every check; exit 2 listing each problem")
    p.set_defaults(func=_cmd_check)

    p = add_config_subcommand(sub, "plan", help="print the HBM sizing plan and the checks")
    p.set_defaults(func=_cmd_plan)

    p = add_config_subcommand(
        sub,
        "doctor",
        help="in the pod: check vLLM, vllm-neuron, the method's model class, Neuron devices, LNC",
    )
    p.set_defaults(func=_cmd_doctor)

    p = add_config_subcommand(sub, "render", help="print the exact vLLM argv and env for the image")
    p.add_argument("--format", choices=("json", "shell"), default="json")
    p.set_defaults(func=_cmd_render)

    for register in _extension_registrars():
        register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    from trnspec.boundary.problems import InputError

    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except InputError as err:
        return _report(err.problems)
    except OSError as err:  # a file or directory the command needed (not a bug: say which)
        where = f"{err.filename}: " if err.filename else ""
        print(f"trnspec: {where}{err.strerror or err}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print("trnspec: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
