"""Where the local vLLM CPU server and its client run: the model worker on its own cores.

vLLM's CPU backend binds the model worker's OpenMP threads to some cores and "reserves" the rest
for everything else, but leaves the engine-core and API-server processes (and the benchmark
client) free to run anywhere, including on the worker's cores. The worker busy-polls its
message queue between steps, so whatever shares its core waits: measured on a 2-core host with
the tiny pair, plain decoding then stalled now and then (concurrency 8: 188-404 tok/s with TTFT
p90 of 1.6-2.6 s and whole replies arriving in one burst, against 961-1055 tok/s and TTFT p90
under 41 ms with the split below, 7 of 7 runs; the client kept off the worker's cores too:
1144-1202 tok/s). The split is explicit: the worker gets every allowed CPU but the last, the
server's other processes and the local client get the last one. With one CPU there is nothing
to split and nothing is pinned.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

#: vLLM's variable naming the CPUs of the model worker's OpenMP threads ("0-2" or "0,1,2").
OMP_BIND_ENV = "VLLM_CPU_OMP_THREADS_BIND"


@dataclass(frozen=True)
class CpuPlacement:
    """The model worker's CPUs and the host side's (API server, engine core, local client)."""

    engine: tuple[int, ...]
    host: tuple[int, ...]

    def env(self) -> dict[str, str]:
        """What tells vLLM to bind the worker to `engine`."""
        return {OMP_BIND_ENV: ",".join(str(c) for c in self.engine)}


def split_cpus(allowed: Iterable[int]) -> CpuPlacement | None:
    """All allowed CPUs but the last for the worker, the last for the rest; None for one CPU."""
    cpus = sorted(set(allowed))
    if len(cpus) < 2:
        return None
    return CpuPlacement(engine=tuple(cpus[:-1]), host=(cpus[-1],))


def allowed_cpus() -> set[int] | None:
    """This process's CPU affinity, or None where the platform does not expose it."""
    getter = getattr(os, "sched_getaffinity", None)
    return set(getter(0)) if getter is not None else None


def placement_for(environ: dict[str, str] | os._Environ[str]) -> CpuPlacement | None:
    """The split for this host, unless the user bound the worker themselves (then None)."""
    if OMP_BIND_ENV in environ:
        return None
    cpus = allowed_cpus()
    return split_cpus(cpus) if cpus is not None else None


def pin_self(cpus: Iterable[int]) -> None:
    """Restrict the calling process (and what it starts afterwards) to `cpus`."""
    os.sched_setaffinity(0, set(cpus))


@contextlib.contextmanager
def running_on(cpus: Iterable[int] | None) -> Iterator[None]:
    """Run the block with this process on `cpus` (the local client off the worker's cores),
    then restore the previous affinity; a no-op for None or where affinity is not available."""
    before = allowed_cpus()
    if cpus is None or before is None:
        yield
        return
    pin_self(cpus)
    try:
        yield
    finally:
        pin_self(before)
