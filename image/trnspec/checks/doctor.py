"""`trnspec doctor`: does this container run what the config needs? Pure checks on a probe.

The pod runs it first (before staging and the compile of tens of minutes), so an image that lacks
the drafter's class, a pod that got no Neuron device or a node on another LNC fails in seconds
with one line naming what is missing, not after an hour of compiling. What the environment holds
is read by trnspec.checks.doctor_probe into an EnvironmentProbe; everything here is a pure function
of the config and that probe, so tests feed fake probes.

Sources of the names checked:
- vllm-neuron's model registry (`vllm_neuron/model/registry.py`, `get_models()`) lists
  "DFlashDraftModel" and "Eagle3LlamaForCausalLM", the classes it registers with vLLM's
  ModelRegistry; its model runner resolves every model through
  `ModelRegistry.resolve_model_cls`, and its EAGLE3 proposer prefixes "Eagle3" to the head's
  architecture (speculative_decoding_design.md).
- The fork's fused speculation runs inside NxD Inference, not a vLLM model class: the check
  there is the distribution (trnspec.config.images.ImageSpec.distributions).
- LNC: `/opt/aws/neuron/logical_nc_config` holds `NEURON_LOGICAL_NC_CONFIG=<n>` on the node (Neuron
  EKS prerequisites); the environment variable of that name wins where set.
"""

from __future__ import annotations

from dataclasses import dataclass

from trnspec.boundary.errors import BoundaryError
from trnspec.boundary.numbers import int_text
from trnspec.config.images import ImageGeneration, image_spec
from trnspec.config.serving import ServingConfig
from trnspec.hardware.topology import instance

#: The model class each speculation method needs in vllm-neuron's registry (plugin images).
METHOD_ARCHITECTURES: dict[str, str] = {
    "dflash": "DFlashDraftModel",
    "eagle3": "Eagle3LlamaForCausalLM",
}

LNC_FILE = "/opt/aws/neuron/logical_nc_config"
LNC_ENV = "NEURON_LOGICAL_NC_CONFIG"


@dataclass(frozen=True)
class EnvironmentProbe:
    """What the container holds, as read by trnspec.checks.doctor_probe (or built by a test)."""

    #: Installed version of each distribution asked about (None: not installed).
    distributions: dict[str, str | None]
    #: Model classes in vllm-neuron's registry (None: not read or unreadable; registry_error
    #: says why).
    architectures: frozenset[str] | None
    registry_error: str | None
    #: /dev/neuron* device files visible in the container.
    neuron_devices: tuple[str, ...]
    #: NEURON_LOGICAL_NC_CONFIG from the environment, and the node file's text (None: absent).
    lnc_env: str | None
    lnc_file_text: str | None


@dataclass(frozen=True)
class DoctorReport:
    """Facts found and problems (each naming what is missing and the fix)."""

    facts: tuple[str, ...]
    problems: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.problems

    def line(self) -> str:
        """One line: the problems when any, else the facts."""
        if self.problems:
            return "doctor: FAILED: " + "; ".join(self.problems)
        return "doctor: ok: " + "; ".join(self.facts)


def parse_lnc(text: str) -> int | None:
    """The LNC in a logical_nc_config file ("NEURON_LOGICAL_NC_CONFIG=2", or a bare "2")."""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        value = line.split("=", 1)[1] if "=" in line else line
        try:
            return int_text(value.strip().strip("\"'"), LNC_ENV, 0, 64)
        except BoundaryError:
            return None
    return None


def _distributions(cfg: ServingConfig, probe: EnvironmentProbe) -> tuple[list[str], list[str]]:
    spec = image_spec(cfg.image)
    facts, problems = [], []
    for name, expected in spec.distributions:
        installed = probe.distributions.get(name)
        if installed is None:
            problems.append(
                f"distribution {name} is not installed (image {spec.generation.value} carries "
                f"it: run {spec.uri})"
            )
        elif expected is not None and not installed.startswith(expected):
            problems.append(
                f"{name} {installed} installed, {expected} expected for image "
                f"{spec.generation.value} (run {spec.uri}, or set image= to the generation "
                f"this container is)"
            )
        else:
            facts.append(f"{name} {installed}")
    return facts, problems


def _registry(cfg: ServingConfig, probe: EnvironmentProbe) -> tuple[list[str], list[str]]:
    method = cfg.speculation.method
    needed = METHOD_ARCHITECTURES.get(method)
    if needed is None or not image_spec(cfg.image).distributions:
        return [], []
    if probe.architectures is None:
        reason = probe.registry_error or "unknown error"
        return [], [f"vllm-neuron's model registry is unreadable ({reason}): {needed} unverified"]
    if needed not in probe.architectures:
        newest = image_spec(ImageGeneration.NEURON_PLUGIN)
        fix = (
            f"the serving image is not built from {newest.uri}: rebuild it from that base"
            if cfg.image is ImageGeneration.NEURON_PLUGIN
            else f"set image={newest.generation.value} ({newest.uri})"
        )
        return [], [
            f"model class {needed} (speculation.method={method}) is not in vllm-neuron's "
            f"model registry here: {fix}"
        ]
    return [f"{needed} registered"], []


def _devices(cfg: ServingConfig, probe: EnvironmentProbe) -> tuple[list[str], list[str]]:
    needed = instance(cfg.hardware.instance_type).chips_for(
        cfg.tensor_parallel_size, cfg.hardware.lnc
    )
    seen = len(probe.neuron_devices)
    if seen == 0:
        return [], [
            "no Neuron device (/dev/neuron*) in the container: request aws.amazon.com/neuron "
            "and run on a Trn2 node with the Neuron device plugin"
        ]
    if seen < needed:
        return [], [
            f"{seen} Neuron device(s) visible, tensor_parallel_size={cfg.tensor_parallel_size} "
            f"at LNC={cfg.hardware.lnc} needs {needed}: request {needed} aws.amazon.com/neuron"
        ]
    return [f"{seen} Neuron device(s), {needed} needed"], []


def _lnc(cfg: ServingConfig, probe: EnvironmentProbe) -> tuple[list[str], list[str]]:
    if probe.lnc_env is not None:
        source, text = LNC_ENV, probe.lnc_env
    elif probe.lnc_file_text is not None:
        source, text = LNC_FILE, probe.lnc_file_text
    else:
        return [f"LNC not visible in the container (neither {LNC_ENV} nor {LNC_FILE})"], []
    found = parse_lnc(text)
    if found is None:
        return [], [f"{source} holds {text.strip()!r}, not an LNC: expected 1 or 2"]
    if found != cfg.hardware.lnc:
        return [], [
            f"the node runs LNC={found} ({source}) but hardware.lnc={cfg.hardware.lnc}: set "
            f"hardware.lnc={found} or run on a pool configured for LNC={cfg.hardware.lnc}"
        ]
    return [f"LNC {found} ({source}) = hardware.lnc"], []


def diagnose(cfg: ServingConfig, probe: EnvironmentProbe) -> DoctorReport:
    """Every check for a Trn2 config (a cpu config has nothing to check: empty report)."""
    if not image_spec(cfg.image).runs_on_trn2:
        return DoctorReport(facts=("cpu image: nothing to check",), problems=())
    facts: list[str] = []
    problems: list[str] = []
    for check in (_distributions, _registry, _devices, _lnc):
        found, missing = check(cfg, probe)
        facts += found
        problems += missing
    return DoctorReport(facts=tuple(facts), problems=tuple(problems))


def distributions_to_probe(cfg: ServingConfig) -> tuple[str, ...]:
    return tuple(name for name, _ in image_spec(cfg.image).distributions)
