"""Run a command beside a CPU hog: busy processes on every core, as on a shared, loaded host.

    python tests/cpu_hog.py [--procs N] [--max-seconds S] -- COMMAND...

Starts N spinning processes (default two per core the process may run on: with the fast lane's
own workers, a 2-core host then runs at a load of about 8), runs COMMAND, stops the spinners and
exits with COMMAND's status. The hog is bounded on its own: each spinner stops after
--max-seconds, or as soon as this process is gone (its parent changes), so a killed run leaves
nothing spinning. `make test-busy` runs the fast lane this way: the suite must not depend on how
fast the machine is (tests take time from records, events or injected clocks).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence

#: Longest a spinner runs whatever happens (the fast lane takes minutes on 2 cores).
DEFAULT_MAX_SECONDS = 3600.0


def spin(deadline: float, parent: int) -> None:
    """Burn one core until the deadline or until the parent is gone."""
    while time.monotonic() < deadline and os.getppid() == parent:
        for _ in range(200_000):
            pass


def start_spinners(count: int, max_seconds: float) -> list[int]:
    """`count` forked spinners, each stopping by itself after `max_seconds`: their pids."""
    deadline = time.monotonic() + max_seconds
    parent = os.getpid()
    pids = []
    for _ in range(count):
        pid = os.fork()
        if pid == 0:  # the spinner: never returns into the caller's code
            try:
                signal.signal(signal.SIGINT, signal.SIG_DFL)
                spin(deadline, parent)
            finally:
                os._exit(0)
        pids.append(pid)
    return pids


def stop(pids: Sequence[int]) -> None:
    """End the spinners this process started (by pid) and reap them."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    for pid in pids:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)


def run_beside_hog(command: Sequence[str], procs: int, max_seconds: float) -> int:
    """COMMAND's exit status, run while `procs` spinners keep the cores busy."""
    pids = start_spinners(procs, max_seconds)
    try:
        return subprocess.call(list(command))
    finally:
        stop(pids)


def parse(argv: Sequence[str]) -> argparse.Namespace:
    cores = len(os.sched_getaffinity(0))
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument(
        "--procs", type=int, default=2 * cores, help=f"spinning processes (default {2 * cores})"
    )
    p.add_argument(
        "--max-seconds",
        type=float,
        default=DEFAULT_MAX_SECONDS,
        help="each spinner stops after this long whatever happens",
    )
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND...")
    args = p.parse_args(argv)
    if args.command[:1] == ["--"]:
        args.command = args.command[1:]
    if not args.command:
        p.error("give the command to run after --")
    if not 0 <= args.procs <= 256:
        p.error(f"--procs={args.procs}: must be within 0..256")
    if not 0 < args.max_seconds <= 86_400:
        p.error(f"--max-seconds={args.max_seconds}: must be within (0, 86400]")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    started = time.monotonic()
    print(f"cpu_hog: {args.procs} spinning processes beside: {' '.join(args.command)}", flush=True)
    code = run_beside_hog(args.command, args.procs, args.max_seconds)
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"cpu_hog: exit {code} after {time.monotonic() - started:.0f} s; load average {load}",
        flush=True,
    )
    return code


if __name__ == "__main__":
    sys.exit(main())
