"""The supervisor: runs vLLM as a child, keeps the readiness file honest, drains on a stop signal
and exits with the child's status."""

from __future__ import annotations

import logging
import signal
import subprocess
import threading
import time
from collections import deque
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
    forwarded at once. `run` must be called from the main thread (Python runs handlers there).

    Signals: the handler only records the signal; `run`'s loop acts on it. The kernel may deliver
    a process's signal to any of its threads, and Python then runs the handler only when the main
    thread next runs Python code: a main thread blocked in `Popen.wait()` (one waitpid call, only
    interrupted when the signal lands on it) would run it when the child exits, i.e. never. So
    the main thread never blocks for longer than `signal_poll`, and a signal that arrives
    before the child is started, before it is ready, or between its start and its record is
    acted on all the same (one arriving before the child is started means it is never started).
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
        signal_poll: float = 0.2,
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
        self.signal_poll = signal_poll
        self._stopping = threading.Event()
        self._forwarded = threading.Event()
        #: stop signals received and not acted on yet, oldest first: the handler appends (no
        #: lock: a handler taking a lock the interrupted main thread holds would deadlock)
        self._received: deque[int] = deque()
        # Readiness changes and the stop never interleave (never taken in a signal handler).
        self._lock = threading.Lock()
        # The drain's forward and a second signal's forward: one at a time, the drain's only
        # when nothing was forwarded yet.
        self._send_lock = threading.Lock()
        self._child: subprocess.Popen[bytes] | None = None
        #: the name of a background thread that failed (the server was stopped because of it)
        self.failed_thread: str | None = None

    def _send(self, signum: int, *, unless_forwarded: bool = False) -> None:
        with self._send_lock:
            if unless_forwarded and self._forwarded.is_set():
                return
            self._forwarded.set()
            if self._child is not None and self._child.poll() is None:
                log.info(
                    "forwarding %s to the server (pid %d)",
                    signal.Signals(signum).name,
                    self._child.pid,
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
            self._send(signum, unless_forwarded=True)

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

    def _on_signal(self, signum: int, _frame: FrameType | None) -> None:
        """The signal handler: records the signal and nothing else (run's loop acts on it)."""
        self._received.append(signum)

    def _act_on_received(self) -> None:
        while self._received:
            self._stop(self._received.popleft())

    def _stop(self, signum: int) -> None:
        """A stop signal: withdraw readiness, then drain and forward it (the first) or forward it
        at once (a second one, or no drain configured)."""
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

    def _wait_child(self, child: subprocess.Popen[bytes]) -> int:
        """The child's return code, acting on each stop signal as it comes (never blocked in
        one wait longer than signal_poll: see the class's note on signals)."""
        while True:
            self._act_on_received()
            try:
                return child.wait(timeout=self.signal_poll)
            except subprocess.TimeoutExpired:
                continue

    def run(self) -> int:
        self.ready.clear()
        previous = {s: signal.getsignal(s) for s in FORWARDED_SIGNALS}
        for s in FORWARDED_SIGNALS:
            signal.signal(s, self._on_signal)
        try:
            if self._received:
                name = signal.Signals(self._received[0]).name
                log.info("%s before the server started: not starting it", name)
                return exit_status(-self._received[0])
            # A session of its own: a terminal's Ctrl-C reaches the child once, through us.
            self._child = subprocess.Popen(self.argv, env=self.env, start_new_session=True)
            watcher = self._background(self._watch, "readiness")
            returncode = self._wait_child(self._child)
            self._stopping.set()
            watcher.join(timeout=5)
            if self.failed_thread is not None and returncode in (0, -signal.SIGTERM):
                return EXIT_THREAD_FAILED
            return exit_status(returncode)
        finally:
            self.ready.clear()
            for s, handler in previous.items():
                signal.signal(s, handler)
