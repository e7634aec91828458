"""Standard output whose reader went away (`trnspec profiles | head -1`, a pager quit early).

Nothing more can be shown and nothing went wrong: the command ends quietly with the code a
shell gives a command killed by SIGPIPE, instead of "Broken pipe" on stderr or a traceback.
Python ignores SIGPIPE, so the write raises BrokenPipeError; a socket's broken pipe raises the
same error, so stdout itself is asked (poll) whether its reader is gone before the error is
taken for one.
"""

from __future__ import annotations

import os
import select
import sys

#: What a shell reports for a command that wrote to a pipe nobody reads any more: 128 + SIGPIPE.
EXIT_READER_GONE = 141


def stdout_reader_gone(exc: BaseException) -> bool:
    """True when `exc` is the broken pipe of standard output (not of a socket or a file)."""
    if not isinstance(exc, BrokenPipeError):
        return False
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(event & select.POLLERR for _, event in poller.poll(0))
    except (OSError, ValueError, AttributeError):  # no stdout, a closed one, or no poll here
        return False


def quiet_exit() -> int:
    """Standard output pointed at /dev/null (so the interpreter's last flush of what is still
    buffered cannot fail again at exit), and the exit code to end with."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    finally:
        os.close(devnull)
    return EXIT_READER_GONE
