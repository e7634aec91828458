"""A decode-step performance model for speculative decoding: time, tokens and cost per step.

Pure arithmetic, no I/O. One decode step of a replica verifies `batch x (k + 1)` tokens on the
target, after the draft proposed `k` tokens per sequence. The step's time is

    step = overhead + target pass + draft passes
    pass = max(bytes read / (HBM bandwidth x memory efficiency),
               FLOPs / (peak compute x compute efficiency)) + collectives

* bytes read: the model's weights (all shards of the TP group together) plus the KV cache of
  `batch` sequences at the mean context; the group's bandwidth is its share of the chips' HBM.
* FLOPs: 2 x weights x tokens for the matmuls, plus attention over the context
  (4 x layers x heads x head_dim x context per token).
* collectives: two all-reduces per layer (attention output, MLP output) at that TP degree, each a
  latency per ring hop (log2 TP, the depth of a tree/recursive-halving reduction) plus the bytes
  of `tokens x hidden` over the link bandwidth (ring cost 2 (TP - 1) / TP).
* context: an attention cost per cached token, layer and sequence beyond the KV bytes read, and a
  cost per (positions in the pass)^2 x vocabulary entry (both fitted to published steps that no
  byte or FLOP count explains: see docs/performance.md).
* host share: a per-step cost that grows as the replica's share of the host's vCPUs shrinks
  (`host_share_s x 12 / vCPUs per replica`: a trn2.3xlarge, or one of 16 replicas on a
  trn2.48xlarge, has 12; a lone replica on a trn2.48xlarge 192), fitted on synchronous rows.
  A synchronous step pays it before the device step; an asynchronous one (the plugin's default
  scheduling "overlaps CPU work (scheduling, input preparation, output processing) with Neuron
  device execution", vllm-neuron features guide) takes the longer of the two.
* overhead: a fixed per-step cost (host scheduling, graph launch) that dominates small models
  (measured Trn2 decode reaches only about 11-46 % of the HBM roofline without it), a host cost
  per sequence per step (output processing, detokenization, streaming: paid once per step
  however many tokens the step emits, so speculation amortises it), plus a cost per position
  that gets logits (logit handling, sampling, rejection), which is what grows with
  tokens while the matmuls are still hidden under the weight reads.

The draft's cost depends on its method (the `method` string of the serving config):

* ``draft_model``: `k` sequential passes of a separate draft model at the same TP, batch tokens
  each (the Neuron fork's fused speculation runs the draft at the target's TP).
* ``eagle3``: `k` sequential passes of one decoder layer plus its LM head (the EAGLE3 head).
* ``dflash``: one parallel pass of the block-diffusion drafter over `batch x (k + 1)` positions.

Decode at small batch is bandwidth-bound, so verifying `k + 1` tokens costs about as much as one;
as `batch x (k + 1)` grows the compute term overtakes the memory term and speculation stops
paying. Tokens per step follow Leviathan et al. (2023): `(1 - a^(k+1)) / (1 - a)` for a
per-token acceptance rate `a`, or a mean accepted length given directly.

The free constants (efficiencies, overheads, collective latency) are fitted to published Trn2
figures by `trnspec.perf.trn2_fit`; the hardware peaks come from the Trainium2 architecture pages.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields, replace

from trnspec.boundary.errors import BoundaryError
from trnspec.boundary.problems import ABSENT
from trnspec.hardware.drafters import drafter_for
from trnspec.hardware.model_shapes import ModelShape
from trnspec.hardware.topology import PHYSICAL_CORES_PER_CHIP

#: Speculation methods the model knows how to cost ("none" is plain decoding).
DRAFT_METHODS = ("draft_model", "eagle3", "dflash")


class ModelInputError(BoundaryError):
    """An input the model cannot use: one problem naming the field, the value and the fix."""


@dataclass(frozen=True)
class Hardware:
    """Peak rates of one accelerator chip (or one CPU socket) and how a TP group shares them."""

    name: str
    #: HBM (or DRAM) bandwidth of one chip, bytes/s.
    memory_bytes_per_s: float
    #: Dense peak compute of one chip at the serving dtype, FLOP/s.
    peak_flops: float
    #: Collective link bandwidth of one chip, bytes/s.
    link_bytes_per_s: float
    #: Logical cores of one chip at LNC=1 (physical cores); the unit a TP rank occupies.
    cores_per_chip: int
    source: str

    def group_share(self, tensor_parallel_size: int, lnc: int) -> float:
        """Chips' worth of HBM and compute a TP group uses (a rank is `lnc` physical cores)."""
        return tensor_parallel_size * lnc / self.cores_per_chip


#: Trainium2, per chip (aws-neuron-sdk about-neuron/arch/neuron-hardware/trainium2.rst and
#: trn2-arch.rst: 96 GiB HBM at 2.9 TB/s, 667 dense BF16 TFLOPS, 8 NeuronCore-v3,
#: NeuronLink-v3 1.28 TB/s per chip, 1,024 GB/s chip-to-chip within the instance).
TRN2 = Hardware(
    name="trn2",
    memory_bytes_per_s=2.9e12,
    peak_flops=667e12,
    link_bytes_per_s=1.024e12,
    cores_per_chip=PHYSICAL_CORES_PER_CHIP,
    source="per chip: 667 dense BF16 TFLOPS, 8 NeuronCore-v3"
    " (awsdocs-neuron.readthedocs-hosted.com/en/v2.29.0/_sources/about-neuron/arch/"
    "neuron-hardware/trainium2.rst); 96 GiB HBM at 2.9 TB/s"
    " (awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/arch/trainium2_arch.html);"
    " 1,024 GB/s NeuronLink within the instance (aws-neuron-sdk trn2-arch.rst)",
)


@dataclass(frozen=True)
class Efficiency:
    """The free constants of the model, fitted to measurements (see trnspec.perf.trn2_fit)."""

    #: Fraction of the HBM bandwidth a decode pass achieves.
    memory: float
    #: Fraction of the peak compute a verification pass achieves.
    compute: float
    #: Fixed cost of one decode step (host scheduling, sampling, graph launch), seconds.
    step_overhead_s: float
    #: Latency of one all-reduce hop, seconds (an all-reduce at TP t pays ceil(log2 t) hops).
    collective_latency_s: float
    #: Fixed cost of each sequential draft pass, seconds (0 where the draft is fused into the
    #: target's graph; the local CPU engine launches each draft pass from Python).
    draft_pass_overhead_s: float = 0.0
    #: Fixed cost of a step with speculation on, whatever k (rejection sampling, draft
    #: bookkeeping), seconds. Published Trn2 baselines (k = 0) cannot pin it: 0 there.
    spec_overhead_s: float = 0.0
    #: Host cost of each sequence in a step (output processing, detokenization, streaming),
    #: seconds; paid once per sequence per step however many tokens the step emits for it.
    sequence_overhead_s: float = 0.0
    #: Cost of each position a pass computes logits for (LM head output handling, sampling,
    #: rejection), seconds; what grows with tokens below the compute roofline.
    token_overhead_s: float = 0.0
    #: Attention cost of one cached token in one layer for one sequence, seconds: the decode
    #: attention kernel's time beyond the KV bytes it reads (published TP-64 steps grow with
    #: layers x context far faster than their KV bytes explain).
    context_token_s: float = 0.0
    #: Cost per (positions in the pass)^2 x vocabulary entry, seconds: published verification
    #: steps with many positions (DFlash blocks at concurrency 4) grow with the square of the
    #: positions times the vocabulary, which no FLOP or byte count of the pass explains.
    logit_pair_s: float = 0.0
    #: Host cost of one step for a replica with REFERENCE_VCPUS host vCPUs, seconds; a replica
    #: with v vCPUs pays `host_share_s x REFERENCE_VCPUS / v` (host work contending for cores).
    host_share_s: float = 0.0
    #: The stack overlaps host work with the device step (async scheduling): the step then takes
    #: the longer of the host share and the rest, not their sum.
    overlaps_host: bool = False

    def __post_init__(self) -> None:
        """`memory` and `compute` are fractions of a peak; every field named `*_s` is a cost in
        seconds (a field added later is checked by its name)."""
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in ("memory", "compute") and not 0 < value <= 1:
                raise ModelInputError(f"efficiency.{f.name}", value, "must lie in (0, 1]")
            if f.name.endswith("_s") and value < 0:
                raise ModelInputError(f"efficiency.{f.name}", value, "must be >= 0")


#: Host vCPUs of a trn2.3xlarge (one chip): the unit of the host-share term.
REFERENCE_VCPUS = 12


def decode_context_tokens(input_len: int, output_len: int) -> int:
    """Mean tokens in a sequence's KV cache over its decode: the prompt plus half the output."""
    return input_len + output_len // 2


@dataclass(frozen=True)
class Deployment:
    """Where and how the models run: the TP group, dtype and the workload's context."""

    hardware: Hardware
    tensor_parallel_size: int
    lnc: int
    #: Bytes per weight element of the target (2 for BF16, 1 for FP8 weights).
    weight_bytes: float
    #: Bytes per weight element of the draft.
    draft_weight_bytes: float
    #: Bytes per KV-cache element.
    kv_bytes: float
    #: Mean tokens held in each sequence's KV cache while decoding (prompt + half the output).
    context_tokens: int
    #: Host vCPUs per replica (the instance's vCPUs over the replicas it runs).
    vcpus_per_replica: float = 192.0

    def __post_init__(self) -> None:
        if self.tensor_parallel_size < 1:
            raise ModelInputError("tensor_parallel_size", self.tensor_parallel_size, "must be >= 1")
        if self.context_tokens < 0:
            raise ModelInputError("context_tokens", self.context_tokens, "must be >= 0")
        if not self.vcpus_per_replica > 0:
            raise ModelInputError("vcpus_per_replica", self.vcpus_per_replica, "must be > 0")


@dataclass(frozen=True)
class PassCost:
    """One forward pass split into its terms (seconds)."""

    memory_s: float
    compute_s: float
    collective_s: float
    token_s: float = 0.0
    #: Attention beyond the roofline (context_token_s) and the positions^2 x vocab term.
    context_s: float = 0.0
    pair_s: float = 0.0

    @property
    def total_s(self) -> float:
        return (
            max(self.memory_s, self.compute_s)
            + self.collective_s
            + self.token_s
            + self.context_s
            + self.pair_s
        )

    @property
    def bound(self) -> str:
        return "compute" if self.compute_s > self.memory_s else "memory"


def weight_elements_read(shape: ModelShape) -> int:
    """Weights one pass streams from HBM: all but an untied input embedding (only its rows for
    the batch's tokens are gathered, which is negligible)."""
    params = shape.params
    if shape.kind == "decoder" and not shape.tied_embeddings:
        params -= shape.vocab * shape.hidden
    return params


def pass_cost(
    shape: ModelShape,
    tokens: int,
    batch: int,
    dep: Deployment,
    eff: Efficiency,
    weight_bytes: float,
) -> PassCost:
    """One forward pass of `shape` over `tokens` positions for `batch` sequences."""
    if tokens < 1 or batch < 1:
        raise ModelInputError("tokens/batch", f"{tokens}/{batch}", "both must be >= 1")
    hw, tp = dep.hardware, dep.tensor_parallel_size
    share = hw.group_share(tp, dep.lnc)
    weights = weight_elements_read(shape)
    kv = batch * dep.context_tokens * shape.kv_bytes_per_token(1) * dep.kv_bytes
    memory_s = (weights * weight_bytes + kv) / (hw.memory_bytes_per_s * share * eff.memory)
    attention = 4 * shape.layers * shape.heads * shape.head_dim * dep.context_tokens
    flops = tokens * (2 * weights + attention)
    compute_s = flops / (hw.peak_flops * share * eff.compute)
    collective_s = 0.0
    if tp > 1:
        hops = math.ceil(math.log2(tp))
        message = tokens * shape.hidden * 2  # BF16 activations
        per_reduce = hops * eff.collective_latency_s + 2 * (tp - 1) / tp * message / (
            hw.link_bytes_per_s * max(share, 1.0)
        )
        collective_s = 2 * shape.layers * per_reduce
    context_s = batch * shape.layers * dep.context_tokens * eff.context_token_s
    pair_s = tokens * tokens * shape.vocab * eff.logit_pair_s
    return PassCost(
        memory_s, compute_s, collective_s, tokens * eff.token_overhead_s, context_s, pair_s
    )


@dataclass(frozen=True)
class StepCost:
    """One speculative decode step of a replica, with its parts (seconds)."""

    overhead_s: float
    target: PassCost
    draft_s: float
    #: The host share of the step (Efficiency.host_share_s scaled by the replica's vCPUs).
    host_s: float = 0.0
    #: Async scheduling: the host share runs beside the device step instead of before it.
    overlapped: bool = False

    @property
    def total_s(self) -> float:
        rest = self.overhead_s + self.target.total_s + self.draft_s
        return max(self.host_s, rest) if self.overlapped else self.host_s + rest


def draft_cost_s(
    method: str,
    draft: ModelShape | None,
    target: ModelShape,
    k: int,
    batch: int,
    dep: Deployment,
    eff: Efficiency,
) -> float:
    """Time the drafter spends proposing `k` tokens for each of `batch` sequences."""
    if k == 0:
        return 0.0
    if method not in DRAFT_METHODS:
        raise ModelInputError(
            "speculation.method", method, f"the model costs {', '.join(DRAFT_METHODS)} (or none)"
        )
    drafter = drafter_for(method, draft, target)
    if drafter is None:
        raise ModelInputError(
            "speculation.draft", ABSENT, "a draft_model method needs a draft shape"
        )
    if method == "dflash":  # one parallel pass over the block of k + 1 positions
        block = pass_cost(drafter, batch * (k + 1), batch, dep, eff, dep.draft_weight_bytes)
        return block.total_s + eff.draft_pass_overhead_s
    # a draft model, or EAGLE3's one layer plus head: k sequential passes
    one = pass_cost(drafter, batch, batch, dep, eff, dep.draft_weight_bytes)
    return k * (one.total_s + eff.draft_pass_overhead_s)


def step_cost(
    target: ModelShape,
    method: str,
    draft: ModelShape | None,
    k: int,
    batch: int,
    dep: Deployment,
    eff: Efficiency,
    verify_tokens: int | None = None,
) -> StepCost:
    """One decode step: overhead, the target verifying `batch x (k + 1)` tokens, the drafter.

    `verify_tokens` overrides the tokens per sequence the target verifies (a published
    "verify n tokens" timing with no drafter). `batch` is the live batch: a graph compiled for
    more sequences than are live is priced at the live batch (published padded runs are
    predicted best that way: docs/performance.md)."""
    if k < 0:
        raise ModelInputError("k", k, "the window must be >= 0")
    per_seq = verify_tokens if verify_tokens is not None else k + 1
    t = pass_cost(target, batch * per_seq, batch, dep, eff, dep.weight_bytes)
    speculating = method != "none" and k > 0
    d = draft_cost_s(method, draft, target, k, batch, dep, eff) if speculating else 0.0
    overhead = (
        eff.step_overhead_s
        + batch * eff.sequence_overhead_s
        + (eff.spec_overhead_s if speculating else 0.0)
    )
    host = eff.host_share_s * REFERENCE_VCPUS / dep.vcpus_per_replica
    return StepCost(overhead, t, d, host, eff.overlaps_host)


def tokens_per_step(alpha: float, k: int) -> float:
    """Mean tokens one verification step emits with i.i.d. acceptance `alpha` (Leviathan et al.)."""
    if k < 0:
        raise ModelInputError("k", k, "the window must be >= 0")
    if not 0.0 <= alpha <= 1.0:
        raise ModelInputError("acceptance rate", alpha, "must lie in [0, 1]")
    if math.isclose(alpha, 1.0, abs_tol=1e-12):
        return float(k + 1)
    return (1.0 - alpha ** (k + 1)) / (1.0 - alpha)


def alpha_from_tokens_per_step(tau: float, k: int) -> float:
    """The per-token acceptance rate whose geometric window of `k` gives `tau` tokens per step."""
    if k < 1:
        raise ModelInputError("k", k, "an acceptance length needs a window k >= 1 to mean anything")
    if not 1.0 <= tau <= k + 1:
        raise ModelInputError(
            "acceptance length", tau, f"must lie in [1, k + 1 = {k + 1}] for k={k}"
        )
    lo, hi = 0.0, 1.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if tokens_per_step(mid, k) < tau:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


@dataclass(frozen=True)
class Prediction:
    """What one (batch, k) point costs on one replica, and what it earns."""

    batch: int
    k: int
    tokens_per_step: float
    step: StepCost
    #: Speedup over k=0 at the same batch (filled by `predict_grid`).
    speedup: float = 1.0

    @property
    def tpot_s(self) -> float:
        return self.step.total_s / self.tokens_per_step

    @property
    def output_tokens_per_s(self) -> float:
        return self.batch * self.tokens_per_step / self.step.total_s


#: Mean tokens per step as a function of k: a per-token rate, or measured per-position rates.
TokensPerStep = Callable[[int], float]


def predict_point(
    target: ModelShape,
    method: str,
    draft: ModelShape | None,
    alpha: float | TokensPerStep,
    k: int,
    batch: int,
    dep: Deployment,
    eff: Efficiency,
) -> Prediction:
    """One (batch, k) point; k=0 is plain decoding whatever the method. `alpha` is a per-token
    acceptance rate, or a function k -> tokens per step (e.g. from per-position acceptance)."""
    if batch < 1:
        raise ModelInputError("--batch", batch, "a batch holds at least one sequence")
    step = step_cost(target, method, draft, k, batch, dep, eff)  # k=0: plain decoding
    tau = alpha(k) if callable(alpha) else tokens_per_step(alpha, k)
    return Prediction(batch, k, tau if k > 0 else 1.0, step)


def predict_grid(
    target: ModelShape,
    method: str,
    draft: ModelShape | None,
    alpha: float | TokensPerStep,
    ks: Sequence[int],
    batches: Sequence[int],
    dep: Deployment,
    eff: Efficiency,
    plain_eff: Efficiency | None = None,
) -> list[Prediction]:
    """Every (batch, k) point, with speedups against k=0 at the same batch.

    `plain_eff` prices k=0 when the plain server runs on another stack than the speculative one
    (a DFlash command schedules synchronously, the same model without speculation does not):
    k=0 is then the server a user would deploy instead, not the speculative command at k=0."""
    out: list[Prediction] = []
    for b in batches:
        base = predict_point(target, method, draft, alpha, 0, b, dep, plain_eff or eff)
        for k in ks:
            p = base if k == 0 else predict_point(target, method, draft, alpha, k, b, dep, eff)
            out.append(replace(p, speedup=p.output_tokens_per_s / base.output_tokens_per_s))
    return out


def best_k_per_batch(points: Sequence[Prediction]) -> dict[int, Prediction]:
    """The fastest k at each batch (ties go to the smaller k: fewer wasted drafts)."""
    best: dict[int, Prediction] = {}
    for p in sorted(points, key=lambda p: (p.batch, p.k)):
        cur = best.get(p.batch)
        if cur is None or p.output_tokens_per_s > cur.output_tokens_per_s * (1 + 1e-9):
            best[p.batch] = p
    return best


def speculation_stops_paying(points: Sequence[Prediction]) -> int | None:
    """The smallest batch at which no k > 0 beats plain decoding, or None if some k pays at every
    batch given (or no k > 0 was asked for). Speedup falls with batch, so every larger batch
    should be run without speculation."""
    if not any(p.k > 0 for p in points):
        return None
    for b, p in sorted(best_k_per_batch(points).items()):
        if p.k == 0:
            return b
    return None
