"""What a deployment plan predicted for the variants it deploys: `plan.chosen` (the main
Deployment) and, in a calibration plan, `plan.speculative_arm` (the arm), as `trnspec plan-deploy`
recorded them (trnspec.plan.document.figures). They reach the serving settings only through the
plan file (`serving.plan`): loading refuses `serving.plan_figures` written anywhere else, so a
figure the dashboard shows as predicted is the plan's own.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from trnspec.boundary.problems import problems_from_validation
from trnspec.boundary.user_input import Int, Text

#: The serving field the figures are carried in (set by the plan file only).
PLAN_FIGURES_FIELD = "plan_figures"
#: The largest error band a plan may carry. A held-out relative error (predicted / measured - 1)
#: has no upper limit: a model twice too slow is off by 100 %, and `plan-deploy` writes such bands
#: (its decision treats a band of 1 or more as "undecided"); 100 (10,000 %) refuses only garbage.
MAX_ERROR_BAND = 100.0
#: The plan records this module reads, under `plan:`.
RECORDS = ("chosen", "speculative_arm")


class PlannedVariant(BaseModel):
    """One variant's predicted figures, at its batch (max_num_seqs streams per replica)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    profile: Text = Field(description="Engine profile the figures were predicted for.")
    overrides: tuple[Text, ...] = Field((), description="Its engine overrides.")
    max_num_seqs: Int = Field(ge=1, description="The batch the figures are for.")
    tpot_ms: float = Field(gt=0, strict=True, description="Predicted time per output token, ms.")
    output_tokens_per_s_per_replica: float = Field(
        gt=0, strict=True, description="Predicted output tokens/s of one replica at that batch."
    )
    cost_per_1m_output_tokens_usd: float = Field(
        gt=0,
        strict=True,
        description="Predicted on-demand cost per 1M output tokens at that speed, USD.",
    )
    error_band: float | None = Field(
        None,
        ge=0,
        le=MAX_ERROR_BAND,
        strict=True,
        description="Held-out relative error of its regime, 0.25 for 25 % (None: unknown).",
    )
    error_band_note: Text | None = Field(None, description="Which rows the band comes from.")

    def same_engine(self, profile: str, overrides: tuple[str, ...]) -> bool:
        """Whether these figures were predicted for the engine `profile` + `overrides`."""
        return self.profile == profile and list(self.overrides) == [str(o) for o in overrides]


class PlanFigures(BaseModel):
    """The main Deployment's predicted figures and, with calibration, the arm's."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    chosen: PlannedVariant = Field(description="plan.chosen: the main Deployment's variant.")
    speculative_arm: PlannedVariant | None = Field(
        None, description="plan.speculative_arm: the calibration's speculative arm."
    )


#: A record that holds none of these predicted nothing (a hand-written plan may name only the
#: nodes it needs); one that holds some must hold all of them.
FIGURES = ("tpot_ms", "output_tokens_per_s_per_replica", "cost_per_1m_output_tokens_usd")


def _has_figures(found: object) -> bool:
    return isinstance(found, dict) and any(f in found for f in FIGURES)


def read_plan_figures(record: object) -> tuple[PlanFigures | None, list[str]]:
    """The figures of `plan.chosen` and `plan.speculative_arm` (None when the plan records no
    figures for its chosen variant), or one fix per bad field, naming it. A record of the wrong
    type is the plan reader's to report (plan_file.py)."""
    if not isinstance(record, dict) or not _has_figures(record.get("chosen")):
        return None, []
    data: dict[str, Any] = {}
    for key in RECORDS:
        found = record.get(key)
        if found is None:
            continue
        if not _has_figures(found):
            return None, [f"plan.{key} must be a mapping holding {', '.join(FIGURES)}"]
        data[key] = {f: found[f] for f in PlannedVariant.model_fields if f in found}
    try:
        return PlanFigures.model_validate(data), []
    except ValidationError as err:
        return None, [
            f"{p}; regenerate the file with plan-deploy"
            for p in problems_from_validation(err, PlanFigures, prefix="plan.")
        ]
