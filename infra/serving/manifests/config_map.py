"""The serving config delivered to the pod as a file, not as flags typed into the manifest."""

from __future__ import annotations

from infra.contracts import CONFIG_FILE
from infra.serving.manifests.pod import SERVE_COMPONENT, Manifest, config_map_name, metadata
from infra.serving.manifests.spec import WorkloadSpec


def serving_config_map(spec: WorkloadSpec) -> Manifest:
    """Immutable and content-addressed: a new config is a new ConfigMap and a new rollout."""
    meta = metadata(spec, config_map_name(spec), SERVE_COMPONENT)
    meta["annotations"] = {"trnspec.io/config-sha256": spec.config_sha256}
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": meta,
        "immutable": True,
        "data": {CONFIG_FILE: spec.config_yaml},
    }
