"""Prompts and arrivals: reproducible, sized as asked, and bad input named."""

from __future__ import annotations

import itertools
import json
import statistics
from pathlib import Path

import pytest
from trnspec.boundary import files
from trnspec.boundary.errors import BoundaryError

from trnspec_tools.bench.workload import (
    TINY_CORPUS,
    WorkloadError,
    arrival_offsets,
    load_dataset,
    read_dataset,
    select_workload,
    synthetic_prompts,
)


def test_synthetic_prompts_have_the_requested_word_count_and_are_seeded():
    a = synthetic_prompts(5, 17, 9, seed=3)
    assert [len(s.prompt.split()) for s in a] == [17] * 5
    assert all(s.max_tokens == 9 for s in a)
    assert a == synthetic_prompts(5, 17, 9, seed=3)
    assert a != synthetic_prompts(5, 17, 9, seed=4)
    assert len({s.prompt for s in a}) == 5


@pytest.mark.parametrize(
    ("args", "flag"),
    [((0, 5, 5), "--num-prompts"), ((1, 0, 5), "--input-len"), ((1, 5, 0), "--output-len")],
)
def test_synthetic_prompts_reject_non_positive_sizes(args, flag):
    with pytest.raises(WorkloadError, match=flag):
        synthetic_prompts(*args, seed=0)


def test_dataset_is_sampled_reproducibly_and_cycled_when_short(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text("\n".join(json.dumps({"prompt": f"p{i}"}) for i in range(3)) + "\n\n")
    cycled = load_dataset(path, 7, 11, seed=0)
    assert [s.prompt for s in cycled] == ["p0", "p1", "p2", "p0", "p1", "p2", "p0"]
    sampled = load_dataset(path, 2, 11, seed=1)
    assert sampled == load_dataset(path, 2, 11, seed=1)
    assert all(s.max_tokens == 11 for s in sampled)


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("not json\n", "line 1: not JSON"),
        ('{"text": "x"}\n', 'line 1: needs a string field "prompt"'),
        ('{"prompt": "x", "max_tokens": 0}\n', "max_tokens=0"),
        ("\n", "no prompts"),
    ],
)
def test_bad_dataset_lines_are_named(tmp_path, content, needle):
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    with pytest.raises(WorkloadError, match=needle):
        load_dataset(path, 1, 4, seed=0)


@pytest.mark.parametrize(
    ("content", "value", "fix"),
    [
        ('{"text": "x"}\n', "line 1", 'needs a string field "prompt"'),
        ('{"prompt": "x"}\n{"prompt": "y", "max_tokens": 0}\n', "line 2", "max_tokens=0 must be"),
        (
            '{"prompt": "x", "category": "code"}\n{"prompt": "y", "category": "c\\udc80"}\n',
            "line 2",
            "category holds a lone surrogate (\\udc80 at character 2), not Unicode text",
        ),
        ('{"prompt": "\\ud800 x"}\n', "line 1", "prompt holds a lone surrogate (\\ud800 at"),
        ("\n", "", "the file holds no prompts"),
    ],
)
def test_a_bad_dataset_is_one_problem_naming_the_flag_the_file_and_the_line(
    tmp_path, content, value, fix
):
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    with pytest.raises(WorkloadError) as err:
        load_dataset(path, 1, 4, seed=0)
    (problem,) = err.value.problems
    assert problem.field == "--dataset"
    assert problem.value == f"{path} {value}".rstrip()
    assert problem.fix.startswith(fix)


@pytest.mark.parametrize("inside", ["\u2028", "\u2029", "\x85"], ids=["LS", "PS", "NEL"])
def test_a_prompt_holding_a_unicode_line_break_is_one_prompt(tmp_path, inside):
    """JSON Lines ends a line at "\\n" only: a line or paragraph separator or a NEL, which JSON
    allows raw inside a string, is text there (str.splitlines() cut these lines in two); a
    "\\r\\n" ending is JSON whitespace."""
    prompts = [f"before{inside}after", "second"]
    path = tmp_path / "d.jsonl"
    lines = (json.dumps({"prompt": p}, ensure_ascii=False) for p in prompts)
    path.write_text("\n".join(lines) + "\r\n", encoding="utf-8", newline="")
    assert inside.encode() in path.read_bytes()  # raw, not escaped
    data = read_dataset(path, output_len=4)
    assert [(d.lineno, d.spec.prompt) for d in data] == [(1, prompts[0]), (2, "second")]


def test_the_jsonl_reader_numbers_lines_at_newlines_and_names_the_bad_one(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text('{"a": "x\u2028y"}\n\n[1]\n{"b": [[[1]]]}\n', encoding="utf-8")
    expected = [(1, {"a": "x\u2028y"}), (3, [1]), (4, {"b": [[[1]]]})]
    assert files.read_json_lines(path, "--f") == expected
    with pytest.raises(BoundaryError) as err:
        files.read_json_lines(path, "--f", max_depth=2)
    assert (err.value.field, err.value.value) == ("--f", f"{path} line 4")
    with pytest.raises(BoundaryError, match="more than 3 lines"):
        files.read_json_lines(path, "--f", max_lines=3)


def test_missing_dataset_names_the_flag(tmp_path):
    with pytest.raises(WorkloadError, match="--dataset="):
        load_dataset(tmp_path / "nope.jsonl", 1, 4, seed=0)


def test_closed_loop_sends_everything_at_once():
    assert arrival_offsets(4, float("inf"), seed=0) == [0.0] * 4


def test_poisson_arrivals_have_the_requested_mean_rate():
    offsets = arrival_offsets(4001, 20.0, seed=7)
    gaps = [b - a for a, b in itertools.pairwise(offsets)]
    assert offsets == sorted(offsets) and offsets[0] == 0.0
    assert statistics.mean(gaps) == pytest.approx(1 / 20.0, rel=0.05)
    assert arrival_offsets(10, 20.0, seed=7) == offsets[:10]


def test_non_positive_rate_is_rejected():
    with pytest.raises(WorkloadError, match="--request-rate=0"):
        arrival_offsets(3, 0.0, seed=0)


def test_dataset_tiny_corpus_gives_seeded_prompts_in_the_local_models_style() -> None:
    specs = select_workload(TINY_CORPUS, 5, input_len=99, output_len=32, seed=3)
    assert len(specs) == 5 and all(s.max_tokens == 32 for s in specs)
    assert all("\ndef " in s.prompt or "\nclass " in s.prompt for s in specs)
    assert specs == select_workload(TINY_CORPUS, 5, input_len=99, output_len=32, seed=3)


def test_no_dataset_means_synthetic_prompts_of_input_len_words() -> None:
    specs = select_workload(None, 3, input_len=7, output_len=16, seed=0)
    assert [len(s.prompt.split()) for s in specs] == [7, 7, 7]


def test_a_dataset_path_that_does_not_exist_names_the_flag(tmp_path: Path) -> None:
    with pytest.raises(WorkloadError, match="--dataset="):
        select_workload(str(tmp_path / "nope.jsonl"), 3, input_len=7, output_len=16, seed=0)
