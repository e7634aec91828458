"""The committed Grafana dashboards (dashboards/*.json): which file holds which image's dashboard,
and the command that writes them from infra/serving/manifests/dashboard.py (the pure builder):
`python -m infra.serving.dashboard_files`. A test keeps the files equal to the builder's output.
"""

from __future__ import annotations

import sys
from pathlib import Path

from trnspec.boundary.write import write_file
from trnspec.config.images import V1_SIGNALS, ImageGeneration, image_spec

from infra.serving.manifests.dashboard import render_dashboard

DASHBOARDS_DIR = Path(__file__).resolve().parents[2] / "dashboards"
DASHBOARD_PATH = DASHBOARDS_DIR / "trnspec-grafana.json"


def dashboard_path(generation: ImageGeneration | None = None) -> Path:
    """The committed file for `generation`: the shared one unless it lacks V1 counters."""
    if generation is None or image_spec(generation).spec_decode_signals == V1_SIGNALS:
        return DASHBOARD_PATH
    return DASHBOARDS_DIR / f"trnspec-grafana-{generation.value}.json"


def committed_dashboards() -> dict[Path, str]:
    """Every committed dashboard file and its content (one per distinct set of counters)."""
    out = {DASHBOARD_PATH: render_dashboard()}
    for generation in ImageGeneration:
        path = dashboard_path(generation)
        if path != DASHBOARD_PATH:
            out[path] = render_dashboard(generation)
    return out


def write_dashboards() -> list[Path]:
    """Write every committed dashboard, each atomically (a reader never sees half a file)."""
    return [write_file(path, text) for path, text in committed_dashboards().items()]


if __name__ == "__main__":
    for written in write_dashboards():
        sys.stdout.write(f"wrote {written}\n")
