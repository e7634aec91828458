"""tests/cpu_hog.py, the hog `make test-busy` runs the fast lane beside: it passes the command's
status on, and its spinners end: when it stops them, at their deadline, or when it is gone."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import cpu_hog
import pytest

HOG = Path(__file__).resolve().parent / "cpu_hog.py"


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_the_command_runs_beside_the_spinners_and_its_status_is_the_hogs() -> None:
    done = subprocess.run(
        [sys.executable, str(HOG), "--procs", "2", "--", sys.executable, "-c", "exit(3)"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 3
    assert "cpu_hog: 2 spinning processes beside:" in done.stdout
    assert "cpu_hog: exit 3 after" in done.stdout


def test_stopped_spinners_are_gone() -> None:
    pids = cpu_hog.start_spinners(2, max_seconds=3600)
    assert all(alive(pid) for pid in pids)
    cpu_hog.stop(pids)
    assert not any(alive(pid) for pid in pids)  # killed and reaped


def test_a_spinner_ends_by_itself_at_its_deadline() -> None:
    (pid,) = cpu_hog.start_spinners(1, max_seconds=0.05)
    assert os.waitpid(pid, 0) == (pid, 0)  # the event: it exited on its own, status 0


def test_a_spinner_ends_when_its_parent_is_gone() -> None:
    # a parent id that is not this process's parent: the loop sees it gone at once
    cpu_hog.spin(time.monotonic() + 3600, parent=-1)


@pytest.mark.parametrize(
    "argv",
    [["--procs", "2"], ["--procs", "-1", "--", "true"], ["--max-seconds", "0", "--", "true"]],
    ids=["no-command", "negative-procs", "zero-seconds"],
)
def test_bad_flags_exit_2(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        cpu_hog.parse(argv)
    assert exc.value.code == 2
