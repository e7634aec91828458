"""An idle local server's whole process group is stopped while another is measured, and always
continued afterwards."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from trnspec_tools.local_engine.paused import paused

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")

#: a parent that starts a child in its own group, prints the child's pid, then waits
GROUP = (
    "import subprocess, sys, time\n"
    "c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
    "print(c.pid, flush=True)\n"
    "time.sleep(600)\n"
)


def state(pid: int) -> str:
    """The process's state letter (T: stopped), from /proc."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def settled(pid: int, want: str) -> str:
    """The state once it reads `want`, or whatever it reads after a bounded wait (signals are
    delivered asynchronously; this bounds the wait, it asserts nothing about speed)."""
    for _ in range(500):
        if (now := state(pid)) == want:
            return now
        time.sleep(0.01)
    return state(pid)


@contextlib.contextmanager
def process_group() -> Iterator[tuple[int, int]]:
    """A leader and its child, in a new process group: (group id, child pid)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", GROUP], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        assert proc.stdout is not None
        child = int(proc.stdout.readline())
        yield proc.pid, child
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def test_the_whole_group_is_stopped_in_the_block_and_continued_after_it():
    with process_group() as (group, child):
        with paused([group]):
            assert settled(group, "T") == "T"
            assert settled(child, "T") == "T"
        assert settled(group, "S") != "T"
        assert settled(child, "S") != "T"


def test_a_group_is_continued_when_the_block_raises():
    with process_group() as (group, child):
        with pytest.raises(RuntimeError), paused([group]):
            assert settled(child, "T") == "T"
            raise RuntimeError("measurement failed")
        assert settled(child, "S") != "T"


def test_a_remote_server_has_nothing_to_stop_and_other_groups_still_stop():
    with process_group() as (group, child), paused([None, group]):
        assert settled(child, "T") == "T"


def test_groups_stopped_before_a_failure_are_continued():
    with process_group() as (group, child):
        with pytest.raises(ProcessLookupError), paused([group, 2**22 + 12345]):
            pass
        assert settled(child, "S") != "T"


@pytest.mark.parametrize("pid", [0, 1, -5, "own"])
def test_our_own_group_or_no_group_is_refused_and_groups_stopped_before_are_continued(pid):
    pid = os.getpgrp() if pid == "own" else pid
    with process_group() as (group, child):
        with pytest.raises(ValueError, match="not a server's own group"), paused([group, pid]):
            pass
        assert settled(child, "S") != "T"
