"""The serving config: one typed, frozen model per concern, loaded from YAML profiles.

The same `ServingConfig` feeds the rendered vLLM command, the pod's serve entrypoint and the CDK
app (which imports this schema), so there is one source of truth for what a server runs. Schema
errors (wrong types, unknown fields) surface here as `ConfigError`; the cross-field rules that
need topology or model shapes live in `trnspec.checks.all_checks`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
)

from trnspec.boundary.problems import InputError, Problem, problems_from_validation
from trnspec.boundary.user_input import (
    InputReadError,
    Int,
    Plain,
    Text,
    load_yaml,
    parse_value,
    read_text_file,
    refuse_bool,
)
from trnspec.config.images import ImageGeneration
from trnspec.config.pod_contract import SERVER_PORT
from trnspec.config.s3_uri import is_s3_uri, parse_s3_uri

SpeculationMethod = Literal["draft_model", "eagle3", "dflash", "none"]
Dtype = Literal["bfloat16", "float16", "float32"]


#: Bad engine config input: the one input error (trnspec.boundary.problems.InputError), under the
#: name the config's callers have always caught.
ConfigError = InputError


class _Frozen(BaseModel):
    # Text fields take numbers as written (trnspec.boundary.user_input.Text), integers refuse
    # booleans.
    model_config = ConfigDict(frozen=True, extra="forbid")


class ModelRef(_Frozen):
    """A model as the server sees it: the name clients ask for and where its weights live."""

    name: Text = Field(min_length=1, description="Served model name (what clients put in 'model').")
    source: Text = Field(
        min_length=1,
        description="Where the weights are: s3://bucket/prefix, a local directory, or a hub id.",
    )
    revision: Text | None = Field(
        default=None, description="Hub revision (branch, tag or commit); ignored for S3/local."
    )

    @field_validator("source")
    @classmethod
    def _s3_source_is_a_folder(cls, value: str) -> str:
        # An S3 source decides where it is staged: bucket and prefix required, no `..` escape.
        if is_s3_uri(value):
            parse_s3_uri(value)
        return value


class SpeculationConfig(_Frozen):
    """How the target is sped up: method, draft (a small model or an EAGLE head) and window k."""

    method: SpeculationMethod = Field(
        default="none",
        description=(
            "draft_model (separate small model), eagle3 (EAGLE3 head), dflash (DFlash "
            "block-parallel drafter) or none (baseline)."
        ),
    )
    draft: ModelRef | None = Field(
        default=None,
        description=(
            "The draft model, EAGLE3 head or DFlash drafter; required unless method is none."
        ),
    )
    num_speculative_tokens: Int = Field(
        default=4, ge=1, description="k: tokens the draft proposes per target step."
    )
    k_schedule: list[tuple[Int, Int, Int]] = Field(
        default_factory=list,
        description=(
            "Batch-aware window: inclusive [batch_start, batch_end, k] bands, contiguous from 1 "
            "to max_num_seqs, each k in 0..num_speculative_tokens; vLLM picks k from the running "
            "batch each step (num_speculative_tokens_per_batch_size). Empty: one k for every "
            "batch. Rendered on cpu; on neuron-plugin only with k_schedule_on_neuron; refused "
            "on neuron-fork (trnspec.config.k_schedule)."
        ),
    )
    k_schedule_on_neuron: bool = Field(
        default=False,
        description=(
            "Opt in to rendering k_schedule on neuron-plugin: vLLM 0.24 takes the field, but "
            "vllm-neuron's model runner is not documented to honour a k that changes per step; "
            "measure it before relying on it."
        ),
    )
    options: dict[Text, Plain] = Field(
        default_factory=dict,
        description="Extra keys merged into vLLM's --speculative-config JSON (method-specific).",
    )


class HardwareConfig(_Frozen):
    """Where the server runs: a Trn2 instance type at a logical-core size, or "cpu"."""

    instance_type: Text = Field(
        default="trn2.48xlarge", description='A trn2 instance type, or "cpu" for the local engine.'
    )
    lnc: Annotated[Literal[1, 2], BeforeValidator(refuse_bool)] = Field(
        default=2, description="Logical NeuronCore size: 2 fuses two physical cores (Trn2 default)."
    )
    check_hbm: bool = Field(
        default=True,
        description=(
            "Run the HBM fit check. Set false only for a model with no local config.json and no "
            "entry in trnspec.hardware.model_shapes (its size is then unknown)."
        ),
    )


class ServerConfig(_Frozen):
    """The OpenAI-compatible HTTP endpoint."""

    host: Text = Field(default="0.0.0.0", description="Address the server binds.")
    port: Int = Field(default=SERVER_PORT, ge=1, le=65535, description="TCP port the server binds.")


class ServingConfig(_Frozen):
    """Everything that decides what one vLLM server runs."""

    name: Text = Field(min_length=1, description="Config name (the profile name for profiles).")
    description: Text = Field(default="", description="One line shown by `trnspec profiles`.")
    image: ImageGeneration = Field(
        default=ImageGeneration.NEURON_PLUGIN,
        description=(
            "vLLM build: neuron-plugin (EAGLE3, DFlash; SDK 2.33), neuron-plugin-sdk2.32 (the "
            "previous plugin image), neuron-fork (draft model; legacy) or cpu."
        ),
    )
    target: ModelRef = Field(description="The model whose output the server returns.")
    speculation: SpeculationConfig = Field(
        default_factory=SpeculationConfig, description="Speculative decoding settings."
    )
    tensor_parallel_size: Int = Field(
        default=64, ge=1, description="Logical NeuronCores one model replica is sharded over."
    )
    max_model_len: Int = Field(
        default=8192, ge=16, description="Longest prompt + output, in tokens, per sequence."
    )
    max_num_seqs: Int = Field(default=4, ge=1, description="Sequences decoded together (batch).")
    sequence_buckets: list[Int] = Field(
        default_factory=list,
        description=(
            "Neuron sequence-length buckets, ascending, the last equal to max_model_len; "
            "each bucket is one compiled graph. Empty lets the runtime choose."
        ),
    )
    dtype: Dtype = Field(default="bfloat16", description="Weight and activation dtype.")
    hardware: HardwareConfig = Field(
        default_factory=HardwareConfig, description="Instance type and LNC."
    )
    server: ServerConfig = Field(default_factory=ServerConfig, description="HTTP endpoint.")


# --- loading -------------------------------------------------------------------------------


def parse_config(data: object) -> ServingConfig:
    """Build a config from parsed YAML/JSON; every schema problem in one ConfigError."""
    if not isinstance(data, Mapping):
        raise ConfigError([Problem("<config>", data, "must be a mapping of fields to values")])
    try:
        return ServingConfig.model_validate(dict(data))
    except ValidationError as err:
        raise ConfigError(
            problems_from_validation(err, ServingConfig, root="<config>", fixes=_fix)
        ) from None


def _fix(error: Mapping[str, Any]) -> str | None:
    if error["type"] == "extra_forbidden" and len(error["loc"]) == 1:
        return "unknown field; remove it (see `trnspec profiles` and the ServingConfig fields)"
    return None


def _load_yaml(text: str, origin: str) -> object:
    try:
        return load_yaml(text)
    except InputReadError as err:
        raise ConfigError([Problem(origin, "<yaml>", str(err))]) from None


def load_config(path: str | Path) -> ServingConfig:
    """Load a config file (YAML or JSON), at most user_input.MAX_INPUT_BYTES of UTF-8."""
    p = Path(path)
    try:
        text = read_text_file(p)
    except OSError as err:
        raise ConfigError(
            [Problem("--config", str(p), f"cannot read it ({err.strerror or err})")]
        ) from None
    except InputReadError as err:
        raise ConfigError([Problem("--config", str(p), str(err))]) from None
    return parse_config(_load_yaml(text, "--config"))


def _profiles_dir() -> resources.abc.Traversable:
    return resources.files("trnspec").joinpath("profiles")


def list_profiles() -> list[str]:
    """Names of the shipped profiles, sorted."""
    return sorted(
        entry.name.removesuffix(".yaml")
        for entry in _profiles_dir().iterdir()
        if entry.name.endswith(".yaml")
    )


def load_profile(name: str) -> ServingConfig:
    """Load a shipped profile by name."""
    if name not in list_profiles():
        raise ConfigError(
            [
                Problem(
                    "--profile", name, f"unknown profile; use one of: {', '.join(list_profiles())}"
                )
            ]
        )
    text = _profiles_dir().joinpath(f"{name}.yaml").read_text(encoding="utf-8")
    return parse_config(_load_yaml(text, f"profile {name}"))


# --- overrides -----------------------------------------------------------------------------


def _parse_override(item: str) -> tuple[list[str], object] | Problem:
    path, sep, raw = item.partition("=")
    path = path.strip()
    if not sep or not path or any(not part for part in path.split(".")):
        return Problem(
            "--set", item, "use dotted.path=value, e.g. speculation.num_speculative_tokens=5"
        )
    return path.split("."), parse_value(raw)


def apply_overrides(cfg: ServingConfig, overrides: Sequence[str]) -> ServingConfig:
    """Apply `--set dotted.path=value` items; returns a new config.

    VALUE follows trnspec.boundary.user_input.parse_value (the same rule as `cdk -c`): a YAML 1.2
    value, kept as written for text fields, so `target.revision=0123456` stays "0123456".

    A path through a field that is currently unset (e.g. speculation.draft on a baseline) creates
    it, so `--set speculation.draft.name=x --set speculation.draft.source=y` works.
    """
    data: dict[str, Any] = cfg.model_dump(mode="json")
    problems: list[Problem] = []
    for item in overrides:
        parsed = _parse_override(item)
        if isinstance(parsed, Problem):
            problems.append(parsed)
            continue
        parts, value = parsed
        node: Any = data
        for depth, key in enumerate(parts[:-1]):
            child = node.get(key) if isinstance(node, dict) else None
            if child is None and isinstance(node, dict):
                child = node[key] = {}
            if not isinstance(child, dict):
                problems.append(
                    Problem(
                        ".".join(parts[: depth + 1]),
                        child,
                        f"is not a section, so {'.'.join(parts)} cannot be set",
                    )
                )
                break
            node = child
        else:
            node[parts[-1]] = value
    if problems:
        raise ConfigError(problems)
    return parse_config(data)
