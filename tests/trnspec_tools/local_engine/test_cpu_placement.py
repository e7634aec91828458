"""The local server's CPU placement: the model worker alone on its cores, the rest off them."""

from __future__ import annotations

import os

import pytest

from trnspec_tools.local_engine.cpu_placement import (
    OMP_BIND_ENV,
    CpuPlacement,
    placement_for,
    running_on,
    split_cpus,
)


def test_the_worker_gets_every_cpu_but_the_last_and_the_rest_get_the_last():
    assert split_cpus([0, 1]) == CpuPlacement(engine=(0,), host=(1,))
    assert split_cpus({5, 2, 3, 4}) == CpuPlacement(engine=(2, 3, 4), host=(5,))
    assert split_cpus([0, 1]).env() == {OMP_BIND_ENV: "0"}  # type: ignore[union-attr]
    assert split_cpus([3, 0, 1, 2]).env() == {OMP_BIND_ENV: "0,1,2"}  # type: ignore[union-attr]


def test_one_cpu_is_not_split():
    assert split_cpus([0]) is None
    assert split_cpus([]) is None


def test_a_binding_the_user_chose_is_left_alone():
    assert placement_for({OMP_BIND_ENV: "nobind"}) is None


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no CPU affinity here")
def test_running_on_moves_this_process_and_restores_it():
    before = os.sched_getaffinity(0)
    target = {max(before)}
    with running_on(target):
        assert os.sched_getaffinity(0) == target
    assert os.sched_getaffinity(0) == before
    with running_on(None):
        assert os.sched_getaffinity(0) == before
