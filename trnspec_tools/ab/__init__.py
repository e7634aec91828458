"""The A/B measurement: one answer to "is the candidate arm cheaper (faster) than the reference,
here, at this load?", for every tool that asks it (bench --rounds, tune, tune --schedule, the
calibration run, the demo, bench's comparison with `vllm bench serve`).

The order of work, one module each:

1. order.py: which arm runs first in each round (ABBA), the one rule, and every step of a run.
2. spread.py: a figure over rounds (its median and the interval it is known to), and the
   median's distribution-free interval.
3. median_round.py: the one run that stands for an arm at a level (the lower median by
   throughput), never an average of runs.
4. comparison.py: the rounds of two arms paired by their round number (never by position), each
   pair's speed and cost ratio with each arm's own price, and the one decision rule, giving a
   `Comparison` with its `trnspec.plan.verdict.Verdict`.
"""
