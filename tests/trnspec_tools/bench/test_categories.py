"""bench.py --per-category: each category of a JSONL dataset measured alone, acceptance from the
server counters of its own window."""

from __future__ import annotations

import json

import pytest
from fake_openai_server import running

from trnspec_tools.bench.bench import main
from trnspec_tools.bench.categories import (
    UNCATEGORIZED,
    category_workloads,
    dataset_categories,
)
from trnspec_tools.bench.workload import WorkloadError

OUTPUT_LEN = 25  # 1 prefill token + 24 decode tokens: 6 steps of 4, or 12 steps of 2
SERVER = ("--ttft-ms", "20", "--itl-ms", "10", "--k", "3", "--tokens-per-step", "2")


def write_dataset(path, lines):
    path.write_text("".join(json.dumps(obj) + "\n" for obj in lines))
    return str(path)


def tagged(tmp_path):
    """'code' prompts accept every draft (4 tokens per step at k=3); 'chat' prompts one in three
    (2 tokens per step): the fake server follows the STEPS:n marker of each prompt."""
    return write_dataset(
        tmp_path / "tagged.jsonl",
        [{"prompt": f"STEPS:4 def f{i}(", "category": "code"} for i in range(3)]
        + [{"prompt": f"STEPS:2 hello {i}", "category": "chat"} for i in range(2)],
    )


def test_each_categorys_acceptance_equals_the_counter_deltas_of_its_own_prompts(tmp_path):
    out = tmp_path / "bench.json"
    with running(*SERVER) as url:
        code = main(
            [
                "--endpoint", url, "--dataset", tagged(tmp_path), "--per-category",
                "--num-prompts", "4", "--output-len", str(OUTPUT_LEN), "--concurrency", "2,1",
                "--out", str(out), "--no-progress", "--no-plots",
                "--profile", "llama31-8b-eagle3",
            ]
        )  # fmt: skip
    assert code == 0
    result = json.loads(out.read_text())
    block = result["per_category"]
    assert block["concurrency"] == 2
    code_, chat = block["categories"]["code"], block["categories"]["chat"]
    # code: 4 requests x 6 steps, 3 drafts each, all accepted
    assert code_["spec_decode_deltas"]["num_drafts"] == 24
    assert code_["spec_decode_deltas"]["num_draft_tokens"] == 72
    assert code_["spec_decode_deltas"]["num_accepted_tokens"] == 72
    assert code_["acceptance_rate"] == 1.0 and code_["mean_accepted_length"] == 4.0
    # chat: 4 requests x 12 steps, 1 of 3 drafts accepted
    assert chat["spec_decode_deltas"]["num_drafts"] == 48
    assert chat["spec_decode_deltas"]["num_draft_tokens"] == 144
    assert chat["spec_decode_deltas"]["num_accepted_tokens"] == 48
    assert chat["acceptance_rate"] == pytest.approx(1 / 3)
    assert chat["mean_accepted_length"] == 2.0
    assert code_["acceptance_source"] == chat["acceptance_source"] == "server-metrics"
    assert code_["num_prompts"] == chat["num_prompts"] == 4
    # with --profile, each category is predicted at its own measured acceptance
    assert code_["prediction"]["inputs"]["mean_accepted_length"] == 4.0
    assert chat["prediction"]["inputs"]["mean_accepted_length"] == 2.0
    md = out.with_suffix(".md").read_text()
    assert "Acceptance per category" in md
    assert "| code | 4 | 1.000 | 4.00 |" in md and "| chat | 4 | 0.333 | 2.00 |" in md


def test_without_the_flag_a_tagged_dataset_is_one_workload_and_the_report_says_how(tmp_path):
    out = tmp_path / "bench.json"
    with running(*SERVER) as url:
        code = main(
            [
                "--endpoint", url, "--dataset", tagged(tmp_path), "--num-prompts", "2",
                "--output-len", "9", "--out", str(out), "--no-progress", "--no-plots",
            ]
        )  # fmt: skip
    assert code == 0
    result = json.loads(out.read_text())
    assert result["per_category"] is None
    assert result["config"]["dataset_categories"] == ["chat", "code"]
    assert [r["arm"] for r in result["runs"]] == ["target"]
    assert "pass --per-category" in out.with_suffix(".md").read_text()


@pytest.mark.parametrize("dataset", [None, "tiny-corpus", "untagged"])
def test_per_category_without_tagged_prompts_is_refused_in_one_line(tmp_path, capsys, dataset):
    if dataset == "untagged":
        dataset = write_dataset(tmp_path / "u.jsonl", [{"prompt": "a"}, {"prompt": "b"}])
    argv = ["--endpoint", "http://127.0.0.1:9", "--per-category", "--out", str(tmp_path / "b")]
    code = main(argv + (["--dataset", dataset] if dataset else []))
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert "--per-category" in err and "\n" not in err


def test_categories_group_lines_and_keep_untagged_ones_apart(tmp_path):
    path = write_dataset(
        tmp_path / "d.jsonl",
        [
            {"prompt": "a", "category": "x"},
            {"prompt": "b"},
            {"prompt": "c", "category": "y", "max_tokens": 5},
        ],
    )
    groups = category_workloads(path, 3, 16, seed=0)
    assert sorted(groups) == [UNCATEGORIZED, "x", "y"]
    assert [s.prompt for s in groups["x"]] == ["a", "a", "a"]
    assert {s.max_tokens for s in groups["y"]} == {5}
    assert dataset_categories(path) == ["x", "y"]


def test_a_category_that_is_not_a_name_is_named_with_its_line(tmp_path):
    path = write_dataset(tmp_path / "d.jsonl", [{"prompt": "a", "category": ["x"]}])
    with pytest.raises(WorkloadError, match="line 1: category"):
        category_workloads(path, 1, 16, seed=0)


def test_a_missing_dataset_is_named_before_any_grouping(tmp_path):
    from trnspec_tools.bench.categories import category_groups

    with pytest.raises(WorkloadError, match=r"--dataset=.*nope\.jsonl: no such file"):
        category_groups(str(tmp_path / "nope.jsonl"), 16)


def test_bench_and_tune_group_a_dataset_the_same_way(tmp_path):
    """tune splits --num-prompts over the categories; bench takes --num-prompts of each. Both draw
    from the same groups with the same seeded sampling."""
    from trnspec_tools.tune.tune import category_specs

    path = tmp_path / "d.jsonl"
    lines = [{"prompt": f"w{i}", "category": "writing"} for i in range(9)]
    lines += [{"prompt": f"c{i}", "category": 7} for i in range(9)]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    bench = category_workloads(str(path), 3, 16, seed=5)
    tune = category_specs(str(path), 6, 16, seed=5)
    assert list(bench) == list(tune) == ["7", "writing"]
    assert bench == tune
