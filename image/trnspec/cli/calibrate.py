"""`python -m trnspec.cli.calibrate`: the Trn2 performance model's calibration report; refits.

    python -m trnspec.cli.calibrate                  # the report (constants, residuals, held out)
    python -m trnspec.cli.calibrate --write          # refit after editing the data file
    python -m trnspec.cli.calibrate --add runs.yaml  # refit with your own rows (`tune --rows-out`)

The fit, the validation and the stored form are trnspec.perf.calibrate's; this module reads the
flags and the files and prints. Exit 2 when an --add file cannot be read or parsed.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from trnspec.boundary.write import write_file
from trnspec.perf.calibrate import (
    FIT_FILE,
    fit_to_json,
    refit_with,
    report_markdown,
    trn2_calibration,
    write_shipped_fit,
)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m trnspec.cli.calibrate")
    p.add_argument("--write", action="store_true", help=f"refit and write trnspec/{FIT_FILE}")
    p.add_argument(
        "--add",
        action="append",
        default=[],
        metavar="FILE",
        help="a YAML file of your own rows in the data file's format (e.g. from tune"
        " --rows-out); refit with them and print the report",
    )
    p.add_argument("--out", help="with --add: write the refitted constants to this JSON file")
    return p


def _refit_with_files(files: Sequence[str], out: str | None) -> int:
    try:
        extra = [Path(f).read_text(encoding="utf-8") for f in files]
        stored, cal, digest = refit_with(extra)
    except (OSError, ValueError, TypeError) as err:
        print(f"--add: {err}", file=sys.stderr)
        return 2
    if out:
        write_file(Path(out), fit_to_json(stored, digest))
    print(report_markdown(cal), end="")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m trnspec.cli.calibrate [--write] [--add FILE ...] [--out PATH]`."""
    args = build_parser().parse_args(argv)
    if args.add:
        return _refit_with_files(args.add, args.out)
    if args.write:
        print(f"wrote {write_shipped_fit()}", file=sys.stderr)
    print(report_markdown(trn2_calibration()), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
