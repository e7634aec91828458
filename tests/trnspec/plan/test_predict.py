"""`trnspec predict`: every shipped Trn2 profile, the JSON shape, the cost arithmetic, bad input."""

from __future__ import annotations

import json
import math
from dataclasses import fields, replace

import pytest
from trnspec.cli.main import main
from trnspec.config.images import image_spec
from trnspec.config.serving import (
    ConfigError,
    Problem,
    ServingConfig,
    apply_overrides,
    list_profiles,
    load_profile,
)
from trnspec.hardware.packing import ReplicaPlacement, placement_for
from trnspec.hardware.pricing import PRICES
from trnspec.hardware.sizing import BYTES_PER_DTYPE
from trnspec.perf.profile_model import ProfileModel, profile_model
from trnspec.perf.step_time import (
    Deployment,
    Efficiency,
    Hardware,
    ModelInputError,
    decode_context_tokens,
    predict_grid,
)
from trnspec.perf.trn2_fit import DATA_FILE, trn2_calibration
from trnspec.perf.validation import held_rate
from trnspec.plan import predict as predict_module
from trnspec.plan.predict import (
    DEFAULT_BATCHES,
    PER_STACK,
    PLAIN_ROW,
    PredictQuery,
    PredictReport,
    Sourced,
    build,
)

TRN2_PROFILES = [p for p in list_profiles() if image_spec(load_profile(p).image).runs_on_trn2]
ROW_KEYS = {"batch", "k", "tpot_ms", "output_tokens_per_s", "speedup"}


def predict(capsys, *argv: str) -> tuple[int, str, str]:
    try:
        code = main(["predict", *argv])
    except SystemExit as exit_:  # a flag refused by its type= reader: argparse's exit 2
        code = int(exit_.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def as_json(capsys, *argv: str) -> dict:
    code, out, err = predict(capsys, *argv, "--format", "json")
    assert code == 0, err
    return json.loads(out)


def test_there_are_trn2_profiles_to_predict():
    assert len(TRN2_PROFILES) >= 3


@pytest.mark.parametrize("profile", TRN2_PROFILES)
def test_predict_works_for_every_shipped_trn2_profile(capsys, profile):
    speculative = load_profile(profile).speculation.method != "none"
    acc = ["--acceptance-rate", "0.7"] if speculative else []
    ks = "0,2,4" if speculative else "0"
    doc = as_json(capsys, "--profile", profile, *acc, "--batch", "1,4,16", "--k", ks)
    assert len(doc["rows"]) == 3 * len(ks.split(","))
    for row in doc["rows"]:
        assert ROW_KEYS | {"cost_per_1m_output_tokens_usd"} <= set(row)
        assert row["tpot_ms"] > 0 and row["output_tokens_per_s"] > 0
    for name, entry in doc["inputs"].items():
        assert entry["source"], name
    assert set(doc["best_k_per_batch"]) == {"1", "4", "16"}


def test_rows_are_consistent_tokens_per_second_tpot_and_cost(capsys):
    doc = as_json(
        capsys, "--profile", "qwen3-32b-draft", "--acceptance-length", "3.5", "--batch", "1,4"
    )
    price = PRICES["trn2.48xlarge"].usd_per_hour
    replicas = doc["inputs"]["replicas_per_instance"]["value"]
    assert replicas == 1  # TP 64 fills the instance
    for r in doc["rows"]:
        # batch sequences each get one token per TPOT
        assert r["output_tokens_per_s"] == pytest.approx(r["batch"] * 1000 / r["tpot_ms"], rel=1e-3)
        expected = price / (r["output_tokens_per_s"] * replicas * 3600) * 1e6
        assert r["cost_per_1m_output_tokens_usd"] == pytest.approx(expected, rel=1e-3)
    base = {r["batch"]: r for r in doc["rows"] if r["k"] == 0}
    for r in doc["rows"]:
        ratio = r["output_tokens_per_s"] / base[r["batch"]]["output_tokens_per_s"]
        assert r["speedup"] == pytest.approx(ratio, rel=1e-3)


def test_acceptance_length_is_read_at_the_profiles_window(capsys):
    doc = as_json(capsys, "--profile", "qwen3-32b-draft", "--acceptance-length", "8", "--k", "7")
    assert doc["inputs"]["acceptance_rate"]["value"] == pytest.approx(1.0, abs=1e-4)
    assert "k=7" in doc["inputs"]["acceptance_rate"]["source"]


def test_a_tp4_replica_counts_sixteen_per_trn2_48xlarge(capsys):
    doc = as_json(
        capsys,
        "--profile",
        "llama31-8b-eagle3",
        "--set",
        "hardware.instance_type=trn2.48xlarge",
        "--acceptance-rate",
        "0.7",
        "--batch",
        "1",
        "--k",
        "0",
    )
    assert doc["inputs"]["replicas_per_instance"]["value"] == 16


def test_price_override_scales_the_cost(capsys):
    args = ("--profile", "qwen3-32b-draft", "--acceptance-rate", "0.7", "--batch", "1", "--k", "0")
    cheap = as_json(capsys, *args, "--price-per-hour", "10")
    dear = as_json(capsys, *args, "--price-per-hour", "20")
    a = cheap["rows"][0]["cost_per_1m_output_tokens_usd"]
    assert dear["rows"][0]["cost_per_1m_output_tokens_usd"] == pytest.approx(2 * a, abs=2e-4)


def test_an_instance_without_a_price_leaves_the_cost_empty_with_the_reason(capsys):
    doc = as_json(
        capsys,
        "--profile",
        "qwen3-32b-draft",
        "--set",
        "hardware.instance_type=trn2u.48xlarge",
        "--acceptance-rate",
        "0.7",
        "--batch",
        "1",
    )
    assert all(r["cost_per_1m_output_tokens_usd"] is None for r in doc["rows"])
    assert "--price-per-hour" in doc["cost_note"]


def test_table_marks_the_best_k_and_the_batch_where_speculation_stops(capsys):
    code, out, _ = predict(
        capsys, "--profile", "qwen3-32b-draft", "--acceptance-rate", "0.7", "--batch", "1,4,256"
    )
    assert code == 0
    assert "<- best" in out and "best k per batch: 1: k=" in out
    assert "speculation no longer pays from batch" in out


def _edges_follow_the_bands(doc: dict) -> None:
    """Each verdict's edges are its best k's speedup with both bands against it and for it; a
    batch where either band is unknown has no edges."""
    rows = {(r["batch"], r["k"]): r for r in doc["rows"]}
    for v in doc["batch_verdicts"]:
        row, plain = rows[(v["batch"], v["k"])], rows[(v["batch"], 0)]
        e_s, e_p = row["error_band"], plain["error_band"]
        if e_s is None or e_p is None:
            assert (v["speedup_low"], v["speedup_high"], v["verdict"]) == (None, None, "undecided")
            continue
        assert v["speedup_low"] == pytest.approx(row["speedup"] * (1 - e_s) / (1 + e_p), rel=2e-3)
        assert v["speedup_high"] == pytest.approx(row["speedup"] * (1 + e_s) / (1 - e_p), rel=2e-3)


def test_each_batch_says_how_sure_the_model_is_and_an_undecided_one_asks_for_a_measurement(
    capsys,
):
    """docs/performance.md's example: DFlash on Qwen3-4B at acceptance 3.5 is predicted faster
    at batches 1 and 2, but within the bands from unseen sources either answer holds there and
    at 4; at 8 (no published row of either stack at batch 5+) the bands are unknown: measure."""
    argv = ("--profile", "qwen3-4b-dflash", "--acceptance-length", "3.5", "--batch", "1,2,4,8",
            "--k", "0,7,15")  # fmt: skip
    doc = as_json(capsys, *argv)
    verdicts = {v["batch"]: v["verdict"] for v in doc["batch_verdicts"]}
    assert verdicts == {1: "undecided", 2: "undecided", 4: "undecided", 8: "undecided"}
    assert all(r["error_band"] is None for r in doc["rows"] if r["batch"] == 8)
    _edges_follow_the_bands(doc)
    code, out, _ = predict(capsys, *argv)
    assert code == 0
    assert "1: undecided (k=7 0.70x-2.93x), 2: undecided (k=7 0.56x-2.34x)" in out
    assert "8: undecided (k=7 a band unknown)" in out
    # beside each band, how often bands of its kind held; a figure without one is unknown
    table = {tuple(int(c) for c in line.split()[:2]): line for line in out.splitlines()[2:14]}
    for r in doc["rows"]:
        cells = table[(r["batch"], r["k"])].split()
        if r["error_band"] is None:
            assert cells[7:9] == ["unknown", "-"]
        else:
            held = r["error_band_held"]
            assert cells[7:9] == [f"+/-{r['error_band']:.0%}", f"{held[0]}/{held[1]}"]
    assert "undecided at batch 1, 2, 4, 8: the model cannot tell speculation from plain" in out
    assert (
        "speculation no longer pays from batch 4 as predicted, but the bands cannot tell there:"
        " measure before serving batches of 4 and more with k=0"
    ) in out


def test_a_verdict_that_holds_at_the_edges_of_both_bands_is_sure(capsys):
    """EAGLE3 on Llama-3.1-8B at its published acceptance (3.22 at k=3) stays faster at batch 1
    with both bands against it; k=15 alone on Qwen3-4B stays slower at batch 4 with both bands
    for it, so plain is sure there and the line says to serve it with k=0."""
    eagle = ("--profile", "llama31-8b-eagle3", "--acceptance-length", "3.22", "--batch", "1,2",
             "--k", "0,3,7")  # fmt: skip
    dflash = ("--profile", "qwen3-4b-dflash", "--acceptance-length", "3.5", "--batch", "1,4",
              "--k", "0,15")  # fmt: skip
    for argv, expected in (
        (eagle, {1: "speculation", 2: "undecided"}),
        (dflash, {1: "undecided", 4: "plain"}),
    ):
        doc = as_json(capsys, *argv)
        assert {v["batch"]: v["verdict"] for v in doc["batch_verdicts"]} == expected
        _edges_follow_the_bands(doc)
    code, out, _ = predict(capsys, *dflash)
    assert code == 0
    assert "speculation no longer pays from batch 4: serve batches of 4 and more with k=0" in out
    assert "undecided at batch 1:" in out


def test_without_a_window_above_0_there_is_no_verdict():
    report, _ = _report("qwen3-4b-baseline")
    assert report.batch_verdicts == []


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--profile", "local-tiny", "--acceptance-rate", "0.7"], "--profile=local-tiny"),
        (["--profile", "qwen3-32b-draft"], "--acceptance-rate"),
        (["--profile", "qwen3-32b-draft", "--acceptance-rate", "1.5"], "--acceptance-rate: 1.5"),
        (["--profile", "qwen3-32b-draft", "--acceptance-length", "9"], "--acceptance-length=9"),
        (["--profile", "qwen3-32b-baseline", "--k", "0,3"], "--k=0,3"),
        (["--profile", "qwen3-32b-draft", "--acceptance-rate", "0.5", "--batch", "0"], "--batch"),
    ],
)
def test_bad_input_exits_2_naming_the_flag(capsys, argv, needle):
    code, _, err = predict(capsys, *argv)
    assert code == 2 and needle in err


def _quantile_80(errors: list[float]) -> float | None:
    """The ceil(0.8 (n + 1))-th smallest of n |errors| (None: too few), computed here."""
    ranked = sorted(abs(e) for e in errors)
    rank = math.ceil(0.8 * (len(ranked) + 1) - 1e-9)
    return ranked[rank - 1] if rank <= len(ranked) else None


def test_every_row_carries_its_band_from_unseen_sources_and_how_often_such_bands_held(capsys):
    args = ("--profile", "qwen3-32b-draft", "--acceptance-rate", "0.7", "--batch", "1,4")
    rows = {(r["batch"], r["k"]): r for r in as_json(capsys, *args, "--k", "0,4")["rows"]}
    validation = trn2_calibration().validation
    plain = [h.error for h in validation if h.method == "none" and h.error is not None]
    spec = [h.error for h in validation if h.method != "none" and h.error is not None]
    # plain decoding at batch 1 on the fork (TP 64, 32B, short context) lies inside the data, but
    # its regime and its stack hold too few held-out errors: every stack's plain errors decide
    row = rows[(1, 0)]
    assert row["error_band"] == pytest.approx(_quantile_80(plain), abs=5e-4)
    assert "every stack: nxdi-fork, none" in row["error_band_note"]
    held = held_rate(trn2_calibration().folds, "none", 0)
    assert held is not None and row["error_band_held"] == list(held)
    # no fork row publishes an acceptance: the draft-model figure takes every stack's
    # speculative errors (a speedup's), never the plain ones
    row = rows[(1, 4)]
    assert row["error_band"] == pytest.approx(_quantile_80(spec), abs=5e-4)
    assert "every stack: nxdi-fork, draft_model" in row["error_band_note"]
    # at batch 4 the fork has no row: no speculative fold was as far out, so the figure is
    # unknown, says to measure, and has no rate of bands held
    row = rows[(4, 4)]
    assert row["error_band"] is None and row["error_band_held"] is None
    assert row["error_band_note"].startswith("unknown for nxdi-fork, draft_model")
    assert "measure it" in row["error_band_note"]


def test_a_batch_far_from_every_published_row_is_flagged_as_outside_the_data(capsys):
    doc = as_json(
        capsys, "--profile", "qwen3-32b-draft", "--acceptance-rate", "0.7", "--batch", "1,64"
    )
    assert len(doc["outside_data"]) == 1 and "batch 64" in doc["outside_data"][0]
    code, out, _ = predict(
        capsys, "--profile", "qwen3-32b-draft", "--acceptance-rate", "0.7", "--batch", "1,64"
    )
    assert code == 0 and "outside the published data: batch 64" in out


def test_a_context_far_from_every_published_row_is_flagged_as_outside_the_data(capsys):
    args = ("--profile", "qwen3-32b-draft", "--acceptance-rate", "0.7", "--batch", "1")
    doc = as_json(capsys, *args, "--input-len", "3000")  # the fork has no 1024-8191 row
    assert any(o.startswith("context") for o in doc["outside_data"]), doc["outside_data"]
    assert "context" not in " ".join(as_json(capsys, *args)["outside_data"])


def test_replicas_per_instance_is_the_deploys_packing_not_chips_alone(capsys):
    from trnspec.hardware.packing import placement_for

    doc = as_json(capsys, "--profile", "qwen3-4b-dflash", "--acceptance-length", "3.5")
    placement = placement_for(load_profile("qwen3-4b-dflash"))
    assert placement is not None
    assert doc["inputs"]["replicas_per_instance"]["value"] == placement.packing.replicas == 16
    assert "ephemeral" not in placement.packing.limit
    # Storage-bound: a replica staging 1000 GiB packs 6 to a node, and the cost says so.
    big = placement_for(load_profile("qwen3-4b-dflash"), ephemeral_gib=1000)
    assert big is not None
    assert (big.packing.replicas, big.packing.limit) == (6, "ephemeral-storage")


def test_k0_of_a_dflash_profile_is_the_plain_server_a_user_would_deploy_instead(capsys):
    """DFlash renders --no-async-scheduling; without speculation the same model schedules
    asynchronously. k=0 (and so every speedup) is priced as that plain server, the one
    plan-deploy compares with, not as the synchronous DFlash command at k=0."""
    args = ("--acceptance-length", "2.1", "--acceptance-k", "15", "--batch", "1,4", "--k", "0")
    dflash = as_json(capsys, "--profile", "qwen3-4b-dflash", *args)
    plain = as_json(capsys, "--profile", "qwen3-4b-baseline", "--batch", "1,4", "--k", "0")
    assert [r["tpot_ms"] for r in dflash["rows"]] == [r["tpot_ms"] for r in plain["rows"]]
    assert "efficiency.plain_step_overhead_s" in dflash["inputs"]


@pytest.mark.parametrize("profile", ["qwen3-4b-dflash", "llama31-8b-eagle3"])
def test_the_cost_is_the_whole_instance_with_every_replica_on_it_busy(capsys, profile):
    """Sixteen TP-4 replicas share one trn2.48xlarge: a million tokens cost the instance-hours
    sixteen replicas need to make them, not the hours one replica needs (16x less)."""
    args = ("--profile", profile, "--set", "hardware.instance_type=trn2.48xlarge")
    doc = as_json(capsys, *args, "--acceptance-rate", "0.6", "--batch", "1,8", "--k", "0")
    replicas = doc["inputs"]["replicas_per_instance"]["value"]
    price = doc["inputs"]["price_per_hour_usd"]["value"]
    assert replicas == 16
    for r in doc["rows"]:
        hours_per_1m = 1e6 / (r["output_tokens_per_s"] * replicas * 3600)
        assert r["cost_per_1m_output_tokens_usd"] == pytest.approx(price * hours_per_1m, rel=1e-3)


def _report(profile: str, **query: object) -> tuple[PredictReport, ServingConfig]:
    """The report of a shipped profile (at acceptance 0.7 unless it has no speculation)."""
    cfg = load_profile(profile)
    speculative = cfg.speculation.method != "none"
    asked = {"acceptance_rate": 0.7 if speculative else None, **query}
    return build(PredictQuery(**asked), cfg), cfg  # type: ignore[arg-type]


def _listed(report: PredictReport) -> dict[str, object]:
    return {name: entry.value for name, entry in report.inputs.items()}


@pytest.mark.parametrize("profile", TRN2_PROFILES)
def test_the_listed_inputs_reproduce_every_row(profile):
    """The document lists every constant the rows used: the model run again from the listed
    values alone (and the shapes named there) gives the same rows. A constant the model uses
    but the list leaves out (the host share, the vCPUs it is divided by) fails this."""
    speculative = load_profile(profile).speculation.method != "none"
    report, cfg = _report(profile, batch="1,3,16", k="0,1,3" if speculative else "0")
    v = _listed(report)
    shapes = profile_model(cfg, 0)
    assert (v["target"], v["hardware"]) == (shapes.target.name, shapes.deployment.hardware.name)
    assert v.get("draft") == (shapes.draft.name if speculative and shapes.draft else None)
    hw = Hardware(
        str(v["hardware"]),
        v["hbm_bytes_per_s_per_chip"],
        v["peak_flops_per_chip"],
        v["link_bytes_per_s_per_chip"],
        v["cores_per_chip"],
        "listed",
    )
    eff = Efficiency(**{f.name: v[f"efficiency.{f.name}"] for f in fields(Efficiency)})
    plain = {n: v[f"efficiency.plain_{n}"] for n in PLAIN_ROW if f"efficiency.plain_{n}" in v}
    width = BYTES_PER_DTYPE[v["dtype"]]
    dep = Deployment(
        hw,
        v["tensor_parallel_size"],
        v["lnc"],
        width,
        width,
        width,
        v["context_tokens"],
        v["vcpus_per_replica"],
    )
    points = predict_grid(
        shapes.target,
        str(v.get("method", "none")),
        shapes.draft,
        v.get("acceptance_rate", 0.0),
        [0, 1, 3] if speculative else [0],
        [1, 3, 16],
        dep,
        eff,
        replace(eff, **plain),
    )
    assert [(r.batch, r.k, r.tpot_ms, r.output_tokens_per_s) for r in report.rows] == [
        (p.batch, p.k, round(p.tpot_s * 1e3, 3), round(p.output_tokens_per_s, 2)) for p in points
    ]


@pytest.mark.parametrize("profile", TRN2_PROFILES)
def test_every_input_names_where_it_came_from(profile):
    report, cfg = _report(profile, batch="1")
    model = profile_model(cfg, decode_context_tokens(512, 256))
    src = {name: entry.source for name, entry in report.inputs.items()}
    assert src["target"] == model.target.origin
    for name in ("hardware", "hbm_bytes_per_s_per_chip", "peak_flops_per_chip"):
        assert src[name] == model.deployment.hardware.source
    assert src["link_bytes_per_s_per_chip"] == src["cores_per_chip"] == src["hardware"]
    for name in ("tensor_parallel_size", "lnc", "dtype", "max_num_seqs"):
        assert f"profile {cfg.name}" in src[name]
    assert "recompile" in src["max_num_seqs"]
    assert src["context_tokens"] == "--input-len 512 + half of --output-len 256"
    placement = placement_for(cfg)
    assert placement is not None
    # the packing module, the kubelet's disk it counted and what limits the count
    assert src["replicas_per_instance"].startswith("trnspec.hardware.packing (")
    assert (
        f"kubelet's {placement.disk}); limited by {placement.packing.reason}"
        in (src["replicas_per_instance"])
    )
    if cfg.speculation.method == "none":
        assert not {"method", "draft", "acceptance_rate"} & set(src)
    else:
        assert src["method"] == f"speculation.method of {cfg.name}"
        assert src["draft"] == model.draft.origin
        assert src["acceptance_rate"] == "--acceptance-rate (user supplied)"
    for name in PLAIN_ROW:
        plain = src.get(f"efficiency.plain_{name}")
        assert (plain is not None) == (model.plain_group != model.group)
        if plain is not None:
            assert f"stack group {model.plain_group!r}" in plain
            assert plain.endswith("without speculation, as a plain server would run")
    # a constant each serving stack has its own of names the stack; a shared one does not
    for f in fields(Efficiency):
        per_stack = f"stack group {model.group!r}" in src[f"efficiency.{f.name}"]
        assert per_stack == (f.name in PER_STACK), f.name
    vcpus = src["vcpus_per_replica"]
    assert vcpus.startswith(f"the vCPUs of a {cfg.hardware.instance_type} over the replicas")
    assert vcpus.endswith("(trnspec.perf.profile_model); the host share is paid per vCPU")


def test_a_given_acceptance_rate_is_listed_as_given():
    report, _ = _report("llama31-8b-eagle3", acceptance_rate=0.55, batch="1")
    assert report.inputs["acceptance_rate"] == Sourced(0.55, "--acceptance-rate (user supplied)")


def test_a_rate_derived_from_a_length_cites_the_length_the_window_and_the_formula():
    report, _ = _report(
        "llama31-8b-eagle3", acceptance_rate=None, acceptance_length=2.5, acceptance_k=5
    )
    source = report.inputs["acceptance_rate"].source
    assert source.startswith("from --acceptance-length 2.5 at k=5 by ")
    assert "(1 - a^(k+1)) / (1 - a) = tau (Leviathan et al., 2023)" in source


def test_a_speculative_profile_without_an_acceptance_is_refused_naming_both_ways_to_give_it():
    cfg = load_profile("llama31-8b-eagle3")
    with pytest.raises(ConfigError) as err:
        build(PredictQuery(), cfg)
    (problem,) = err.value.problems
    assert str(problem).startswith("--acceptance-rate: give")  # not given: no value shown
    assert problem.fix.startswith("give --acceptance-rate A (per token) or --acceptance-length TAU")
    assert problem.fix.endswith(
        "verification step, as published); acceptance depends on the workload"
    )


def test_an_acceptance_of_zero_accepts_no_draft_token():
    """Every draft rejected: a speculative step still emits the target's one token, no more."""
    report, _ = _report("llama31-8b-eagle3", acceptance_rate=0.0, batch="1,4", k="0,2,5")
    assert {r.tokens_per_step for r in report.rows} == {1.0}


def test_a_profile_without_speculation_predicts_k0_at_the_default_batches():
    report, _ = _report("qwen3-4b-baseline")
    assert [(r.batch, r.k) for r in report.rows] == [(b, 0) for b in DEFAULT_BATCHES]
    assert report.speculation_stops_paying_at_batch is None


@pytest.mark.parametrize(
    ("profile", "top"),
    [("llama31-8b-eagle3", 7), ("llama31-8b-dflash", 9), ("qwen3-4b-dflash", 15)],
)
def test_the_default_windows_run_from_0_to_the_larger_of_the_images_and_the_profiles(profile, top):
    cfg = load_profile(profile)
    assert top == max(
        image_spec(cfg.image).max_speculative_tokens, cfg.speculation.num_speculative_tokens
    )
    report, _ = _report(profile, batch="2")
    assert [r.k for r in report.rows] == list(range(top + 1))


@pytest.mark.parametrize("k", ["1", "0,1", "2"])
def test_a_window_above_0_on_a_profile_without_speculation_is_refused(k):
    cfg = load_profile("qwen3-4b-baseline")
    with pytest.raises(ConfigError) as err:
        build(PredictQuery(k=k), cfg)
    (problem,) = err.value.problems
    assert (problem.field, problem.value) == ("--k", k)
    assert f"profile {cfg.name} has no speculation; give --k 0" in problem.fix


@pytest.mark.parametrize(
    ("field", "text"), [("k", "x"), ("k", "-1"), ("batch", "0"), ("batch", ",")]
)
def test_a_malformed_list_is_refused_naming_its_flag_and_the_text_given(field, text):
    cfg = load_profile("llama31-8b-eagle3")
    with pytest.raises(ConfigError) as err:
        build(PredictQuery(acceptance_rate=0.7, **{field: text}), cfg)
    (problem,) = err.value.problems
    assert (problem.field, problem.value) == (f"--{field}", text)
    assert "integer" in problem.fix


def test_the_lists_are_read_as_sorted_distinct_values():
    report, _ = _report("llama31-8b-eagle3", batch="4,1,4", k="3,0,3")
    assert [(r.batch, r.k) for r in report.rows] == [(1, 0), (1, 3), (4, 0), (4, 3)]


def test_every_problem_of_a_query_is_reported_at_once():
    cfg = load_profile("qwen3-4b-baseline")
    with pytest.raises(ConfigError) as err:
        build(PredictQuery(k="0,2", input_len=cfg.max_model_len), cfg)
    assert [p.field for p in err.value.problems] == ["--k", "--input-len"]


def test_a_refusal_of_the_model_is_reported_naming_the_windows_and_batches(monkeypatch):
    def refuse(*_args: object) -> None:
        raise ModelInputError("k", 3, "refused")

    monkeypatch.setattr(ProfileModel, "grid", refuse)
    with pytest.raises(ConfigError) as err:
        _report("llama31-8b-eagle3", k="0,3", batch="1")
    assert err.value.problems == [Problem("--k/--batch", "0,3/1", "k=3: refused")]


def test_a_batch_is_within_max_num_seqs_up_to_and_including_it():
    report, cfg = _report("llama31-8b-eagle3", batch="3,4,5", k="0")
    assert cfg.max_num_seqs == 4
    assert [r.within_max_num_seqs for r in report.rows] == [True, True, False]
    assert report.inputs["max_num_seqs"].value == 4


def test_each_row_carries_the_band_of_the_stack_and_method_it_ran_as():
    """k=0 is the plain server (its own stack, no speculation); k>0 the profile's."""
    report, _ = _report("qwen3-4b-dflash", batch="1", k="0,3")
    notes = {r.k: r.error_band_note for r in report.rows}
    assert "plugin, none" in notes[0] and "plugin-sync" not in notes[0]
    assert "plugin-sync, dflash" in notes[3]


def test_the_report_names_its_profile_and_its_caveats():
    report, _ = _report("llama31-8b-eagle3", batch="1")
    assert report.profile == "llama31-8b-eagle3"
    hbm, band = report.caveats
    assert hbm == "HBM fit at these batches is not checked here; run `trnspec plan`."
    assert band.startswith("error_band: the 80% quantile of held-out errors from sources the fit")
    assert "null where too few did: unknown, measure it" in band
    assert band.endswith(f"see docs/performance.md and trnspec/{DATA_FILE}.")


def test_the_json_document_is_indented_two_spaces_one_field_a_line():
    report, _ = _report("llama31-8b-eagle3", batch="1", k="0")
    lines = report.to_json().splitlines()
    assert lines[:2] == ["{", '  "profile": "llama31-8b-eagle3",']


def _placed(placement: ReplicaPlacement | None):
    return lambda _cfg: placement


def test_unknown_packing_leaves_every_cost_empty_and_says_why(monkeypatch):
    monkeypatch.setattr(predict_module, "placement_for", _placed(None))
    report, cfg = _report("qwen3-4b-dflash", batch="1,4")
    assert all(r.cost_per_1m_output_tokens_usd is None for r in report.rows)
    assert report.cost_note == (
        f"replicas per instance unknown: the staged storage of {cfg.target.name} cannot be"
        " sized offline (the deploy needs serving.weights_volume_gib)"
    )
    replicas, price = report.inputs["replicas_per_instance"], report.inputs["price_per_hour_usd"]
    assert replicas.value is None and replicas.source.endswith("on the kubelet's disk)")
    assert price.value is None


def test_a_replica_that_fits_no_node_leaves_every_cost_empty_and_says_why(monkeypatch):
    cfg = load_profile("qwen3-4b-dflash")
    none_fit = placement_for(cfg, ephemeral_gib=1_000_000)
    assert none_fit is not None and none_fit.packing.replicas == 0
    monkeypatch.setattr(predict_module, "placement_for", _placed(none_fit))
    report, _ = _report("qwen3-4b-dflash", batch="1,4")
    assert all(r.cost_per_1m_output_tokens_usd is None for r in report.rows)
    assert report.cost_note == (
        f"a replica does not fit one {cfg.hardware.instance_type}: {none_fit.packing.reason}"
    )
    assert report.inputs["price_per_hour_usd"].value is None


def test_an_unpriced_instance_gives_the_reason_as_the_prices_source():
    cfg = apply_overrides(
        load_profile("qwen3-32b-draft"), ["hardware.instance_type=trn2u.48xlarge"]
    )
    report = build(PredictQuery(acceptance_rate=0.7, batch="1"), cfg)
    price = report.inputs["price_per_hour_usd"]
    assert price.value is None and report.cost_note
    assert price.source == report.cost_note
