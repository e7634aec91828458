"""Where the tests find checkov: one pin, one place.

checkov pins boto3 1.35 and packaging < 24, which the project's own dependencies exclude, so it
lives in a virtualenv of its own that `make setup` creates (.venv/tools/checkov, version from the
Makefile's CHECKOV_VERSION); $CHECKOV names another binary. A missing checkov fails the scan
tests rather than skipping them: a skipped security scan would read as a clean one.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from platform_synth import REPO


def checkov_version() -> str:
    """The pin, read from the Makefile that installs it."""
    match = re.search(r"^CHECKOV_VERSION := (\S+)$", (REPO / "Makefile").read_text(), re.M)
    assert match, "Makefile has no CHECKOV_VERSION"
    return match.group(1)


def checkov_binary() -> str:
    """The pinned checkov, or a failed test saying how to install it."""
    candidate = os.environ.get("CHECKOV") or str(REPO / ".venv/tools/checkov/bin/checkov")
    if Path(candidate).exists():
        return candidate
    pytest.fail(
        f"checkov not found at {candidate}: run `make setup` (creates .venv/tools/checkov with "
        f"checkov=={checkov_version()}) or set $CHECKOV"
    )
