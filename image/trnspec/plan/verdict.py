"""The one answer to "is the speculative arm cheaper (or faster) than plain, here?".

Every tool that answers it (predict, plan-deploy, tune, tune --schedule, bench --rounds, the
calibration, the demo and the dashboard text) says it with these three words, whether the answer
comes from the model's bands (trnspec.plan.decision, trnspec.plan.batch_verdicts) or from rounds
measured side by side (trnspec_tools.ab). A level or plan that could not be measured at all has
no Verdict (None), with its reason beside it.
"""

from __future__ import annotations

from enum import Enum


class Verdict(Enum):
    #: speculation is cheaper (faster) than plain, with the evidence against it
    SPECULATION = "speculation"
    #: plain is cheaper (faster), with the evidence for speculation
    PLAIN = "plain"
    #: the evidence allows either: measure (more rounds, or on the hardware)
    UNDECIDED = "undecided"
