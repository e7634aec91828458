"""`predict` at TP 4 for a 3B, an 8B and a 14B target, at batch 1 and 8, at short and 32K
context: every figure names each axis the published rows do not cover (TP 4 for the plain
plugin, model size for 14B on this stack, batch 8, 32K context below TP 64) and carries the band
of figures from unseen sources that extrapolated as far, or is unknown where too few did,
instead of pretending a band covers it."""

from __future__ import annotations

import pytest
from trnspec.config.serving import load_profile
from trnspec.perf.trn2_fit import trn2_calibration
from trnspec.plan.predict import PredictQuery, build

BASE = load_profile("qwen3-4b-baseline")  # plain, plugin, TP 4
CAL = trn2_calibration()


def _config(target: str):  # type: ignore[no-untyped-def]
    target_ref = BASE.target.model_copy(update={"name": target, "source": target})
    return BASE.model_copy(update={"target": target_ref, "max_model_len": 40960})


@pytest.mark.parametrize(
    ("target", "in_data_size"),
    [
        ("meta-llama/Llama-3.2-3B-Instruct", True),
        ("Qwen/Qwen3-8B", True),
        ("Qwen/Qwen3-14B", False),  # 14.8 B read per step: no plugin row of 10-40 B
    ],
)
@pytest.mark.parametrize("input_len", [512, 32_000])
def test_each_figure_is_banded_by_its_own_regime(
    target: str, in_data_size: bool, input_len: int
) -> None:
    report = build(PredictQuery(batch="1,8", k="0", input_len=input_len), _config(target))
    by_batch = {row.batch: row for row in report.rows}
    assert set(by_batch) == {1, 8}
    for batch, row in by_batch.items():
        note = row.error_band_note
        assert "plugin, none" in note
        outside = note.split("outside the data in", 1)[1]
        assert "tensor parallel size" in outside  # no plain plugin row at TP 4
        assert ("batch" in outside) == (batch == 8)
        assert ("context" in outside) == (input_len == 32_000)
        assert ("model size" in outside) == (not in_data_size)
        depth = 1 + (batch == 8) + (input_len == 32_000) + (not in_data_size)
        # the band is made of plain figures whose own fold was as far out: known only where at
        # least 4 such held-out errors exist (every stack's, the plugin's own being too few)
        as_far = [
            h
            for h in CAL.validation
            if h.method == "none" and h.error is not None and h.depth >= depth
        ]
        assert (row.error_band is not None) == (len(as_far) >= 4), (batch, depth, note)
        assert note.startswith("+/-" if row.error_band is not None else "unknown")
        assert (row.error_band_held is None) == (row.error_band is None)
    # one axis out (TP only) the data has such folds; three or more axes out it has none
    if in_data_size and input_len == 512:
        assert by_batch[1].error_band is not None
    if not in_data_size and input_len == 32_000:
        assert by_batch[8].error_band is None


def test_a_longer_context_and_a_bigger_model_cost_more_per_token() -> None:
    def tpot(target: str, input_len: int) -> float:
        report = build(PredictQuery(batch="8", k="0", input_len=input_len), _config(target))
        (row,) = report.rows
        return row.tpot_ms

    assert tpot("Qwen/Qwen3-8B", 32_000) > tpot("Qwen/Qwen3-8B", 512)
    assert tpot("Qwen/Qwen3-14B", 512) > tpot("Qwen/Qwen3-8B", 512)
