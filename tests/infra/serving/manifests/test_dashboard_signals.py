"""The dashboard draws only the spec-decode counters its image's vLLM exports."""

from __future__ import annotations

import pytest
from trnspec.config.images import IMAGES, V1_SIGNALS, ImageGeneration

from infra.serving.manifests.dashboard import PANEL_SIGNALS, QUERIES, build_dashboard


def _panels(generation: ImageGeneration) -> dict[str, dict]:
    return {p["title"]: p for p in build_dashboard(generation)["panels"]}


@pytest.mark.parametrize("generation", list(ImageGeneration), ids=lambda g: g.value)
def test_every_query_reads_only_counters_the_image_exports(generation):
    exported = IMAGES[generation].spec_decode_signals
    for title, panel in _panels(generation).items():
        exprs = " ".join(t["expr"] for t in panel.get("targets", []))
        for counter in V1_SIGNALS - exported:
            assert f"{counter}_total" not in exprs, (generation.value, title)


def test_fork_dashboard_says_the_spec_decode_panels_are_not_exported():
    panels = _panels(ImageGeneration.NEURON_FORK)
    for title in PANEL_SIGNALS:
        assert panels[title]["type"] == "text"
        content = panels[title]["options"]["content"]
        assert "Not exported by this image" in content and "neuron-fork" in content
        assert "tokens-per-chunk estimate" in content
    assert panels["Queue depth"]["type"] == "timeseries"


@pytest.mark.parametrize("generation", [ImageGeneration.NEURON_PLUGIN, ImageGeneration.CPU])
def test_v1_images_get_every_spec_decode_graph(generation):
    panels = _panels(generation)
    assert list(panels) == list(QUERIES)
    assert all(p["type"] == "timeseries" for p in panels.values())


@pytest.mark.parametrize("generation", list(ImageGeneration), ids=lambda g: g.value)
def test_every_counter_is_read_through_rate_so_a_server_restart_is_not_a_negative_delta(
    generation,
):
    """Counters reset when a pod restarts; rate()/increase() detect the reset, a raw difference
    would draw a negative acceptance (issue 12's rule, on the dashboard)."""
    import re

    seen = 0
    for title, panel in _panels(generation).items():
        for target in panel.get("targets", []):
            for counter in re.findall(r"[a-z_:]+_total\b", target["expr"]):
                seen += 1
                assert re.search(rf"(rate|increase)\(\s*{re.escape(counter)}\b", target["expr"]), (
                    title,
                    counter,
                )
    assert seen >= 2  # generation and prompt tokens at least: the check ran
