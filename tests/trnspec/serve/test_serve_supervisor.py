"""The supervisor with a tiny fake child server instead of vLLM: signal forwarding, drain,
readiness and exit codes.

No test depends on how fast the host is: the end-to-end tests wait for events (a file the driver
or the child writes, the driver's exit), bounded only by a hang guard (serve_fakes.HANG_S), and
the drain's timing is tested on an injected clock."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
import trnspec.serve.supervisor as supervisor_module
from serve_fakes import FAKE_SERVER, HANG_S, free_port, wait_for
from trnspec.serve.probes import ReadyFile
from trnspec.serve.supervisor import Supervisor, exit_status

DRIVER = textwrap.dedent(
    """
    import faulthandler, logging, os, signal, sys, threading
    from pathlib import Path
    from trnspec.serve.probes import ReadyFile, http_probe
    from trnspec.serve.supervisor import Supervisor

    work, port, drain, receiver = Path(sys.argv[1]), sys.argv[2], float(sys.argv[3]), sys.argv[4]
    if receiver == "other-thread":
        # The kernel may deliver a process's signal to any thread that does not block it; make
        # it always another one: a thread started now takes them, every thread started later
        # (the supervisor's, which inherit the main thread's mask) blocks them, as does main.
        threading.Thread(target=threading.Event().wait, name="receiver", daemon=True).start()
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
    # Diagnostics for a test that times out: the supervisor's log, and every thread's stack on
    # SIGUSR1 (stopped_within sends it before failing).
    logging.basicConfig(level=logging.INFO, format="driver %(threadName)s: %(message)s")
    faulthandler.register(signal.SIGUSR1, all_threads=True)

    def first_ready():
        with (work / "first-ready").open("a") as fh:
            fh.write("x")

    def busy():
        # whether a request is in flight, as the test says (a file), each look counted: an event
        # the test waits on (an HTTP probe with a timeout would answer "unknown" on a busy host
        # and end the drain; http_busy has its own tests in test_serve_probes.py)
        with (work / "busy-polls").open("a") as fh:
            fh.write("x")
        return (work / "busy").exists()

    sup = Supervisor(
        [sys.executable, str(work / "fake_server.py"), port, "fake-model", str(work), "0.5"],
        dict(os.environ),
        http_probe(f"http://127.0.0.1:{port}", "fake-model", timeout=5.0),
        ReadyFile(work / "ready"),
        poll_interval=0.1,
        on_first_ready=first_ready,
        busy=busy,
        drain_timeout=drain,
        drain_poll=0.1,
    )
    sys.exit(sup.run())
    """
)


def stopped_within(proc: subprocess.Popen[bytes], timeout: float = HANG_S) -> int:
    """The driver's exit code, waited for (the event), bounded by the hang guard only; a driver
    still running then has its threads' stacks dumped (to this test's captured stderr) and the
    test fails naming the bound."""
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGUSR1)
        time.sleep(1.0)
        pytest.fail(f"the supervisor did not exit within {timeout} s (thread stacks above)")


def busy_polls(work: Path) -> int:
    """How many times the driver's drain has asked whether a request is in flight."""
    polls = work / "busy-polls"
    return len(polls.read_text()) if polls.exists() else 0


@pytest.fixture
def start_driver(tmp_path: Path) -> Any:
    """Start the supervisor (in its own process, so signals never hit pytest) over a fake child."""
    (tmp_path / "fake_server.py").write_text(FAKE_SERVER)
    (tmp_path / "driver.py").write_text(DRIVER)
    procs: list[subprocess.Popen[bytes]] = []

    def start(
        drain_timeout: float = 0.0, receiver: str = "any-thread"
    ) -> tuple[subprocess.Popen[bytes], Path]:
        argv = [sys.executable, str(tmp_path / "driver.py"), str(tmp_path), str(free_port())]
        procs.append(subprocess.Popen([*argv, str(drain_timeout), receiver]))
        return procs[-1], tmp_path

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    child_pid = tmp_path / "child.pid"
    if child_pid.exists():  # a failed test can leave the fake server (own session) behind
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(child_pid.read_text()), signal.SIGKILL)


@pytest.fixture
def driver(start_driver: Any) -> Any:
    return start_driver()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_stop_signal_is_forwarded_and_the_child_drains(driver: Any, sig: signal.Signals) -> None:
    proc, work = driver
    ready = work / "ready"
    seen_ready_before_listening = False

    def became_ready() -> bool:
        nonlocal seen_ready_before_listening
        if ready.exists() and not (work / "listening").exists():
            seen_ready_before_listening = True
        return ready.exists()

    assert wait_for(became_ready), "the readiness file never appeared"
    assert not seen_ready_before_listening
    assert wait_for(lambda: (work / "first-ready").exists())
    proc.send_signal(sig)
    assert stopped_within(proc) == 0  # the child's own exit code
    assert (work / "child-signal").read_text() == sig.name
    assert (work / "drained").exists()
    assert not ready.exists()


def test_readiness_follows_the_model_and_first_ready_runs_once(driver: Any) -> None:
    proc, work = driver
    ready = work / "ready"
    assert wait_for(ready.exists)
    (work / "sick").write_text("")
    assert wait_for(lambda: not ready.exists()), "readiness kept while the model fails"
    (work / "sick").unlink()
    assert wait_for(ready.exists)
    proc.terminate()
    stopped_within(proc)
    assert (work / "first-ready").read_text() == "x"


def test_stop_waits_for_in_flight_requests_before_forwarding(start_driver: Any) -> None:
    proc, work = start_driver(drain_timeout=HANG_S)  # the test ends the request, not the clock
    assert wait_for((work / "ready").exists)
    (work / "busy").write_text("")  # vLLM reports one running request
    proc.terminate()
    assert wait_for(lambda: not (work / "ready").exists())  # out of the Service now
    assert wait_for(lambda: busy_polls(work) >= 3)  # the drain saw the request three times
    assert not (work / "child-signal").exists(), "stopped vLLM while a request was running"
    (work / "busy").unlink()  # the request finishes
    assert stopped_within(proc) == 0
    assert (work / "child-signal").read_text() == "SIGTERM"


def test_a_second_signal_stops_at_once_without_waiting_for_the_drain(start_driver: Any) -> None:
    proc, work = start_driver(drain_timeout=HANG_S)
    assert wait_for((work / "ready").exists)
    (work / "busy").write_text("")
    proc.terminate()
    # the first signal was handled (the drain is asking): the SIGINT is the second one (sent
    # at once, both could be pending together, and Python runs SIGINT's handler first)
    assert wait_for(lambda: busy_polls(work) >= 1)
    proc.send_signal(signal.SIGINT)
    assert stopped_within(proc) == 0
    assert (work / "child-signal").read_text() == "SIGINT"


def test_stop_signals_taken_by_another_thread_are_acted_on(start_driver: Any) -> None:
    """The kernel hands a process's signal to any thread that does not block it; Python runs
    the handler in the main thread only when that thread next runs Python code. A main thread
    blocked in one waitpid (Popen.wait() without a timeout) never did: readiness kept being
    polled, no drain started, until the hang guard (the load-8 failure of this file)."""
    proc, work = start_driver(drain_timeout=HANG_S, receiver="other-thread")
    assert wait_for((work / "ready").exists)
    (work / "busy").write_text("")
    proc.terminate()
    assert wait_for(lambda: busy_polls(work) >= 1), "the first signal was never acted on"
    assert not (work / "ready").exists()
    proc.send_signal(signal.SIGINT)
    assert stopped_within(proc) == 0
    assert (work / "child-signal").read_text() == "SIGINT"


def test_a_stop_signal_before_the_model_is_ready_stops_the_server(
    start_driver: Any, tmp_path: Path
) -> None:
    (tmp_path / "sick").write_text("")  # the server listens but never lists the model
    proc, work = start_driver(receiver="other-thread")
    assert wait_for((work / "listening").exists)  # its own handlers are installed by then
    proc.terminate()
    assert stopped_within(proc) == 0
    assert (work / "child-signal").read_text() == "SIGTERM"
    assert not (work / "ready").exists() and not (work / "first-ready").exists()


def test_a_stop_signal_before_the_server_starts_means_it_never_starts(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    started: list[list[str]] = []
    real_popen = subprocess.Popen

    def popen(argv: list[str], **kwargs: Any) -> subprocess.Popen[bytes]:
        started.append(argv)
        return real_popen(argv, **kwargs)

    monkeypatch.setattr(supervisor_module.subprocess, "Popen", popen)
    sup = Supervisor(
        [sys.executable, "-c", "pass"], dict(os.environ), never_ready, ReadyFile(tmp_path / "r")
    )
    sup._on_signal(signal.SIGTERM, None)  # as the handler does on a signal before the start
    assert sup.run() == 128 + signal.SIGTERM
    assert started == []


class FakeClock:
    """The supervisor module's `time` in a test: monotonic() reads it, sleep() advances it."""

    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


class FakeChild:
    """A running child that records the signals it is sent."""

    pid = 4242

    def __init__(self) -> None:
        self.signals: list[int] = []

    def poll(self) -> int | None:
        return None

    def send_signal(self, signum: int) -> None:
        self.signals.append(signum)


def drained(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, busy_answers: list[bool | None]
) -> tuple[FakeClock, FakeChild, int]:
    """Drain on a fake clock (timeout 30 s, a look every 1 s) with `busy` answering in turn
    (then True for ever): the clock, the child and how many times busy was asked."""
    clock, child, asked = FakeClock(), FakeChild(), []
    monkeypatch.setattr(supervisor_module, "time", clock)

    def busy() -> bool | None:
        asked.append(clock.now)
        return busy_answers[len(asked) - 1] if len(asked) <= len(busy_answers) else True

    sup = Supervisor(
        ["true"], {}, lambda: True, ReadyFile(tmp_path / "r"), busy=busy, drain_timeout=30,
        drain_poll=1.0,
    )  # fmt: skip
    sup._child = child  # type: ignore[assignment]
    sup._drain_then_send(signal.SIGTERM)
    return clock, child, len(asked)


def test_drain_gives_up_after_the_timeout(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    clock, child, asked = drained(monkeypatch, tmp_path, [])
    assert child.signals == [signal.SIGTERM]  # forwarded once, with requests still in flight
    assert clock.now == 30.0 and asked == 30  # a look a second until the 30 s were spent


def test_drain_forwards_as_soon_as_nothing_is_in_flight(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    clock, child, asked = drained(monkeypatch, tmp_path, [True, True, True, False])
    assert child.signals == [signal.SIGTERM]
    assert clock.now == 3.0 and asked == 4


def test_an_unknown_busy_answer_ends_the_drain(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """None (the probe could not tell) is not "busy": the drain does not hold a stop on it."""
    clock, child, asked = drained(monkeypatch, tmp_path, [True, None])
    assert child.signals == [signal.SIGTERM]
    assert clock.now == 1.0 and asked == 2


def never_ready() -> bool:
    return False


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("import sys; sys.exit(3)", 3),
        ("import os, signal; os.kill(os.getpid(), signal.SIGKILL)", 128 + 9),
    ],
)
def test_child_exit_status_is_the_supervisors(tmp_path: Path, code: str, expected: int) -> None:
    ready = ReadyFile(tmp_path / "ready")
    sup = Supervisor(
        [sys.executable, "-c", code], dict(os.environ), never_ready, ready, poll_interval=0.05
    )
    assert sup.run() == expected
    assert not ready.path.exists()


def test_signal_handlers_are_restored_after_run(tmp_path: Path) -> None:
    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    Supervisor(
        [sys.executable, "-c", "pass"], dict(os.environ), never_ready, ReadyFile(tmp_path / "r")
    ).run()
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before


@pytest.mark.parametrize(("rc", "status"), [(0, 0), (1, 1), (-15, 143), (-9, 137)])
def test_exit_status_reports_signals_like_a_shell(rc: int, status: int) -> None:
    assert exit_status(rc) == status


def _sleeping_child() -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])


def test_the_stop_signal_is_forwarded_even_when_the_busy_probe_raises(tmp_path: Path) -> None:
    def broken_busy() -> bool:
        raise ValueError("cannot convert float NaN to integer")

    sup = Supervisor(
        ["true"],
        {},
        lambda: True,
        ReadyFile(tmp_path / "ready"),
        busy=broken_busy,
        drain_timeout=30,
        drain_poll=0.01,
    )
    child = _sleeping_child()
    sup._child = child
    try:
        sup._drain_then_send(signal.SIGTERM)
        assert child.wait(timeout=30) == -signal.SIGTERM
    finally:
        with contextlib.suppress(ProcessLookupError):
            child.kill()


def test_a_failed_readiness_thread_stops_the_server_loudly(tmp_path: Path) -> None:
    from trnspec.serve.supervisor import EXIT_THREAD_FAILED

    def broken_probe() -> bool:
        raise RuntimeError("probe exploded")

    sup = Supervisor(
        [sys.executable, "-c", "import time; time.sleep(60)"],
        dict(os.environ),
        broken_probe,
        ReadyFile(tmp_path / "ready"),
        poll_interval=0.01,
    )
    assert sup.run() == EXIT_THREAD_FAILED
    assert sup.failed_thread == "readiness"
    assert not (tmp_path / "ready").exists()
