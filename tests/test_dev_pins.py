"""The test tools are pinned to one release each: a fresh clone must install what the last green
CI installed, or a tool's new release fails the build on code that did not change (moto 5.2.6's
EC2 data did, once)."""

from __future__ import annotations

import tomllib
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent


def test_every_dev_dependency_is_pinned_to_one_release() -> None:
    dev = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"][
        "dev"
    ]
    loose = []
    for line in dev:
        spec = list(Requirement(line).specifier)
        if len(spec) != 1 or spec[0].operator != "==" or "*" in spec[0].version:
            loose.append(line)
    assert dev
    assert loose == []
