"""Make (or reuse) the tiny target/draft pair for the embedded default and print where it is.

    python scripts/make_tiny_models.py [--cache-dir DIR] [--json]

A thin command line over `local_engine.tiny_models.ensure_tiny_models`: seeded, cached by a content
hash of the generator and its parameters, so a second run returns at once.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from trnspec.boundary import json_io

from trnspec_tools.local_engine.tiny_models import DEFAULT_CACHE_DIR, ensure_tiny_models


def add_cli_args(parser: argparse.ArgumentParser) -> None:
    """The tiny-model flags (`python -m trnspec_tools models`, scripts/make_tiny_models.py)."""
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE_DIR)
    parser.add_argument("--json", action="store_true", help="print the result as JSON")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="make_tiny_models.py", description=__doc__.split("\n\n")[0]
    )
    add_cli_args(parser)
    args = parser.parse_args(argv)
    console = Console(stderr=True)
    start = time.perf_counter()
    models = ensure_tiny_models(args.cache_dir, log=lambda message: console.log(message))
    elapsed = time.perf_counter() - start
    evaluation = models.info["evaluation"]
    if args.json:
        print(
            json_io.dumps(
                {
                    "target": str(models.target),
                    "draft": str(models.draft),
                    "key": models.key,
                    "elapsed_s": elapsed,
                    "evaluation": evaluation,
                    "build_timings": models.info["timings"],
                }
            ),
            end="",
        )
    else:
        print(f"target: {models.target}")
        print(f"draft:  {models.draft}")
        print(
            f"simulated greedy acceptance at k={evaluation['k']}: "
            f"{evaluation['acceptance_rate']:.3f} (key {models.key}, {elapsed:.1f} s)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
