"""Typed settings of a calibration deployment: `serving.calibration`.

While this section is set, the main serving Deployment is the plain arm and a second Deployment
(with its own Service) serves the speculative arm beside it; a Job from the serving image then
measures both, alternated, and writes the run to the model bucket (docs/workload.md,
"Calibration: measuring speculation against plain"). `python -m trnspec plan-deploy` writes this
section when it cannot tell which arm is cheaper; a confident plan leaves it out, and the arm and
the Job go away with it.

A Job runs once: its name is a hash of these settings and of both arms' configs, so a changed
calibration is a new Job, and an unchanged one is measured again only with a new `rerun` token
(`cdk deploy` of an unchanged template changes nothing on the cluster).
"""

from __future__ import annotations

import itertools
import re

from pydantic import BaseModel, ConfigDict, Field, field_validator
from trnspec.boundary.user_input import Int, Text

#: A key inside the model bucket: no scheme, no leading slash, no `..`, printable.
_S3_KEY = re.compile(r"^[A-Za-z0-9!_.*'()/-]+$")
#: The most levels one Job measures (each level is `rounds` x 2 runs).
MAX_LEVELS = 16


class SpeculativeArm(BaseModel):
    """The engine profile (and overrides) of the speculative arm."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    profile: Text = Field(description="Engine profile of the speculative arm (trnspec profiles).")
    overrides: tuple[Text, ...] = Field(
        (), description="Engine `--set dotted.path=value` overrides applied to that profile."
    )


class CalibrationSettings(BaseModel):
    """What the calibration Job measures and how long it may take."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    speculative: SpeculativeArm = Field(
        description="The speculative arm; the plain arm is the main Deployment (serving.profile)."
    )
    concurrency: tuple[Int, ...] = Field(
        (1, 2, 4),
        min_length=1,
        max_length=MAX_LEVELS,
        description="Concurrency levels to measure, increasing, each at most max_num_seqs of "
        "both arms.",
    )
    rounds: Int = Field(
        4, ge=2, le=64, description="Alternated rounds per level (even: ABBA order)."
    )
    prompts_key: Text | None = Field(
        None,
        description='Key of a JSONL prompt file in the model bucket (one {"prompt": ...} per '
        "line); unset: the shipped default set.",
    )
    output_len: Int = Field(256, ge=1, le=8192, description="Output tokens per request.")
    num_prompts: Int = Field(
        16, ge=1, le=4096, description="Requests per arm per round (at least the concurrency)."
    )
    deadline_minutes: Int = Field(
        120,
        ge=10,
        le=24 * 60,
        description="Bound of the measurement once both arms answer (the Job's "
        "activeDeadlineSeconds adds the wait for the arms).",
    )
    rerun: Text | None = Field(
        None,
        description="Any token: it enters the Job's name, so a new token is a new Job (`cdk "
        "deploy -c serving.calibration.rerun=2` measures again an unchanged calibration); keep "
        "it in later deploys, or the Job of the previous token runs again.",
    )

    @field_validator("concurrency")
    @classmethod
    def _increasing(cls, levels: tuple[int, ...]) -> tuple[int, ...]:
        if any(c < 1 or c > 1024 for c in levels):
            raise ValueError("every level must be between 1 and 1024 streams")
        if any(b <= a for a, b in itertools.pairwise(levels)):
            raise ValueError("list the levels strictly increasing, e.g. [1, 2, 4]")
        return levels

    @field_validator("rounds")
    @classmethod
    def _even(cls, rounds: int) -> int:
        if rounds % 2:
            raise ValueError(
                f"must be even: rounds alternate plain-first and speculative-first (ABBA); "
                f"use {rounds + 1}"
            )
        return rounds

    @field_validator("prompts_key")
    @classmethod
    def _key(cls, key: str | None) -> str | None:
        if key is None:
            return None
        if key.startswith(("s3://", "/")) or ".." in key or not _S3_KEY.match(key):
            raise ValueError(
                "give the key inside the model bucket, e.g. calibration/prompts.jsonl "
                "(no s3:// and no leading /)"
            )
        return key
