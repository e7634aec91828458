"""The typed result of one measured run (run.run_level), and how it is written.

Every figure of a run is a typed field here; `to_json()` gives exactly the keys bench.py and
tune.py have always written (the files' schema, pinned by tests), in the same order. Blocks that a
run may lack are None (a latency block of an empty sample has None percentiles and count 0, never
a made-up zero). `from_json(obj, where)` is its exact inverse for a written file read back (tune
--from-json, the reports): every field checked where it enters (json_fields.Fields), a missing
key, a wrong type or a figure out of its range refused in one line naming the field's path.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from trnspec_tools.ab.comparison import ArmRound
from trnspec_tools.bench.json_fields import Fields

PERCENTILES = (50, 90, 99)
#: The latency blocks of a run, as written.
LATENCY_KEYS = ("ttft_ms", "itl_ms", "tpot_ms", "e2e_ms")


@dataclass(frozen=True)
class Latency:
    """p50/p90/p99/mean of a latency sample, milliseconds (None for an empty sample)."""

    p50: float | None
    p90: float | None
    p99: float | None
    mean: float | None
    count: int

    @classmethod
    def of_seconds(cls, values_s: Iterable[float]) -> Latency:
        """Percentiles by linear interpolation (numpy's default, what `vllm bench serve` uses)."""
        arr = np.asarray(list(values_s), dtype=float) * 1000.0
        if arr.size == 0:
            return cls(None, None, None, None, 0)
        p50, p90, p99 = (float(np.percentile(arr, p)) for p in PERCENTILES)
        return cls(p50, p90, p99, float(arr.mean()), int(arr.size))

    @classmethod
    def from_json(cls, obj: object, where: str) -> Latency:
        f = Fields(obj, where)
        p50, p90, p99, mean = (f.opt_number(key, 0) for key in ("p50", "p90", "p99", "mean"))
        return cls(p50, p90, p99, mean, f.count("count"))

    def to_json(self) -> dict[str, float | None]:
        return {"p50": self.p50, "p90": self.p90, "p99": self.p99, "mean": self.mean,
                "count": self.count}  # fmt: skip


@dataclass(frozen=True)
class Goodput:
    """Requests meeting every latency objective set (stats.Slo), in ms."""

    ttft_ms: float | None
    tpot_ms: float | None
    e2e_ms: float | None
    good_requests: int
    requests_per_s: float
    fraction: float | None

    @classmethod
    def from_json(cls, obj: object, where: str) -> Goodput:
        f = Fields(obj, where)
        slo = f.sub("slo")
        return cls(
            ttft_ms=slo.opt_number("ttft_ms", 0),
            tpot_ms=slo.opt_number("tpot_ms", 0),
            e2e_ms=slo.opt_number("e2e_ms", 0),
            good_requests=f.count("good_requests"),
            requests_per_s=f.number("requests_per_s", 0),
            fraction=f.opt_number("fraction", 0, 1),
        )

    def to_json(self) -> dict[str, object]:
        return {
            "slo": {"ttft_ms": self.ttft_ms, "tpot_ms": self.tpot_ms, "e2e_ms": self.e2e_ms},
            "good_requests": self.good_requests,
            "requests_per_s": self.requests_per_s,
            "fraction": self.fraction,
        }


@dataclass(frozen=True)
class RequestFigures:
    """What the measured requests alone show (stats.aggregate)."""

    num_requests: int
    completed: int
    duration_s: float
    ttft_ms: Latency
    itl_ms: Latency
    tpot_ms: Latency
    e2e_ms: Latency
    output_tokens: int
    output_tokens_per_s: float
    requests_per_s: float
    #: error kind -> count, plus "total"
    errors: Mapping[str, int]
    retries: int
    usage_reported: bool
    tool_overhead_us_per_chunk: float | None
    tokens_per_step_estimate: float | None
    #: None when no objective was set (then the key is not written)
    goodput: Goodput | None = None

    @property
    def error_total(self) -> int:
        return self.errors.get("total", 0)

    @classmethod
    def from_json(cls, obj: object, where: str) -> RequestFigures:
        f = Fields(obj, where)
        latency = {key: Latency.from_json(f.raw(key), f.path(key)) for key in LATENCY_KEYS}
        return cls(
            num_requests=f.count("num_requests"),
            completed=f.count("completed"),
            duration_s=f.number("duration_s", 0),
            **latency,
            output_tokens=f.count("output_tokens"),
            output_tokens_per_s=f.number("output_tokens_per_s", 0),
            requests_per_s=f.number("requests_per_s", 0),
            errors=f.count_map("errors"),
            retries=f.count("retries"),
            usage_reported=f.flag("usage_reported"),
            tool_overhead_us_per_chunk=f.opt_number("tool_overhead_us_per_chunk", 0),
            tokens_per_step_estimate=f.opt_number("tokens_per_step_estimate", 0),
            goodput=Goodput.from_json(f.obj["goodput"], f.path("goodput"))
            if f.has("goodput")
            else None,
        )

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "num_requests": self.num_requests,
            "completed": self.completed,
            "duration_s": self.duration_s,
            "ttft_ms": self.ttft_ms.to_json(),
            "itl_ms": self.itl_ms.to_json(),
            "tpot_ms": self.tpot_ms.to_json(),
            "e2e_ms": self.e2e_ms.to_json(),
            "output_tokens": self.output_tokens,
            "output_tokens_per_s": self.output_tokens_per_s,
            "requests_per_s": self.requests_per_s,
            "errors": dict(self.errors),
            "retries": self.retries,
            "usage_reported": self.usage_reported,
            "tool_overhead_us_per_chunk": self.tool_overhead_us_per_chunk,
            "tokens_per_step_estimate": self.tokens_per_step_estimate,
        }
        if self.goodput is not None:
            out["goodput"] = self.goodput.to_json()
        return out


@dataclass(frozen=True)
class SpecDecodeDeltas:
    """The spec-decode counter deltas over the measured window."""

    num_drafts: int
    num_draft_tokens: int
    num_accepted_tokens: int
    accepted_per_position: tuple[int, ...]

    @classmethod
    def from_json(cls, obj: object, where: str) -> SpecDecodeDeltas:
        f = Fields(obj, where)
        return cls(
            num_drafts=f.count("num_drafts"),
            num_draft_tokens=f.count("num_draft_tokens"),
            num_accepted_tokens=f.count("num_accepted_tokens"),
            accepted_per_position=f.counts("accepted_per_position"),
        )

    def to_json(self) -> dict[str, object]:
        return {
            "num_drafts": self.num_drafts,
            "num_draft_tokens": self.num_draft_tokens,
            "num_accepted_tokens": self.num_accepted_tokens,
            "accepted_per_position": list(self.accepted_per_position),
        }


@dataclass(frozen=True)
class AcceptanceFigures:
    """Acceptance over the measured window (run.spec_decode_fields); every figure None
    when it could not be measured, with `acceptance_note` saying why."""

    acceptance_rate: float | None = None
    mean_accepted_length: float | None = None
    acceptance_per_position: tuple[float, ...] | None = None
    #: "server-metrics" or "estimate-from-chunks"
    acceptance_source: str | None = None
    acceptance_note: str | None = None
    spec_decode_deltas: SpecDecodeDeltas | None = None
    k_used: float | None = None

    @classmethod
    def from_json(cls, obj: object, where: str) -> AcceptanceFigures:
        f = Fields(obj, where)
        deltas = f.raw("spec_decode_deltas")
        return cls(
            acceptance_rate=f.opt_number("acceptance_rate", 0, 1),
            mean_accepted_length=f.opt_number("mean_accepted_length", 0),
            acceptance_per_position=f.numbers("acceptance_per_position", 0, 1),
            acceptance_source=f.opt_text("acceptance_source"),
            acceptance_note=f.opt_text("acceptance_note"),
            spec_decode_deltas=None
            if deltas is None
            else SpecDecodeDeltas.from_json(deltas, f.path("spec_decode_deltas")),
            k_used=f.opt_number("k_used", 0),
        )

    def to_json(self) -> dict[str, object]:
        per_pos = self.acceptance_per_position
        deltas = self.spec_decode_deltas
        return {
            "acceptance_rate": self.acceptance_rate,
            "mean_accepted_length": self.mean_accepted_length,
            "acceptance_per_position": None if per_pos is None else list(per_pos),
            "acceptance_source": self.acceptance_source,
            "acceptance_note": self.acceptance_note,
            "spec_decode_deltas": None if deltas is None else deltas.to_json(),
            "k_used": self.k_used,
        }


@dataclass(frozen=True)
class RunResult:
    """One run at one concurrency level against one endpoint."""

    requests: RequestFigures
    acceptance: AcceptanceFigures
    cost_per_1m_output_tokens_usd: float | None
    #: the tool's own CPU over the measured window (it competes with a server on the same host)
    tool_cpu_fraction_of_one_core: float | None
    tool_cpu_us_per_output_token: float | None
    concurrency: int
    #: Poisson arrivals per second; None for a closed loop
    request_rate: float | None

    @property
    def output_tokens_per_s(self) -> float:
        return self.requests.output_tokens_per_s

    @property
    def k_used(self) -> float | None:
        return self.acceptance.k_used

    def as_round(self, round_index: int) -> ArmRound:
        """This run as round `round_index` of an A/B comparison (trnspec_tools.ab)."""
        req = self.requests
        return ArmRound.of_run(
            round_index,
            req.output_tokens_per_s,
            req.output_tokens,
            req.completed,
            req.num_requests,
            req.error_total,
            self.acceptance.mean_accepted_length,
        )

    @classmethod
    def from_json(cls, obj: object, where: str) -> RunResult:
        """A run as bench.py and tune.py wrote it (the inverse of to_json; other keys ignored),
        or BoundaryError naming the field's path under `where`."""
        f = Fields(obj, where)
        return cls(
            requests=RequestFigures.from_json(obj, where),
            acceptance=AcceptanceFigures.from_json(obj, where),
            cost_per_1m_output_tokens_usd=f.opt_number("cost_per_1m_output_tokens_usd", 0),
            tool_cpu_fraction_of_one_core=f.opt_number("tool_cpu_fraction_of_one_core", 0),
            tool_cpu_us_per_output_token=f.opt_number("tool_cpu_us_per_output_token", 0),
            concurrency=f.count("concurrency", 1),
            request_rate=f.opt_number("request_rate", 0, lo_open=True),
        )

    def to_json(self) -> dict[str, object]:
        """The run as bench.py and tune.py write it (the keys and their order of the files)."""
        return {
            **self.requests.to_json(),
            **self.acceptance.to_json(),
            "cost_per_1m_output_tokens_usd": self.cost_per_1m_output_tokens_usd,
            "tool_cpu_fraction_of_one_core": self.tool_cpu_fraction_of_one_core,
            "tool_cpu_us_per_output_token": self.tool_cpu_us_per_output_token,
            "concurrency": self.concurrency,
            "request_rate": self.request_rate,
        }


@dataclass(frozen=True)
class ArmRun:
    """A run of one arm of a comparison ("target" or "baseline"), with the model's prediction
    next to it when bench has a --profile (versus_predicted.predict_run, JSON-ready)."""

    arm: str
    endpoint: str
    model: str
    result: RunResult
    prediction: Mapping[str, object] | None = None

    @property
    def concurrency(self) -> int:
        return self.result.concurrency

    @property
    def output_tokens_per_s(self) -> float:
        return self.result.output_tokens_per_s

    @classmethod
    def from_json(cls, obj: object, where: str) -> ArmRun:
        """An entry of "runs" as written (the inverse of to_json), or BoundaryError."""
        f = Fields(obj, where)
        prediction = f.obj.get("prediction")
        return cls(
            arm=f.text("arm"),
            endpoint=f.text("endpoint"),
            model=f.text("model"),
            result=RunResult.from_json(obj, where),
            prediction=None if prediction is None else dict(f.sub("prediction").obj),
        )

    def to_json(self) -> dict[str, object]:
        """The run as an entry of bench.py's "runs" (arm, endpoint, model, every figure, then
        the prediction when there is one)."""
        out: dict[str, object] = {
            "arm": self.arm,
            "endpoint": self.endpoint,
            "model": self.model,
            **self.result.to_json(),
        }
        if self.prediction is not None:
            out["prediction"] = dict(self.prediction)
        return out
