"""Build the parser tests' tool environments ahead of the tests that need them.

`make test` starts this in the background while the fast lane runs, so the environments'
downloads and installs (minutes on a fresh clone: tests/trnspec/vllm_parsers/toolenv.py) overlap
with tests instead of adding to the slow lane. Each build holds its release's file lock, so the
parser test waits for one in progress and never builds twice; a build that fails here is built
again, and reported, by the test. Run: python tests/trnspec/vllm_parsers/prebuild.py
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    sys.path[:0] = [str(HERE.parent), str(HERE.parents[2] / "image")]
    from vllm_parsers.releases import RELEASES
    from vllm_parsers.toolenv import ensure_env

    failed = 0
    for image, release in RELEASES.items():
        try:
            env = ensure_env(release)
        except Exception as exc:  # reported here; the test builds it again and reports it
            print(f"{image.value}: vLLM {release.vllm} not built: {exc}", flush=True)
            failed += 1
        else:
            print(f"{image.value}: vLLM {env.vllm} ready ({env.build_seconds:.0f} s)", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
