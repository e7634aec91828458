"""A known engine for the step-time model's tests: tiny shapes, true constants, and the noise-free
k x concurrency sweep they produce (test_engine_fit.py, test_tune.py)."""

from __future__ import annotations

from trnspec.hardware.model_shapes import ModelShape
from trnspec.perf.step_time import Efficiency, Hardware, tokens_per_step

from trnspec_tools.tune.engine_fit import EngineSetup, SweepPoint, model_step_s

TARGET = ModelShape("tiny-target", 4, 256, 4, 2, 64, 768, 4096, True, origin="test")
DRAFT = ModelShape("tiny-draft", 1, 128, 2, 1, 64, 384, 4096, True, origin="test")
SETUP = EngineSetup(TARGET, DRAFT, "draft_model", 4, 96)
TRUTH_HW = Hardware("cpu", 8e9, 4e10, 1e12, 1, "truth")
TRUTH = Efficiency(1.0, 1.0, 0.012, 0.0, draft_pass_overhead_s=0.004, token_overhead_s=1.5e-4)
ALPHA = 0.8


def synthetic_sweep(levels=(1, 2, 4, 8), ks=(1, 2, 4, 6)) -> list[SweepPoint]:
    points = []
    for c in levels:
        points.append(SweepPoint(c, 0, c / model_step_s(SETUP, TRUTH_HW, TRUTH, c, 0)))
        for k in ks:
            tau = tokens_per_step(ALPHA, k)
            tps = c * tau / model_step_s(SETUP, TRUTH_HW, TRUTH, c, k)
            points.append(SweepPoint(c, k, tps, tau))
    return points
