"""A local server's processes stopped while another server is measured.

An idle vLLM CPU server still polls from several threads; on a small host those threads take
cores from the server under test. Stopping the idle server's whole process group (SIGSTOP) for
the measurement, then continuing it (SIGCONT), leaves the measured server the host to itself.
A remote server (no process group here) is left alone.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterable, Iterator


@contextlib.contextmanager
def paused(pids: Iterable[int | None]) -> Iterator[None]:
    """Every process group in `pids` stopped for the block, then continued (None: a remote
    server, nothing to stop). A group is continued even when the block raises or a later
    group cannot be stopped. Our own group is never stopped: that would stop this process."""
    with contextlib.ExitStack() as stack:
        for pid in pids:
            if pid is None:
                continue
            if pid <= 1 or pid == os.getpgrp():
                raise ValueError(f"process group {pid} is not a server's own group")
            os.killpg(pid, signal.SIGSTOP)
            stack.callback(os.killpg, pid, signal.SIGCONT)
        yield
