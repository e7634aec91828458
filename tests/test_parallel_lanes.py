"""How the slow lane runs on pytest-xdist workers (conftest.py): each worker's local vLLM servers
compute on a core of their own, and the tests of one costly shared fixture stay on one worker."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
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
SHARED_FIXTURES = _CONFTEST.SHARED_FIXTURES
omp_bind_for_worker = _CONFTEST.omp_bind_for_worker
pytest_collection_modifyitems = _CONFTEST.pytest_collection_modifyitems


def test_each_worker_binds_its_servers_to_its_own_core_round_robin() -> None:
    assert [omp_bind_for_worker(f"gw{i}", [0, 1]) for i in range(4)] == ["0", "1", "0", "1"]


def test_the_cores_are_the_ones_the_process_may_use_not_their_count() -> None:
    # a container limited to CPUs 5 and 2: worker 0 gets the first of them, not CPU 0
    assert omp_bind_for_worker("gw0", [5, 2]) == "2"
    assert omp_bind_for_worker("gw1", [5, 2]) == "5"


@pytest.mark.parametrize("worker", [None, "", "master", "gwx"])
def test_outside_xdist_vllm_keeps_its_own_binding(worker: str | None) -> None:
    assert omp_bind_for_worker(worker, [0, 1]) is None


@dataclass
class _Item:
    fixturenames: tuple[str, ...]
    markers: list[pytest.MarkDecorator] = field(default_factory=list)

    def add_marker(self, marker: pytest.MarkDecorator) -> None:
        self.markers.append(marker)


def _groups(item: _Item) -> list[str]:
    return [m.args[0] for m in item.markers if m.name == "xdist_group"]


def test_every_test_of_a_shared_fixture_is_in_its_group_and_no_other_test_is() -> None:
    users = [_Item(("tmp_path", name)) for name in sorted(SHARED_FIXTURES)]
    other = _Item(("tmp_path", "tiny_models"))
    pytest_collection_modifyitems([*users, other])  # type: ignore[list-item]
    assert [_groups(i) for i in users] == [[name] for name in sorted(SHARED_FIXTURES)]
    assert _groups(other) == []
    assert "speculative_server" in SHARED_FIXTURES
