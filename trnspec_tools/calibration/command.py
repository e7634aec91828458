"""`python -m trnspec_tools calibrate {run,fetch,local}`: one command over the calibration's
steps, each its module's own arguments (`run`: the Job's measurement; `fetch`: bring the newest
results home from a deployed stack; `local`: the whole loop on this machine).

Only the step that runs is imported: `run` is the calibration Job's command in the serving image,
which carries neither `fetch`'s CDK outputs (infra) nor `local`'s engine and moto."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Collection, Sequence

from trnspec.boundary.errors import exits_on_bad_input

#: subcommand -> (module with `add_cli_args(parser)` and `run_parsed(args)`, one line of help)
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "run": ("trnspec_tools.calibration.run", "measure a speculative arm against plain (ABBA)"),
    "fetch": ("trnspec_tools.calibration.fetch", "download the newest results of a stack"),
    "local": ("trnspec_tools.calibration.local", "the loop on local CPU servers, moto S3"),
}


def add_cli_args(
    parser: argparse.ArgumentParser, steps: Collection[str] = tuple(SUBCOMMANDS)
) -> None:
    """Every step as a subcommand, with the flags of `steps` (their modules imported); any other
    step's parser is left empty."""
    sub = parser.add_subparsers(dest="step", required=True, metavar="{run,fetch,local}")
    for name, (module_name, doc) in SUBCOMMANDS.items():
        p = sub.add_parser(name, help=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
        if name in steps:
            module = importlib.import_module(module_name)
            p.description = module.__doc__
            module.add_cli_args(p)
            p.set_defaults(run_parsed=module.run_parsed)


def build_parser(steps: Collection[str] = tuple(SUBCOMMANDS)) -> argparse.ArgumentParser:
    """The command's parser with the flags of `steps` (all of them by default: for --help of
    every step and the flag fuzzer; `main` loads only the step that runs)."""
    parser = argparse.ArgumentParser(prog="python -m trnspec_tools calibrate", description=__doc__)
    add_cli_args(parser, steps)
    return parser


@exits_on_bad_input("calibrate")
def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    # The step is the first word (the command itself has no options but --help).
    step = next((a for a in args if not a.startswith("-")), None)
    parsed = build_parser({step} & SUBCOMMANDS.keys()).parse_args(args)
    return int(parsed.run_parsed(parsed))
