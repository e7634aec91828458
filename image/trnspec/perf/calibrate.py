"""The former name of trnspec.perf.trn2_fit (the constant fit), kept only while
image/trnspec/plan (deploy_plan, predict, measured) still imports it: plan/ is being reshaped in
the same round, and its owner switches those imports to trnspec.perf.trn2_fit, then this module
goes. New code imports trnspec.perf.trn2_fit; "calibrate" names the A/B deployment
(trnspec_tools.calibration) only."""

from __future__ import annotations

from trnspec.perf.trn2_fit import (
    DATA_FILE,
    Calibration,
    refit_with,
    trn2_calibration,
)

__all__ = ["DATA_FILE", "Calibration", "refit_with", "trn2_calibration"]
