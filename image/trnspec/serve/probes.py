"""Readiness: what the supervisor asks vLLM (is the model answering, are requests in flight) and
the file the Kubernetes probes read (trnspec.config.pod_contract.READY_FILE)."""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from trnspec.boundary import http_read
from trnspec.boundary.errors import BoundaryError
from trnspec.boundary.json_io import loads
from trnspec.boundary.write import write_file
from trnspec.config.pod_contract import METRICS_PATH, MODELS_PATH
from trnspec.config.serving import ServingConfig

log = logging.getLogger("trnspec.serve")

#: vLLM gauges of requests it holds; both exist in the V0 (Neuron fork) and V1 engines.
_IN_FLIGHT_GAUGES = ("vllm:num_requests_running", "vllm:num_requests_waiting")
#: The largest /v1/models answer read (a list of served names: a few KiB).
MAX_MODELS_BYTES = http_read.MAX_ANSWER_BYTES
#: The largest /metrics answer read (vLLM's exposition, histograms per model: hundreds of KiB).
MAX_METRICS_BYTES = 16 * 1024 * 1024


def probe_url(cfg: ServingConfig) -> str:
    """Where the supervisor asks the model: loopback when vLLM binds every interface."""
    host = cfg.server.host
    if host in {"0.0.0.0", "::", ""}:
        host = "127.0.0.1"
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{cfg.server.port}"


@dataclass(frozen=True)
class ModelProbe:
    """Called: True when GET /v1/models answers 200, whole within `timeout` seconds in all
    (trnspec.boundary.http_read.get: a server that trickles its answer cannot hold a probe), and
    lists the served model (`headers`: the API key's, since vLLM guards /v1 when it has one)."""

    base_url: str
    model: str
    timeout: float = 2.0
    #: Holds the API key: kept out of the repr, as everywhere the key is held.
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)

    def __call__(self) -> bool:
        try:
            answer = http_read.get(
                f"{self.base_url}{MODELS_PATH}",
                http_read.Bounds(self.timeout, MAX_MODELS_BYTES),
                headers=self.headers,
            )
            if answer.status != 200:
                return False
            listing = loads(answer.body, MODELS_PATH)
        except (http_read.ReadFailed, BoundaryError):
            return False
        served = listing.get("data") if isinstance(listing, dict) else None
        return isinstance(served, list) and any(
            isinstance(m, dict) and m.get("id") == self.model for m in served
        )


def http_probe(
    base_url: str, model: str, timeout: float = 2.0, headers: Mapping[str, str] | None = None
) -> ModelProbe:
    """The readiness probe of `model` served at `base_url` (see ModelProbe)."""
    return ModelProbe(base_url, model, timeout, dict(headers or {}))


def requests_in_flight(metrics_text: str) -> int | None:
    """Running + waiting requests from a Prometheus exposition; None when vLLM reports neither.
    Only finite, non-negative gauge values count (a NaN or +Inf sample is skipped: int() of it
    would raise in the drain thread)."""
    total, seen = 0.0, False
    for line in metrics_text.splitlines():
        name = line.split("{", 1)[0].split(" ", 1)[0]
        if name in _IN_FLIGHT_GAUGES:
            try:
                value = float(line.rsplit(" ", 1)[1])
            except (IndexError, ValueError):
                continue
            if math.isfinite(value) and value >= 0:
                total += value
                seen = True
    return int(total) if seen else None


@dataclass(frozen=True)
class BusyProbe:
    """Called: True while vLLM holds requests, False when idle, None when /metrics cannot tell.

    A /metrics answer that is not whole within `timeout` seconds in all (http_read.get) counts as
    busy: a loaded server answers slowly, and stopping it then would abort the requests the drain
    exists for (the drain's own deadline bounds the wait). A refused connection (nothing
    listening yet) or an answer over MAX_METRICS_BYTES cannot tell."""

    base_url: str
    timeout: float = 2.0

    def __call__(self) -> bool | None:
        try:
            answer = http_read.get(
                f"{self.base_url}{METRICS_PATH}", http_read.Bounds(self.timeout, MAX_METRICS_BYTES)
            )
        except http_read.ReadFailed as failed:
            return True if failed.kind == "timeout" else None
        if answer.status != 200:
            return None
        count = requests_in_flight(answer.body.decode("utf-8", errors="replace"))
        return None if count is None else count > 0


def http_busy(base_url: str, timeout: float = 2.0) -> BusyProbe:
    """The in-flight probe of the vLLM server at `base_url` (see BusyProbe)."""
    return BusyProbe(base_url, timeout)


class ReadyFile:
    """The readiness signal: present iff the model answered the last probe."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._warned = False

    def set(self) -> None:
        try:
            write_file(self.path, f"{time.time():.0f}\n")
        except OSError as err:  # e.g. a read-only root filesystem without a /tmp volume
            if not self._warned:
                self._warned = True
                log.warning("cannot write the readiness file %s: %s", self.path, err)

    def clear(self) -> None:
        self.path.unlink(missing_ok=True)
