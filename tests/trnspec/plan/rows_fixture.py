"""A measured rows file as the calibration Job writes it (the `trnspec fit --add` format): plain
Qwen3-4B and Qwen3-4B DFlash at concurrency 1, the speculative arm at `ratio` of plain."""

from __future__ import annotations


def rows_text(ratio: float, tag: str = "my") -> str:
    plain_tps, spec_tps = 110.0, round(110.0 * ratio, 1)
    return f"""measurements:
  - id: {tag}-qwen3-4b-plain-c1
    role: baseline
    source: s3://bucket/calibration/20261202T000000Z/calibration.json (plain arm)
    quote: "calibration measured plain at concurrency 1: output_tokens_per_s {plain_tps}"
    date: "2026-12-02"
    stack: trnspec calibration against profile qwen3-4b-baseline
    stack_group: plugin
    target: Qwen3-4B
    instance: trn2.48xlarge
    tp: 4
    lnc: 2
    batch: 1
    input_len: 512
    output_len: 256
    weight_bytes: 2
    tpot_ms: {1000 / plain_tps:.2f}
    output_tokens_per_s: {plain_tps}
  - id: {tag}-qwen3-4b-dflash-c1
    role: speculative
    baseline: {tag}-qwen3-4b-plain-c1
    source: s3://bucket/calibration/20261202T000000Z/calibration.json (speculative arm)
    quote: "calibration measured speculative at concurrency 1: output_tokens_per_s {spec_tps}"
    date: "2026-12-02"
    stack: trnspec calibration against profile qwen3-4b-dflash
    stack_group: plugin-sync
    target: Qwen3-4B
    method: dflash
    k: 15
    instance: trn2.48xlarge
    tp: 4
    lnc: 2
    batch: 1
    input_len: 512
    output_len: 256
    weight_bytes: 2
    tpot_ms: {1000 / spec_tps:.2f}
    output_tokens_per_s: {spec_tps}
    acceptance_length: 2.1
"""
