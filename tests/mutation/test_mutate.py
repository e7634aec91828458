"""The pure parts of the mutation driver (tests/mutation/mutate.py): its module table points at
real files, its score arithmetic, the selection by word and the staged paths. The mutation run
itself is `make mutate`, not part of `make test`."""

from __future__ import annotations

import functools
import importlib.util
import sys
import tomllib
import types
from collections.abc import Callable
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("mutate_driver", HERE / "mutate.py")
assert _spec is not None and _spec.loader is not None
mutate = importlib.util.module_from_spec(_spec)
sys.modules["mutate_driver"] = mutate  # dataclasses look their module up while being built
_spec.loader.exec_module(mutate)


def test_every_target_names_an_existing_module_and_existing_test_files():
    for target in mutate.TARGETS:
        assert (mutate.REPO / target.source).is_file(), target.source
        assert target.tests, f"{target.name} runs no test"
        for test in target.tests:
            assert (mutate.REPO / test).is_file(), test


def test_target_names_are_unique():
    names = [t.name for t in mutate.TARGETS]
    assert len(names) == len(set(names))


@pytest.mark.parametrize(
    ("source", "staged"),
    [
        ("image/trnspec/hardware/packing.py", "src/trnspec/hardware/packing.py"),
        ("trnspec_tools/boundary/sse.py", "src/trnspec_tools/boundary/sse.py"),
        ("infra/serving/manifests/autoscaling.py", "src/infra/serving/manifests/autoscaling.py"),
    ],
)
def test_a_module_is_staged_under_src_with_its_import_path(source, staged):
    assert mutate.Target("x", source, ("t",)).staged_source() == staged


def test_a_module_outside_the_three_packages_is_refused():
    with pytest.raises(ValueError, match=r"scripts/x\.py"):
        mutate.Target("x", "scripts/x.py", ("t",)).staged_source()


def test_the_score_counts_failures_and_timeouts_as_killed_and_everything_else_against():
    codes = {"a": 1, "b": 0, "c": 36, "d": 33, "e": None, "f": 3, "g": 0, "h": 35}
    score = mutate.score_of("m", codes, 12.0)
    assert (score.killed, score.survived, score.total) == (3, 5, 8)
    assert score.percent == pytest.approx(37.5)
    assert "37.5%" in score.line() and "12 s" in score.line()


def test_a_module_without_mutants_scores_full():
    assert mutate.score_of("m", {}, 0.0).percent == 100.0


def test_selection_by_word_matches_names_containing_it():
    assert [t.name for t in mutate.selected("key")] == ["cache_key", "api_key"]
    assert mutate.selected(None) == list(mutate.TARGETS)
    assert mutate.selected("") == list(mutate.TARGETS)
    assert mutate.selected("no-such-module") == []


def test_the_mutmut_table_mutates_only_the_target_and_runs_only_its_tests():
    target = mutate.Target("sse", "trnspec_tools/boundary/sse.py", ("tests/a.py", "tests/b.py"))
    table = tomllib.loads(mutate.mutmut_config(target))["tool"]["mutmut"]
    assert table["only_mutate"] == ["src/trnspec_tools/boundary/sse.py"]
    assert table["pytest_add_cli_args_test_selection"] == ["tests/a.py", "tests/b.py"]
    assert table["source_paths"] == ["src"]
    assert "not e2e and not slow" in table["pytest_add_cli_args"]


def test_max_children_defaults_to_the_driver_constant_and_can_be_lowered():
    assert mutate.parse_args([]).max_children == mutate.MAX_CHILDREN
    args = mutate.parse_args(["render", "--max-children", "1"])
    assert (args.word, args.max_children) == ("render", 1)
    with pytest.raises(SystemExit):
        mutate.parse_args(["--max-children", "0"])


def test_the_stage_copies_of_repo_dirs_leave_the_packages_to_src():
    """`image/` is copied for its data; its `trnspec` would shadow the mutated `src/trnspec`."""
    ignore = mutate._without_packages(lambda _d, _n: set())
    image = str(mutate.REPO / "image")
    assert ignore(image, ["trnspec", "Dockerfile", "tools"]) == {"trnspec"}
    assert ignore(str(mutate.REPO / "tests"), ["trnspec", "infra"]) == set()


def test_the_stage_holds_what_staged_infra_reads_through_its_own_path(tmp_path):
    """infra.serving.bundle finds the pyprojects three levels above its package: in the stage
    that is `src/`; without them every infra target's first test run failed (FileNotFoundError
    on src/image/pyproject.toml), and `make mutate` stopped at autoscaling."""
    from infra.serving.bundle import archive, requirements

    target = next(t for t in mutate.TARGETS if t.name == "autoscaling")
    root = mutate.stage(target, tmp_path / "stage")
    # where the staged archive module's REPO_DIR points: as many levels up as it sits deep
    archive_path = Path(archive.__file__).resolve().relative_to(archive.REPO_DIR)
    staged_repo_dir = (root / "src" / archive_path).parents[len(archive_path.parts) - 1]
    assert staged_repo_dir == root / "src"
    assert requirements.declared(staged_repo_dir) == requirements.declared()


def test_the_stage_empties_the_caches_of_test_helpers_before_each_test(monkeypatch, tmp_path):
    """mutmut runs a mutant against the tests that called its function in the stats run: a test
    served by a helper's cache (workload_cases.build) called nothing and was never run against a
    mutant. The staged conftest empties those caches; product caches are left alone."""
    root = tmp_path / "stage"

    def counter() -> Callable[[], int]:
        calls: list[int] = []

        def build() -> int:
            calls.append(1)
            return len(calls)

        return build

    helpers = {}
    for name, where in (("cached_helper", root / "tests"), ("cached_product", root / "src")):
        module = types.ModuleType(name)
        module.__file__ = str(where / f"{name}.py")
        fn = counter()
        fn.__module__ = name
        module.build = functools.cache(fn)  # type: ignore[attr-defined]
        monkeypatch.setitem(sys.modules, name, module)
        helpers[name] = module.build  # type: ignore[attr-defined]
        assert (helpers[name](), helpers[name]()) == (1, 1)

    # a test module that imports a product function holds its cache too: not the test's own
    sys.modules["cached_helper"].imported = helpers["cached_product"]  # type: ignore[attr-defined]
    fixture_stub = types.SimpleNamespace(fixture=lambda **_: lambda f: f)
    namespace = {"pytest": fixture_stub, "__file__": str(root / "conftest.py")}
    exec(mutate.FRESH_HELPER_CACHES, namespace)
    namespace["_mutate_fresh_helper_caches"]()
    assert helpers["cached_helper"]() == 2  # built again: this test's calls are its own
    assert helpers["cached_product"]() == 1


def test_the_measurement_core_is_held_to_90_and_a_score_under_its_minimum_fails():
    """Issue 47: the A/B core, calibration's summary and rows, the decision, wake and the
    bundle's pods at 90 % or more; the others at THRESHOLD."""
    core = {"ab_order", "ab_spread", "ab_median_round", "ab_comparison", "calibration_summary"}
    core |= {"calibration_rows", "decision", "wake", "bundle_pods"}
    held = {t.name for t in mutate.TARGETS if t.minimum == mutate.CORE_THRESHOLD == 90.0}
    assert held == core
    assert all(t.minimum == mutate.THRESHOLD for t in mutate.TARGETS if t.name not in core)
    wake = mutate.selected("wake")
    assert mutate.below_minimum(wake, [mutate.Score("wake", 89, 100, 1.0)]) == ["wake 89.0% < 90%"]
    assert mutate.below_minimum(wake, [mutate.Score("wake", 90, 100, 1.0)]) == []
    sse = mutate.selected("sse")
    assert mutate.below_minimum(sse, [mutate.Score("sse", 86, 100, 1.0)]) == []
