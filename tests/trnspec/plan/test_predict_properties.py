"""`predict`'s report on any query a speculative Trn2 profile accepts: every row is the model's
figure as printed (each to its digits, no more), a rate derived from an acceptance length gives
that length back, and the context is the prompt plus half the output."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from trnspec.config.serving import load_profile
from trnspec.hardware.packing import placement_for
from trnspec.hardware.pricing import cost_per_1m_output_tokens
from trnspec.perf.profile_model import profile_model
from trnspec.perf.step_time import decode_context_tokens, tokens_per_step
from trnspec.plan.predict import PredictQuery, build

SETTINGS = settings(max_examples=40, deadline=None)
SPECULATIVE = ["llama31-8b-eagle3", "qwen3-4b-dflash", "qwen3-32b-draft"]
#: Digits after the point each figure of a row is printed with.
DIGITS = {
    "tpot_ms": 3,
    "output_tokens_per_s": 2,
    "speedup": 3,
    "cost_per_1m_output_tokens_usd": 4,
    "tokens_per_step": 3,
    "step_ms": 3,
    "draft_ms": 3,
    "error_band": 3,
}


def _as_printed(value: float, exact: float, digits: int) -> bool:
    """`value` is `exact` to `digits` places: within half a unit of the last one, none beyond."""
    unit = 10.0**-digits
    return round(value, digits) == value and abs(value - exact) <= unit / 2 + 1e-9 * abs(exact)


def _text(values: list[int]) -> str:
    return ",".join(map(str, values))


@SETTINGS
@given(
    profile=st.sampled_from(SPECULATIVE),
    alpha=st.floats(0.0, 1.0),
    ks=st.lists(st.integers(0, 7), min_size=1, max_size=3, unique=True),
    batches=st.lists(st.integers(1, 64), min_size=1, max_size=3, unique=True),
)
def test_every_row_is_the_models_figure_to_its_printed_digits(profile, alpha, ks, batches):
    cfg = load_profile(profile)
    report = build(PredictQuery(acceptance_rate=alpha, k=_text(ks), batch=_text(batches)), cfg)
    points = profile_model(cfg, decode_context_tokens(512, 256)).grid(
        alpha, sorted(ks), sorted(batches)
    )
    placement = placement_for(cfg)
    assert placement is not None
    price = report.inputs["price_per_hour_usd"].value
    replicas = placement.packing.replicas
    assert len(report.rows) == len(points)
    for row, p in zip(report.rows, points, strict=True):
        assert (row.batch, row.k, row.target_bound) == (p.batch, p.k, p.step.target.bound)
        exact = {
            "tpot_ms": p.tpot_s * 1e3,
            "output_tokens_per_s": p.output_tokens_per_s,
            "speedup": p.speedup,
            "cost_per_1m_output_tokens_usd": cost_per_1m_output_tokens(
                price, p.output_tokens_per_s * replicas
            ),
            "tokens_per_step": p.tokens_per_step,
            "step_ms": p.step.total_s * 1e3,
            "draft_ms": p.step.draft_s * 1e3,
        }
        for name, value in exact.items():
            assert _as_printed(getattr(row, name), value, DIGITS[name]), (name, row)
        band = row.error_band
        assert band is None or (band >= 0 and round(band, DIGITS["error_band"]) == band)
        assert (row.draft_ms == 0) == (row.k == 0)


@SETTINGS
@given(k=st.integers(1, 7), share=st.floats(0.0, 1.0))
def test_a_rate_read_from_an_acceptance_length_gives_that_length_back(k, share):
    """tau tokens per step at window k: the listed rate (6 decimals) makes tau again."""
    tau = 1.0 + share * k
    cfg = load_profile("llama31-8b-eagle3")
    report = build(PredictQuery(acceptance_length=tau, acceptance_k=k, batch="1", k="0"), cfg)
    listed = report.inputs["acceptance_rate"]
    assert round(listed.value, 6) == listed.value
    # the rate is rounded to 1e-6; tokens per step moves at most k(k+1)/2 per unit of rate
    assert tokens_per_step(listed.value, k) == pytest.approx(tau, abs=k * (k + 1) / 2 * 6e-7)
    assert f"k={k}" in listed.source


@SETTINGS
@given(input_len=st.integers(1, 3000), output_len=st.integers(1, 1000))
def test_the_context_is_the_prompt_plus_half_the_output(input_len, output_len):
    cfg = load_profile("llama31-8b-eagle3")
    query = PredictQuery(
        acceptance_rate=0.7, batch="1", k="0", input_len=input_len, output_len=output_len
    )
    context = build(query, cfg).inputs["context_tokens"]
    assert context.value == input_len + output_len // 2
    assert context.source == f"--input-len {input_len} + half of --output-len {output_len}"
