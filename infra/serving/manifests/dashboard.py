"""The Grafana dashboard that shows whether speculation pays off, built as data.

The committed files are this module's output (a test keeps them equal); regenerate them with
`python -m infra.serving.dashboard_files`: dashboards/trnspec-grafana.json for images whose
vLLM exports every spec-decode counter (V1: neuron-plugin, cpu), and one file per image that
exports fewer (dashboards/trnspec-grafana-neuron-fork.json). Each image declares its counters
(trnspec.config.images.ImageSpec.spec_decode_signals); a panel whose counters an image does not
export becomes a text panel saying so, instead of a graph that stays empty.

Metric names: vLLM V1 (`vllm:spec_decode_*` counters, `_total` in the exposition;
`vllm:time_to_first_token_seconds`, `vllm:inter_token_latency_seconds` - older builds call the
latter `vllm:time_per_output_token_seconds`, so both are queried) and neuron-monitor's Prometheus
exporter (`neuroncore_utilization_ratio`, `neuron_runtime_memory_used_bytes` with
`memory_location="neuron_device"` for HBM).
"""

from __future__ import annotations

from typing import Any

import yaml
from trnspec.boundary import json_io
from trnspec.config.images import (
    IMAGES,
    NUM_ACCEPTED_TOKENS,
    NUM_ACCEPTED_TOKENS_PER_POS,
    NUM_DRAFT_TOKENS,
    NUM_DRAFTS,
    V1_SIGNALS,
    ImageGeneration,
    image_spec,
)

DASHBOARD_UID = "trnspec-speculative"

_SEL = 'namespace=~"$namespace",model_name=~"$model"'
_RI = "[$__rate_interval]"


def _rate(metric: str, by: str = "") -> str:
    group = f" by ({by})" if by else ""
    return f"sum{group}(rate({metric}{{{_SEL}}}{_RI}))"


#: PromQL of every panel, by title (tests read this table).
QUERIES: dict[str, list[tuple[str, str]]] = {
    "Draft acceptance rate": [
        (
            f"{_rate('vllm:spec_decode_num_accepted_tokens_total')} / "
            f"{_rate('vllm:spec_decode_num_draft_tokens_total')}",
            "accepted / drafted",
        )
    ],
    "Mean accepted length (tokens per step)": [
        (
            f"1 + {_rate('vllm:spec_decode_num_accepted_tokens_total')} / "
            f"{_rate('vllm:spec_decode_num_drafts_total')}",
            "mean accepted length",
        )
    ],
    "Acceptance by draft position": [
        (
            f"{_rate('vllm:spec_decode_num_accepted_tokens_per_pos_total', by='position')} / "
            f"scalar({_rate('vllm:spec_decode_num_drafts_total')})",
            "position {{position}}",
        )
    ],
    "Time to first token": [
        (
            f"histogram_quantile({q}, {_rate('vllm:time_to_first_token_seconds_bucket', by='le')})",
            f"p{int(q * 100)}",
        )
        for q in (0.5, 0.95, 0.99)
    ],
    "Inter-token latency": [
        (
            f"histogram_quantile({q}, "
            f"{_rate('vllm:inter_token_latency_seconds_bucket', by='le')} or "
            f"{_rate('vllm:time_per_output_token_seconds_bucket', by='le')})",
            f"p{int(q * 100)}",
        )
        for q in (0.5, 0.95, 0.99)
    ],
    "Tokens per second": [
        (_rate("vllm:generation_tokens_total"), "generated"),
        (_rate("vllm:prompt_tokens_total"), "prompt"),
    ],
    "Queue depth": [
        (f"sum(vllm:num_requests_waiting{{{_SEL}}})", "waiting (autoscaling signal)"),
        (f"sum(vllm:num_requests_running{{{_SEL}}})", "running"),
    ],
    "NeuronCore utilization": [
        ("avg by (node) (neuroncore_utilization_ratio)", "{{node}}"),
    ],
    "HBM used": [
        (
            'sum by (node) (neuron_runtime_memory_used_bytes{memory_location="neuron_device"})',
            "{{node}}",
        ),
    ],
}

#: The spec-decode counters each panel reads (a panel is drawn only when the image has them all).
PANEL_SIGNALS: dict[str, frozenset[str]] = {
    "Draft acceptance rate": frozenset({NUM_ACCEPTED_TOKENS, NUM_DRAFT_TOKENS}),
    "Mean accepted length (tokens per step)": frozenset({NUM_ACCEPTED_TOKENS, NUM_DRAFTS}),
    "Acceptance by draft position": frozenset({NUM_ACCEPTED_TOKENS_PER_POS, NUM_DRAFTS}),
}

_UNITS = {
    "Draft acceptance rate": "percentunit",
    "Acceptance by draft position": "percentunit",
    "Time to first token": "s",
    "Inter-token latency": "s",
    "Tokens per second": "tokens/s",
    "Queue depth": "short",
    "NeuronCore utilization": "percentunit",
    "HBM used": "bytes",
    "Mean accepted length (tokens per step)": "short",
}


def timeseries_panel(
    index: int,
    title: str,
    queries: list[tuple[str, str]] | None = None,
    unit: str | None = None,
) -> dict[str, Any]:
    """A time series panel at grid cell `index` (two per row); `queries` and `unit` default to
    the QUERIES and _UNITS rows of `title`."""
    width = 12
    queries = QUERIES[title] if queries is None else queries
    return {
        "id": index + 1,
        "type": "timeseries",
        "title": title,
        "datasource": {"type": "prometheus", "uid": "${datasource}"},
        "gridPos": {"h": 8, "w": width, "x": (index % 2) * width, "y": (index // 2) * 8},
        "fieldConfig": {"defaults": {"unit": unit or _UNITS[title]}, "overrides": []},
        "options": {"legend": {"displayMode": "list", "placement": "bottom"}},
        "targets": [
            {
                "refId": chr(ord("A") + i),
                "datasource": {"type": "prometheus", "uid": "${datasource}"},
                "expr": expr,
                "legendFormat": legend,
            }
            for i, (expr, legend) in enumerate(queries)
        ],
    }


def _not_exported_panel(index: int, title: str, generation: ImageGeneration) -> dict[str, Any]:
    spec = image_spec(generation)
    missing = sorted(PANEL_SIGNALS[title] - spec.spec_decode_signals)
    panel = timeseries_panel(index, title)
    del panel["targets"], panel["fieldConfig"], panel["datasource"]
    panel["type"] = "text"
    panel["options"] = {
        "mode": "markdown",
        "content": (
            f"**Not exported by this image** ({generation.value}): "
            f"{', '.join(f'`{m}`' for m in missing)}.\n\n{spec.signals_note}.\n\n"
            "bench and smoke report the labelled tokens-per-chunk estimate instead."
        ),
    }
    return panel


def _generation_for(signals: frozenset[str]) -> ImageGeneration | None:
    for generation, spec in IMAGES.items():
        if spec.spec_decode_signals == signals:
            return generation
    return None


def build_dashboard(generation: ImageGeneration | None = None) -> dict[str, Any]:
    """The dashboard for `generation`'s counters (None: an image exporting all V1 counters)."""
    signals = image_spec(generation).spec_decode_signals if generation else V1_SIGNALS
    shown_for = generation if generation is not None else _generation_for(signals)

    def panel(index: int, title: str) -> dict[str, Any]:
        needs = PANEL_SIGNALS.get(title, frozenset())
        if needs <= signals or shown_for is None:
            return timeseries_panel(index, title)
        return _not_exported_panel(index, title, shown_for)

    def query_var(name: str, query: str) -> dict[str, Any]:
        return {
            "name": name,
            "type": "query",
            "datasource": {"type": "prometheus", "uid": "${datasource}"},
            "query": {"query": query, "refId": name},
            "definition": query,
            "includeAll": True,
            "multi": True,
            "refresh": 2,
            "current": {"text": "All", "value": "$__all"},
        }

    return {
        "uid": DASHBOARD_UID,
        "title": "trnspec: speculative decoding on Trainium2",
        "tags": ["trnspec", "vllm", "neuron"],
        "schemaVersion": 39,
        "version": 1,
        "editable": True,
        "time": {"from": "now-1h", "to": "now"},
        "refresh": "30s",
        "templating": {
            "list": [
                {
                    "name": "datasource",
                    "type": "datasource",
                    "query": "prometheus",
                    "current": {"text": "Prometheus", "value": "prometheus"},
                },
                query_var("namespace", "label_values(vllm:num_requests_waiting, namespace)"),
                query_var("model", "label_values(vllm:num_requests_waiting, model_name)"),
            ]
        },
        "panels": [panel(i, title) for i, title in enumerate(QUERIES)],
    }


def dashboard_for_config_yaml(config_yaml: str) -> dict[str, Any]:
    """The dashboard for a workload, from its ServingConfig YAML (the image it runs)."""
    data = yaml.safe_load(config_yaml) or {}
    return build_dashboard(ImageGeneration(data.get("image", ImageGeneration.NEURON_PLUGIN)))


def render_dashboard(generation: ImageGeneration | None = None) -> str:
    return json_io.dumps(build_dashboard(generation), sort_keys=True)
