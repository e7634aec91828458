"""`python -m trnspec_tools calibrate {run,fetch,local}`: one command over the calibration's
steps, each its module's own arguments (`run`: the Job's measurement; `fetch`: bring the newest
results home from a deployed stack; `local`: the whole loop on this machine)."""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Sequence

from trnspec.boundary.errors import exits_on_bad_input

#: subcommand -> (module with `add_cli_args(parser)` and `run_parsed(args)`, one line of help)
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "run": ("trnspec_tools.calibration.run", "measure a speculative arm against plain (ABBA)"),
    "fetch": ("trnspec_tools.calibration.fetch", "download the newest results of a stack"),
    "local": ("trnspec_tools.calibration.local", "the loop on local CPU servers, moto S3"),
}


def add_cli_args(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="step", required=True, metavar="{run,fetch,local}")
    for name, (module_name, doc) in SUBCOMMANDS.items():
        module = importlib.import_module(module_name)
        p = sub.add_parser(name, help=doc, description=module.__doc__,
                           formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
        module.add_cli_args(p)
        p.set_defaults(run_parsed=module.run_parsed)


@exits_on_bad_input("calibrate")
def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m trnspec_tools calibrate", description=__doc__)
    add_cli_args(parser)
    args = parser.parse_args(argv)
    return int(args.run_parsed(args))
