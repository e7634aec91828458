"""How the slow lane runs on pytest-xdist workers (conftest.py): each worker's local vLLM servers
compute on a core of their own."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest


def _root_conftest() -> ModuleType:
    # by path: under a whole run, `import conftest` finds whichever conftest pytest loaded first
    spec = importlib.util.spec_from_file_location(
        "trnspec_root_conftest", Path(__file__).resolve().parents[1] / "conftest.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_CONFTEST = _root_conftest()
omp_bind_for_worker = _CONFTEST.omp_bind_for_worker


def test_each_worker_binds_its_servers_to_its_own_core_round_robin() -> None:
    assert [omp_bind_for_worker(f"gw{i}", [0, 1]) for i in range(4)] == ["0", "1", "0", "1"]


def test_the_cores_are_the_ones_the_process_may_use_not_their_count() -> None:
    # a container limited to CPUs 5 and 2: worker 0 gets the first of them, not CPU 0
    assert omp_bind_for_worker("gw0", [5, 2]) == "2"
    assert omp_bind_for_worker("gw1", [5, 2]) == "5"


@pytest.mark.parametrize("worker", [None, "", "master", "gwx"])
def test_outside_xdist_vllm_keeps_its_own_binding(worker: str | None) -> None:
    assert omp_bind_for_worker(worker, [0, 1]) is None


e2e_scope = _CONFTEST.e2e_scope


def test_every_end_to_end_file_is_one_unit_of_the_slow_lane_and_other_files_their_own() -> None:
    units = {
        e2e_scope(nodeid)
        for nodeid in (
            "tests/trnspec_tools/bench/test_bench_e2e.py::test_a",
            "tests/trnspec_tools/tune/test_tune_plain_e2e.py::test_b[1]",
        )
    }
    assert units == {_CONFTEST.E2E_SCOPE}
    assert e2e_scope("tests/trnspec/test_vllm_parsers.py::test_c[cpu]") == (
        "tests/trnspec/test_vllm_parsers.py"
    )
    # a name that only contains the word is a file of its own
    assert e2e_scope("tests/x/test_e2e_local.py::t") == "tests/x/test_e2e_local.py"


def test_a_test_using_the_shared_servers_outside_an_e2e_file_is_named() -> None:
    """Collection stops with a usage error naming it (conftest.pytest_collection_modifyitems)."""
    tests = [
        ("tests/a/test_bench_e2e.py::test_ok", ["tmp_path", "speculative_server"]),
        ("tests/a/test_other.py::test_no_servers", ["tmp_path", "tiny_models"]),
        ("tests/a/test_other.py::test_pool", ["local_servers"]),
        ("tests/a/test_e2e_local.py::test_plain", ["plain_server"]),
    ]
    assert _CONFTEST.server_users_outside_e2e_files(tests) == [
        "tests/a/test_other.py::test_pool",
        "tests/a/test_e2e_local.py::test_plain",
    ]


def test_the_slow_lane_hands_out_the_e2e_unit_first_and_other_tiny_model_users_last() -> None:
    rank = _CONFTEST.slow_lane_rank
    e2e = rank("tests/a/test_bench_e2e.py::t", ["tiny_models", "local_servers"])
    plain = rank("tests/infra/test_checkov.py::t", ["tmp_path"])
    builds = rank("tests/a/test_tiny_models.py::t", ["tiny_models"])
    assert e2e < plain < builds
