"""`python -m trnspec.cli.calibrate`: the former name of `python -m trnspec fit` (the constant
fit), kept for one release: it says so in one line on stderr and runs `trnspec fit` with the
same flags. "calibrate" now names the A/B deployment only (`python -m trnspec_tools calibrate`).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from trnspec.cli.main import main as trnspec_main

__all__ = ["NOTICE", "main"]

NOTICE = (
    "trnspec.cli.calibrate is deprecated and goes in the next release: run"
    " `python -m trnspec fit` (same flags)"
)


def main(argv: Sequence[str] | None = None) -> int:
    print(NOTICE, file=sys.stderr)
    return trnspec_main(["fit", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
