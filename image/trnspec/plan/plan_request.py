"""What `plan-deploy` is asked, typed and frozen: the candidate profiles, the acceptance with its
source, the latency target and the load, the candidate batches, and the evidence read from
outside (measured rows, a deployment config's pools), each already read by its reader
(trnspec.plan.readers). `trnspec.plan.plan_deploy.plan_deploy` answers it without I/O.

`PlanRequest.replay()` names, by the flags' destinations, the values that give the same plan
again; the command line is rendered from the parser's own flags (trnspec.cli.plan_deploy), so no
flag list is kept twice. A served acceptance is replayed as its length and window k, a tune
report by its path.
"""

from __future__ import annotations

from dataclasses import dataclass

from trnspec.boundary.problems import ABSENT, Problem
from trnspec.config.serving import ConfigError, ServingConfig
from trnspec.plan.acceptance import acceptance_rate
from trnspec.plan.measured import MeasuredEvidence
from trnspec.plan.pools import DeploymentConfig
from trnspec.plan.predict import DEFAULT_BATCHES

#: A flag's destination and the value that gives it again (a float is rendered with `:g`).
Replayed = tuple[tuple[str, object], ...]


@dataclass(frozen=True)
class Acceptance:
    """The per-token acceptance rate a plan is made for, where it came from, and the flags'
    values that give it again."""

    rate: float
    source: str
    replay: Replayed = ()


#: No candidate speculates and no acceptance was given: none is needed.
NO_ACCEPTANCE = Acceptance(0.0, "no candidate speculates")


def given_acceptance(
    rate: float | None, length: float | None, k: int | None, default_k: int
) -> Acceptance:
    """--acceptance-rate A, or --acceptance-length TAU at --acceptance-k K (default: the first
    speculative candidate's k); ConfigError naming --acceptance-rate when neither is given."""
    at_k = k or default_k
    alpha = acceptance_rate(rate, length, at_k)
    if rate is not None:
        return Acceptance(rate, "--acceptance-rate", (("acceptance_rate", rate),))
    if alpha is not None and length is not None:
        replay: Replayed = (("acceptance_length", length), ("acceptance_k", k))
        return Acceptance(alpha, f"--acceptance-length {length} at k={at_k}", replay)
    raise ConfigError(
        [
            Problem(
                "--acceptance-rate",
                ABSENT,
                "give --acceptance-rate A, --acceptance-length TAU [--acceptance-k K],"
                " --tune-report FILE or --acceptance-from URL; acceptance depends on the workload",
            )
        ]
    )


@dataclass(frozen=True)
class PoolsGiven:
    """A deployment config (--config) after its --set overrides, and what a plan reads of it."""

    path: str
    overrides: tuple[str, ...]
    deployment: DeploymentConfig


@dataclass(frozen=True)
class PlanRequest:
    """One plan-deploy question (each field is the flag of the same name, read and checked)."""

    #: The candidate profiles, in the order given (--profile, repeated).
    profile: tuple[ServingConfig, ...]
    acceptance: Acceptance
    #: TPOT p50 target (ms) and the concurrent streams expected at peak.
    tpot_ms: float
    peak_streams: int
    #: Replicas kept at no load.
    min_replicas: int = 1
    #: Candidate batches (None: DEFAULT_BATCHES).
    max_num_seqs: tuple[int, ...] | None = None
    #: USD per instance hour (None: the price table).
    price_per_hour: float | None = None
    input_len: int = 512
    output_len: int = 256
    #: Measured rows: the refit and the vetoes of speculation measured slower than plain.
    measured: MeasuredEvidence | None = None
    #: A deployment config: plan for its pools only.
    config: PoolsGiven | None = None
    #: TTFT target the ramp's queueing is checked against.
    ttft_ms: float | None = None
    #: Scale-up policy instead of the deployed one's, and the pod start counted in the ramp.
    scale_up_pods: int | None = None
    scale_up_period_s: int | None = None
    pod_start_minutes: float | None = None

    @property
    def batches(self) -> tuple[int, ...]:
        return self.max_num_seqs if self.max_num_seqs is not None else DEFAULT_BATCHES

    @property
    def deployment(self) -> DeploymentConfig | None:
        return self.config.deployment if self.config is not None else None

    def replay(self) -> dict[str, object]:
        """Flag destination -> the value that gives this plan again (None: not given)."""
        config = self.config
        return {
            "profile": [cfg.name for cfg in self.profile],
            **dict(self.acceptance.replay),
            "tpot_ms": self.tpot_ms,
            "peak_streams": self.peak_streams,
            "min_replicas": self.min_replicas,
            "max_num_seqs": (
                ",".join(map(str, self.max_num_seqs)) if self.max_num_seqs is not None else None
            ),
            "price_per_hour": self.price_per_hour,
            "input_len": self.input_len,
            "output_len": self.output_len,
            "measured": self.measured.source if self.measured is not None else None,
            "config": config.path if config is not None else None,
            "overrides": list(config.overrides) if config is not None else [],
            "ttft_ms": self.ttft_ms,
            "scale_up_pods": self.scale_up_pods,
            "scale_up_period_s": self.scale_up_period_s,
            "pod_start_minutes": self.pod_start_minutes,
        }
