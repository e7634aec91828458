"""One alternated round of `tune --schedule` (and `make demo`'s sweep), typed.

A round measures the plain server and a candidate back to back (ABBA order); `RoundPair` holds
both runs and their ratio, `RoundRun` the figures of one run the schedule JSON keeps (RUN_FIELDS
and the error total, not bench's whole run). `to_json()` writes exactly the keys the schedule and
demo files have always held; `from_json(obj, where)` is its checked inverse (tune --schedule
--from-json), refusing a missing key or a figure out of range in one line naming its path.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from trnspec.boundary.errors import BoundaryError

from trnspec_tools.ab.comparison import ArmRound, round_speedup
from trnspec_tools.bench.json_fields import Fields
from trnspec_tools.bench.run_result import AcceptanceFigures, RequestFigures, RunResult

#: The figures kept from each measured run, in the order written (then "errors", the total).
RUN_FIELDS = (
    "output_tokens_per_s",
    "output_tokens",
    "duration_s",
    "k_used",
    "mean_accepted_length",
    "completed",
    "num_requests",
    "acceptance_source",
    "acceptance_rate",
    "acceptance_per_position",
    "acceptance_note",
    "spec_decode_deltas",
)
#: The request figures among them (RequestFigures' names; the rest is acceptance).
KEPT_REQUEST_FIGURES = tuple(
    name for name in RUN_FIELDS if name in {f.name for f in fields(RequestFigures)}
)
#: Which arm of a round ran first.
ORDERS = ("plain-first", "candidate-first")


@dataclass(frozen=True)
class RoundRun:
    """The figures of one measured run a round keeps."""

    output_tokens_per_s: float
    output_tokens: int
    duration_s: float
    completed: int
    num_requests: int
    #: failed requests (the run's error total)
    errors: int
    acceptance: AcceptanceFigures

    @classmethod
    def of(cls, run: RunResult) -> RoundRun:
        kept = {name: getattr(run.requests, name) for name in KEPT_REQUEST_FIGURES}
        return cls(**kept, errors=run.requests.error_total, acceptance=run.acceptance)

    @property
    def k_used(self) -> float | None:
        return self.acceptance.k_used

    def as_round(self, round_index: int) -> ArmRound:
        """This run as round `round_index` of an A/B comparison (trnspec_tools.ab)."""
        return ArmRound.of_run(
            round_index,
            self.output_tokens_per_s,
            self.output_tokens,
            self.completed,
            self.num_requests,
            self.errors,
            self.acceptance.mean_accepted_length,
        )

    def to_json(self) -> dict[str, object]:
        figures = {
            "output_tokens_per_s": self.output_tokens_per_s,
            "output_tokens": self.output_tokens,
            "duration_s": self.duration_s,
            "completed": self.completed,
            "num_requests": self.num_requests,
            **self.acceptance.to_json(),
        }
        return {**{key: figures[key] for key in RUN_FIELDS}, "errors": self.errors}

    @classmethod
    def from_json(cls, obj: object, where: str) -> RoundRun:
        f = Fields(obj, where)
        return cls(
            output_tokens_per_s=f.number("output_tokens_per_s", 0),
            output_tokens=f.count("output_tokens"),
            duration_s=f.number("duration_s", 0),
            completed=f.count("completed"),
            num_requests=f.count("num_requests"),
            errors=f.count("errors"),
            acceptance=AcceptanceFigures.from_json(obj, where),
        )


@dataclass(frozen=True)
class RoundPair:
    """One round: both runs, which ran first, and the candidate's ratio to plain (None when
    either run does not count by the A/B core's rule: trnspec_tools.ab.comparison)."""

    order: str
    ratio: float | None
    plain: RoundRun
    candidate: RoundRun

    @classmethod
    def measured(cls, plain_first: bool, plain: RoundRun, candidate: RoundRun) -> RoundPair:
        return cls(
            order=ORDERS[0] if plain_first else ORDERS[1],
            ratio=round_speedup(plain.as_round(0), candidate.as_round(0)),
            plain=plain,
            candidate=candidate,
        )

    def to_json(self) -> dict[str, object]:
        return {
            "order": self.order,
            "ratio": self.ratio,
            "plain": self.plain.to_json(),
            "candidate": self.candidate.to_json(),
        }

    @classmethod
    def from_json(cls, obj: object, where: str) -> RoundPair:
        f = Fields(obj, where)
        order = f.text("order")
        if order not in ORDERS:
            raise BoundaryError(f.path("order"), order, f"must be one of {', '.join(ORDERS)}")
        return cls(
            order=order,
            ratio=f.opt_number("ratio", 0),
            plain=RoundRun.from_json(*f.item("plain")),
            candidate=RoundRun.from_json(*f.item("candidate")),
        )
