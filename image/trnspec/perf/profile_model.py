"""A Trn2 profile turned into the performance model's inputs: the shapes of its target and
drafter, the TP group, the dtype and the calibrated constants of the stack it runs as (and of the
plain server the k=0 rows compare with). Read by `predict`, `plan-deploy`, bench's prediction
block and tune's Trn2 rows. A profile the model cannot cost is a ConfigError listing every reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from trnspec.config.images import image_spec
from trnspec.config.serving import ConfigError, Problem, ServingConfig, apply_overrides
from trnspec.hardware.drafters import drafter_for
from trnspec.hardware.model_shapes import ModelShape, ShapeError, known_model_names, resolve_shape
from trnspec.hardware.sizing import BYTES_PER_DTYPE
from trnspec.hardware.topology import INSTANCE_TYPES
from trnspec.perf.stack_group import stack_group
from trnspec.perf.step_time import (
    DRAFT_METHODS,
    Deployment,
    Efficiency,
    Prediction,
    TokensPerStep,
    predict_grid,
)
from trnspec.perf.trn2_fit import trn2_calibration


def _shape(ref_field: str, ref: Any) -> ModelShape | None:
    try:
        return resolve_shape(ref)
    except ShapeError as err:
        raise ConfigError([Problem(ref_field, ref.source, err.reason)]) from None


@dataclass(frozen=True)
class ProfileModel:
    """A Trn2 profile turned into the performance model's inputs."""

    cfg: ServingConfig
    group: str
    target: ModelShape
    #: The drafter costed: the profile's draft, or the default EAGLE3/DFlash shape.
    draft: ModelShape | None
    method: str
    deployment: Deployment
    efficiency: Efficiency
    #: The stack group and constants of the same model without speculation (k=0 rows): the
    #: plain server a user would deploy, which may schedule differently (stack_group).
    plain_group: str
    plain_efficiency: Efficiency

    def group_for(self, k: int) -> str:
        """The stack group a row at window k ran as (k=0: the plain server's)."""
        return self.plain_group if k == 0 else self.group

    def grid(
        self, alpha: float | TokensPerStep, ks: Sequence[int], batches: Sequence[int]
    ) -> list[Prediction]:
        return predict_grid(
            self.target,
            self.method,
            self.draft,
            alpha,
            ks,
            batches,
            self.deployment,
            self.efficiency,
            self.plain_efficiency,
        )


def vcpus_per_replica(cfg: ServingConfig) -> float:
    """Host vCPUs each replica gets on a full node of its instance type (every replica busy, as
    the cost per token assumes): the instance's vCPUs over the TP groups its cores hold."""
    itype = INSTANCE_TYPES[cfg.hardware.instance_type]
    replicas = max(1, itype.logical_cores(cfg.hardware.lnc) // cfg.tensor_parallel_size)
    return itype.vcpus / replicas


def profile_model(cfg: ServingConfig, context_tokens: int) -> ProfileModel:
    """The model of `cfg` on Trn2 with the calibrated constants; ConfigError lists every reason
    it cannot be built (not a Trn2 profile, unknown shapes, a method the model cannot cost)."""
    problems: list[Problem] = []
    spec = image_spec(cfg.image)
    group = stack_group(cfg)
    if not spec.runs_on_trn2 or group is None or cfg.hardware.instance_type not in INSTANCE_TYPES:
        raise ConfigError(
            [
                Problem(
                    "--profile",
                    cfg.name,
                    "predict models Trn2 images on Trn2 instances; for the local CPU engine"
                    " run `make tune` (it fits the same model to the local sweep)",
                )
            ]
        )
    method = cfg.speculation.method
    if method not in ("none", *DRAFT_METHODS):
        problems.append(
            Problem("speculation.method", method, "predict costs " + ", ".join(DRAFT_METHODS))
        )
    target = _shape("target.source", cfg.target)
    if target is None:
        problems.append(
            Problem(
                "target.source",
                cfg.target.source,
                f"no shape known; use a local dir with config.json or one of"
                f" {', '.join(known_model_names())}",
            )
        )
    draft = (
        _shape("speculation.draft.source", cfg.speculation.draft) if cfg.speculation.draft else None
    )
    if method == "draft_model" and draft is None:
        problems.append(
            Problem(
                "speculation.draft.source",
                cfg.speculation.draft.source if cfg.speculation.draft else None,
                "the draft's shape is needed to cost it; give a local dir with config.json",
            )
        )
    if problems:
        raise ConfigError(problems)
    assert target is not None and group is not None
    cal = trn2_calibration()
    dep = Deployment(
        hardware=cal.hardware,
        tensor_parallel_size=cfg.tensor_parallel_size,
        lnc=cfg.hardware.lnc,
        weight_bytes=BYTES_PER_DTYPE[cfg.dtype],
        draft_weight_bytes=BYTES_PER_DTYPE[cfg.dtype],
        kv_bytes=BYTES_PER_DTYPE[cfg.dtype],
        context_tokens=context_tokens,
        vcpus_per_replica=vcpus_per_replica(cfg),
    )
    draft = drafter_for(method, draft, target)
    plain_group = group
    if method != "none":
        plain_group = stack_group(apply_overrides(cfg, ["speculation.method=none"])) or group
    return ProfileModel(
        cfg,
        group,
        target,
        draft,
        method,
        dep,
        cal.efficiency[group],
        plain_group,
        cal.efficiency[plain_group],
    )
