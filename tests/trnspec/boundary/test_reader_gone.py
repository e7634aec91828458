"""A command whose standard output nobody reads any more (`| head -1`, a pager quit early) ends
quietly with 141, as a shell reports SIGPIPE; a broken pipe that is not stdout's is still an
error. Each case runs in its own interpreter whose stdout is a pipe with its reader closed."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence

from trnspec.boundary.reader_gone import EXIT_READER_GONE

#: A tool's main behind the boundary's decorator, printing more than a pipe holds.
TOOL = """
import sys
from trnspec.boundary.errors import exits_on_bad_input

@exits_on_bad_input("tool")
def main(argv=None):
    if sys.argv[1] == "socket":
        raise BrokenPipeError(32, "Broken pipe")  # a server hung up; stdout is fine
    for _ in range(10_000):
        print("a line of the report")
    return 0

sys.exit(main())
"""


def run(argv: Sequence[str], reader: bool) -> subprocess.CompletedProcess[str]:
    """`argv` with stdout a pipe whose reader is closed before it starts (or read whole)."""
    if reader:
        return subprocess.run(argv, capture_output=True, text=True, timeout=120)
    r, w = os.pipe()
    os.close(r)
    try:
        return subprocess.run(argv, stdout=w, stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(w)


def test_trnspec_ends_quietly_when_its_reader_is_gone():
    proc = run([sys.executable, "-m", "trnspec", "profiles"], reader=False)
    assert (proc.returncode, proc.stderr) == (EXIT_READER_GONE, "")


def test_a_tool_ends_quietly_when_its_reader_is_gone():
    proc = run([sys.executable, "-c", TOOL, "report"], reader=False)
    assert (proc.returncode, proc.stderr) == (EXIT_READER_GONE, "")


def test_a_tool_whose_reader_stays_prints_everything():
    proc = run([sys.executable, "-c", TOOL, "report"], reader=True)
    assert proc.returncode == 0 and proc.stdout.count("\n") == 10_000


def test_a_broken_pipe_that_is_not_stdouts_is_not_taken_for_a_gone_reader():
    proc = run([sys.executable, "-c", TOOL, "socket"], reader=True)
    assert proc.returncode == 1 and "BrokenPipeError" in proc.stderr
