"""The Grafana dashboard that shows whether speculation pays off, built as data.

The committed file dashboards/trnspec-grafana.json is this function's output (a test keeps them
equal); regenerate it with `python -m infra.workload.dashboard`.

Metric names: vLLM V1 (`vllm:spec_decode_*` counters, `_total` in the exposition;
`vllm:time_to_first_token_seconds`, `vllm:inter_token_latency_seconds` - older builds call the
latter `vllm:time_per_output_token_seconds`, so both are queried) and neuron-monitor's Prometheus
exporter (`neuroncore_utilization_ratio`, `neuron_runtime_memory_used_bytes` with
`memory_location="neuron_device"` for HBM).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

DASHBOARD_UID = "trnspec-speculative"
DASHBOARD_PATH = Path(__file__).resolve().parents[2] / "dashboards" / "trnspec-grafana.json"

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


def _panel(index: int, title: str) -> dict[str, Any]:
    width = 12
    return {
        "id": index + 1,
        "type": "timeseries",
        "title": title,
        "datasource": {"type": "prometheus", "uid": "${datasource}"},
        "gridPos": {"h": 8, "w": width, "x": (index % 2) * width, "y": (index // 2) * 8},
        "fieldConfig": {"defaults": {"unit": _UNITS[title]}, "overrides": []},
        "options": {"legend": {"displayMode": "list", "placement": "bottom"}},
        "targets": [
            {
                "refId": chr(ord("A") + i),
                "datasource": {"type": "prometheus", "uid": "${datasource}"},
                "expr": expr,
                "legendFormat": legend,
            }
            for i, (expr, legend) in enumerate(QUERIES[title])
        ],
    }


def build_dashboard() -> dict[str, Any]:
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
        "panels": [_panel(i, title) for i, title in enumerate(QUERIES)],
    }


def render_dashboard() -> str:
    return json.dumps(build_dashboard(), indent=2, sort_keys=True) + "\n"


def write_dashboard(path: Path = DASHBOARD_PATH) -> Path:
    """Write atomically (temp file + rename) so a reader never sees half a dashboard."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w") as handle:
        handle.write(render_dashboard())
    os.replace(tmp, path)
    return path


if __name__ == "__main__":
    sys.stdout.write(f"wrote {write_dashboard()}\n")
