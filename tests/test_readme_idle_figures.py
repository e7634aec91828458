"""The idle and calibration figures the README and docs/platform.md quote are the committed
default plan's (config/plans/default.yaml), as `plan-deploy` records them: a regenerated plan
whose figures moved fails here until the prose follows."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]


def _plan_idle() -> dict[str, dict[str, float]]:
    return yaml.safe_load((REPO / "config/plans/default.yaml").read_text())["plan"]["idle_cost"]


@pytest.mark.parametrize("doc", ["README.md", "docs/platform.md"])
def test_the_quoted_idle_and_calibration_figures_are_the_default_plans(doc: str) -> None:
    text = " ".join((REPO / doc).read_text().split())
    idle = _plan_idle()
    calibrating = idle["calibrating"]
    hours, minutes = divmod(int(calibrating["at_most_minutes"]), 60)
    assert f"${idle['min_replicas']['usd_per_30_day_month']:,.2f} per 30-day month" in text
    assert f"at most ${calibrating['usd_at_most']:,.2f}" in text
    assert f"at most {hours} h {minutes} min" in text
