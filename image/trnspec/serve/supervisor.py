"""The supervisor: runs vLLM as a child, keeps the readiness file honest, drains on a stop signal
and exits with the child's status."""

from __future__ import annotations

import logging
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from types import FrameType

from trnspec.serve.probes import ReadyFile

log = logging.getLogger("trnspec.serve")

FORWARDED_SIGNALS = (signal.SIGTERM, signal.SIGINT)
#: Exit status when a background thread failed and the server was stopped because of it.
EXIT_THREAD_FAILED = 70


def exit_status(returncode: int) -> int:
    """A child killed by signal N (Popen reports -N) exits the way a shell reports it: 128+N."""
    return 128 - returncode if returncode < 0 else returncode


class Supervisor:
    """Runs the server as a child, forwards stop signals, and keeps the readiness file honest.

    Drain: vLLM aborts in-flight requests on SIGTERM unless told otherwise (vLLM 0.32 needs
    --shutdown-timeout; the Neuron fork's 0.9.1 has no such flag). So on the first SIGTERM or
    SIGINT the supervisor withdraws readiness, waits while `busy()` reports requests in flight
    (at most `drain_timeout` seconds), and only then forwards the signal. A second signal is
    forwarded at once. `run` must be called from the main thread (Python delivers signals there).
    """

    def __init__(
        self,
        argv: Sequence[str],
        env: dict[str, str],
        probe: Callable[[], bool],
        ready: ReadyFile,
        *,
        poll_interval: float = 5.0,
        on_first_ready: Callable[[], None] | None = None,
        busy: Callable[[], bool | None] | None = None,
        drain_timeout: float = 0.0,
        drain_poll: float = 1.0,
    ) -> None:
        self.argv = list(argv)
        self.env = env
        self.probe = probe
        self.ready = ready
        self.poll_interval = poll_interval
        self.on_first_ready = on_first_ready
        self.busy = busy
        self.drain_timeout = drain_timeout
        self.drain_poll = drain_poll
        self._stopping = threading.Event()
        self._forwarded = threading.Event()
        # Readiness changes and the stop signal never interleave. Re-entrant: a second signal
        # can arrive while the first handler holds it, in the same (main) thread.
        self._lock = threading.RLock()
        self._child: subprocess.Popen[bytes] | None = None
        #: the name of a background thread that failed (the server was stopped because of it)
        self.failed_thread: str | None = None

    def _send(self, signum: int) -> None:
        self._forwarded.set()
        if self._child is not None and self._child.poll() is None:
            log.info(
                "forwarding %s to the server (pid %d)", signal.Signals(signum).name, self._child.pid
            )
            self._child.send_signal(signum)

    def _drain_then_send(self, signum: int) -> None:
        """Wait while requests are in flight (bounded by drain_timeout), then forward the signal;
        the signal is forwarded whatever happens in the wait (a probe that raises included)."""
        deadline = time.monotonic() + self.drain_timeout
        try:
            while not self._forwarded.is_set() and time.monotonic() < deadline:
                if self._child is None or self._child.poll() is not None:
                    return
                if self.busy is None or self.busy() is not True:
                    break
                time.sleep(min(self.drain_poll, max(0.0, deadline - time.monotonic())))
            else:
                if not self._forwarded.is_set():
                    log.warning(
                        "drain timeout (%.0fs): stopping with requests in flight",
                        self.drain_timeout,
                    )
        except Exception:
            log.exception("the drain failed; stopping the server now")
        finally:
            if not self._forwarded.is_set():
                self._send(signum)

    def _background(self, target: Callable[[], None], name: str) -> threading.Thread:
        """Start a daemon thread whose failure stops the server loudly: it is logged, readiness
        is withdrawn and SIGTERM is forwarded to the child, so `run` returns instead of leaving a
        pod that looks alive with a dead watcher."""

        def guarded() -> None:
            try:
                target()
            except Exception:
                log.critical(
                    "background thread %r failed; stopping the server", name, exc_info=True
                )
                self.failed_thread = name
                self._stopping.set()
                with self._lock:
                    self.ready.clear()
                self._send(signal.SIGTERM)

        thread = threading.Thread(target=guarded, name=name, daemon=True)
        thread.start()
        return thread

    def _forward(self, signum: int, _frame: FrameType | None) -> None:
        first = not self._stopping.is_set()
        self._stopping.set()
        with self._lock:
            self.ready.clear()  # leave the Service now; in-flight requests still finish
        if first and self.busy is not None and self.drain_timeout > 0:
            log.info(
                "%s: draining in-flight requests (at most %.0fs) before stopping the server",
                signal.Signals(signum).name,
                self.drain_timeout,
            )
            self._background(lambda: self._drain_then_send(signum), "drain")
        else:
            self._send(signum)

    def _watch(self) -> None:
        announced = False
        while not self._stopping.is_set() and self._child is not None:
            if self._child.poll() is not None:
                break
            ok = self.probe()
            with self._lock:
                if self._stopping.is_set():
                    break
                if ok:
                    self.ready.set()
                else:
                    self.ready.clear()
            if ok and not announced:
                announced = True
                log.info("model is answering: ready")
                if self.on_first_ready is not None:
                    self._background(self.on_first_ready, "first-ready")
            self._stopping.wait(self.poll_interval)

    def run(self) -> int:
        self.ready.clear()
        previous = {s: signal.getsignal(s) for s in FORWARDED_SIGNALS}
        for s in FORWARDED_SIGNALS:
            signal.signal(s, self._forward)
        try:
            # A session of its own: a terminal's Ctrl-C reaches the child once, through us.
            self._child = subprocess.Popen(self.argv, env=self.env, start_new_session=True)
            watcher = self._background(self._watch, "readiness")
            returncode = self._child.wait()
            self._stopping.set()
            watcher.join(timeout=5)
            if self.failed_thread is not None and returncode in (0, -signal.SIGTERM):
                return EXIT_THREAD_FAILED
            return exit_status(returncode)
        finally:
            self.ready.clear()
            for s, handler in previous.items():
                signal.signal(s, handler)
