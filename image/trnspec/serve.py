"""`python -m trnspec serve`: the pod's entrypoint around vLLM.

Order of work, each step refusing early what would fail late:
1. validate the config (exit 2 listing every problem: nothing is downloaded for a bad config);
2. stage S3 model sources to local disk (verified, resumable: trnspec.staging), then run the
   checks again on the staged copies, whose config.json files are now readable;
3. pull compiled Neuron artifacts from the S3 compile cache under the config's cache key
   (trnspec.cache_key); a hit skips a compile of tens of minutes;
4. render the exact vLLM command (trnspec.render) and run it as a child process; on SIGTERM or
   SIGINT, withdraw readiness, wait until vLLM's /metrics shows no request in flight (at most
   --drain-timeout), then forward the signal (Kubernetes sends SIGTERM and waits
   terminationGracePeriodSeconds); the exit code is the child's (128+N for signal N);
5. once the model answers, and only if the cache was empty, publish the fresh compile (manifest
   last, so other pods never pick up a partial cache).

Readiness, for the Kubernetes probes: a file (default /tmp/trnspec-ready, `--ready-file`) that
exists only while the model answers GET /v1/models with its served name. It is written when the
first probe succeeds, removed when a probe fails, as soon as SIGTERM arrives (so the pod leaves
the Service while it drains), and when vLLM exits:

    readinessProbe: {exec: {command: [test, -f, /tmp/trnspec-ready]}, periodSeconds: 5}
    startupProbe:   {exec: {command: [test, -f, /tmp/trnspec-ready]}, periodSeconds: 30,
                     failureThreshold: 120}   # a cold Neuron compile takes tens of minutes
    livenessProbe:  {httpGet: {path: /health, port: 8000}}  # only after the startupProbe passed

(An httpGet readiness probe on /v1/models, as infra/workload uses, is equivalent while serving;
the file additionally turns false the moment SIGTERM arrives.)

`--compile-only` (the precompile Job): exit 0 at once if the cache already holds the key;
otherwise stage, start vLLM, publish the compile when it first answers, stop vLLM, and exit 0
only if the compile was published.

Pure planning (`plan_serve`) is separate from the I/O (`execute`, `Supervisor`), so tests cover the
plan without AWS and the supervisor with a tiny fake child instead of vLLM.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any, TypeVar

from trnspec.api_key import auth_headers, child_env, load_api_key
from trnspec.cache_key import compile_cache_key
from trnspec.config import ConfigError, ModelRef, Problem, ServingConfig, apply_overrides
from trnspec.images import image_spec
from trnspec.render import COMPILED_ROOT, MODELS_ROOT, RenderedCommand, local_model_dir, render
from trnspec.staging import (
    S3Location,
    StagingError,
    TransferSettings,
    download,
    fetch_manifest,
    is_s3_uri,
    parse_s3_uri,
    pull_compiled,
    push_compiled,
    rich_progress,
    s3_client,
)

log = logging.getLogger("trnspec.serve")
T = TypeVar("T")

DEFAULT_READY_FILE = "/tmp/trnspec-ready"
EXIT_STAGING_FAILED = 1
FORWARDED_SIGNALS = (signal.SIGTERM, signal.SIGINT)


# --- planning (pure) ---------------------------------------------------------------------------


@dataclass(frozen=True)
class StageStep:
    """One model to fetch from S3 before vLLM starts."""

    field: str  # "target" | "speculation.draft"
    source: str  # s3://bucket/prefix
    local_dir: str


@dataclass(frozen=True)
class CacheStep:
    """Compiled artifacts: where they live locally and in S3, under which key."""

    key: str
    local_dir: str
    cache_root: str | None  # s3://bucket/prefix of the shared cache; None: no S3 cache

    @property
    def remote(self) -> str | None:
        """s3://.../<key>: where this config's compile is published."""
        if not self.cache_root:
            return None
        return str(parse_s3_uri(self.cache_root, require_key=False).child(self.key))


@dataclass(frozen=True)
class ServePlan:
    stage: tuple[StageStep, ...]
    cache: CacheStep | None
    command: RenderedCommand
    staged_overrides: tuple[str, ...] = field(default=())  # --set items pointing at staged dirs

    def to_json(self) -> str:
        return json.dumps(
            {
                "stage": [asdict(s) for s in self.stage],
                "cache": {**asdict(self.cache), "remote": self.cache.remote}
                if self.cache
                else None,
                "command": {
                    "image": self.command.image,
                    "argv": self.command.argv,
                    "env": self.command.env,
                },
            },
            indent=2,
        )


def _model_refs(cfg: ServingConfig) -> list[tuple[str, ModelRef]]:
    refs = [("target", cfg.target)]
    if cfg.speculation.method != "none" and cfg.speculation.draft is not None:
        refs.append(("speculation.draft", cfg.speculation.draft))
    return refs


def plan_serve(
    cfg: ServingConfig,
    *,
    models_root: str = MODELS_ROOT,
    compiled_root: str = COMPILED_ROOT,
    compile_cache: str | None = None,
    python: str = sys.executable,
) -> ServePlan:
    """What serve will do for a validated config: no I/O, no environment reads."""
    stage = tuple(
        StageStep(name, ref.source, local_model_dir(ref, models_root))
        for name, ref in _model_refs(cfg)
        if is_s3_uri(ref.source)
    )
    spec = image_spec(cfg.image)
    cache = None
    compiled_dir = compiled_root
    if spec.compile_cache_env:
        key = compile_cache_key(cfg)
        compiled_dir = f"{compiled_root.rstrip('/')}/{key}"
        root = str(parse_s3_uri(compile_cache, require_key=False)) if compile_cache else None
        cache = CacheStep(key, compiled_dir, root)
    command = render(cfg, models_root=models_root, compiled_dir=compiled_dir)
    if command.argv and command.argv[0] == "python":
        # The CPU build's console script is broken; run its module with this interpreter.
        command = command.model_copy(update={"argv": [python, *command.argv[1:]]})
    overrides = tuple(f"{s.field}.source={s.local_dir}" for s in stage)
    return ServePlan(stage, cache, command, overrides)


def probe_url(cfg: ServingConfig) -> str:
    """Where the supervisor asks the model: loopback when vLLM binds every interface."""
    host = cfg.server.host
    if host in {"0.0.0.0", "::", ""}:
        host = "127.0.0.1"
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{cfg.server.port}"


def exit_status(returncode: int) -> int:
    """A child killed by signal N (Popen reports -N) exits the way a shell reports it: 128+N."""
    return 128 - returncode if returncode < 0 else returncode


# --- readiness and the child process (I/O) -----------------------------------------------------


def http_probe(
    base_url: str, model: str, timeout: float = 2.0, headers: Mapping[str, str] | None = None
) -> Callable[[], bool]:
    """True when GET /v1/models answers 200 and lists the served model (`headers`: the API
    key's, since vLLM guards /v1 when it has one)."""

    def probe() -> bool:
        import httpx

        try:
            response = httpx.get(
                f"{base_url}/v1/models", timeout=timeout, headers=dict(headers or {})
            )
            if response.status_code != 200:
                return False
            return any(m.get("id") == model for m in response.json().get("data", []))
        except (httpx.HTTPError, ValueError, AttributeError):
            return False

    return probe


#: vLLM gauges of requests it holds; both exist in the V0 (Neuron fork) and V1 engines.
_IN_FLIGHT_GAUGES = ("vllm:num_requests_running", "vllm:num_requests_waiting")


def requests_in_flight(metrics_text: str) -> int | None:
    """Running + waiting requests from a Prometheus exposition; None when vLLM reports neither."""
    total, seen = 0.0, False
    for line in metrics_text.splitlines():
        name = line.split("{", 1)[0].split(" ", 1)[0]
        if name in _IN_FLIGHT_GAUGES:
            try:
                total += float(line.rsplit(" ", 1)[1])
                seen = True
            except (IndexError, ValueError):
                continue
    return int(total) if seen else None


def http_busy(base_url: str, timeout: float = 2.0) -> Callable[[], bool | None]:
    """True while vLLM holds requests, False when idle, None when /metrics cannot tell."""

    def busy() -> bool | None:
        import httpx

        try:
            response = httpx.get(f"{base_url}/metrics", timeout=timeout)
        except httpx.HTTPError:
            return None
        if response.status_code != 200:
            return None
        count = requests_in_flight(response.text)
        return None if count is None else count > 0

    return busy


class ReadyFile:
    """The readiness signal: present iff the model answered the last probe."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._warned = False

    def set(self) -> None:
        tmp = self.path.with_name(self.path.name + ".tmp")
        try:
            tmp.write_text(f"{time.time():.0f}\n")
            os.replace(tmp, self.path)
        except OSError as err:  # e.g. a read-only root filesystem without a /tmp volume
            if not self._warned:
                self._warned = True
                log.warning("cannot write the readiness file %s: %s", self.path, err)

    def clear(self) -> None:
        self.path.unlink(missing_ok=True)


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

    def _send(self, signum: int) -> None:
        self._forwarded.set()
        if self._child is not None and self._child.poll() is None:
            log.info(
                "forwarding %s to the server (pid %d)", signal.Signals(signum).name, self._child.pid
            )
            self._child.send_signal(signum)

    def _drain_then_send(self, signum: int) -> None:
        deadline = time.monotonic() + self.drain_timeout
        while not self._forwarded.is_set() and time.monotonic() < deadline:
            if self._child is None or self._child.poll() is not None:
                return
            if self.busy is None or self.busy() is not True:
                break
            time.sleep(self.drain_poll)
        else:
            if not self._forwarded.is_set():
                log.warning(
                    "drain timeout (%.0fs): stopping with requests in flight", self.drain_timeout
                )
        if not self._forwarded.is_set():
            self._send(signum)

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
            threading.Thread(
                target=self._drain_then_send, args=(signum,), name="drain", daemon=True
            ).start()
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
                    threading.Thread(
                        target=self.on_first_ready, name="first-ready", daemon=True
                    ).start()
            self._stopping.wait(self.poll_interval)

    def run(self) -> int:
        self.ready.clear()
        previous = {s: signal.getsignal(s) for s in FORWARDED_SIGNALS}
        for s in FORWARDED_SIGNALS:
            signal.signal(s, self._forward)
        try:
            # A session of its own: a terminal's Ctrl-C reaches the child once, through us.
            self._child = subprocess.Popen(self.argv, env=self.env, start_new_session=True)
            watcher = threading.Thread(target=self._watch, name="readiness", daemon=True)
            watcher.start()
            returncode = self._child.wait()
            self._stopping.set()
            watcher.join(timeout=5)
            return exit_status(returncode)
        finally:
            self.ready.clear()
            for s, handler in previous.items():
                signal.signal(s, handler)


# --- orchestration (I/O) -----------------------------------------------------------------------

#: Environment the pod sets (infra/workload/pod.py); command-line flags take precedence.
ENV_DATA_DIR = "TRNSPEC_DATA_DIR"
ENV_COMPILE_CACHE = "TRNSPEC_COMPILE_CACHE_URI"
ENV_READY_FILE = "TRNSPEC_READY_FILE"
ENV_DRAIN_SECONDS = "TRNSPEC_DRAIN_SECONDS"


@dataclass(frozen=True)
class ServeOptions:
    models_root: str = MODELS_ROOT
    compiled_root: str = COMPILED_ROOT
    compile_cache: str | None = None
    ready_file: str = DEFAULT_READY_FILE
    poll_interval: float = 5.0
    progress: bool = True
    compile_only: bool = False
    drain_timeout: float = 120.0
    transfer: TransferSettings = field(default_factory=TransferSettings)
    #: Waits before retrying staging that failed for a cause time can fix (credentials not
    #: ready yet, endpoint unreachable): bounded, about 5 minutes in all, then exit 1.
    stage_retry_delays: tuple[float, ...] = (5.0, 10.0, 20.0, 40.0, 80.0, 160.0)


def resolve_options(args: argparse.Namespace, environ: Mapping[str, str]) -> ServeOptions:
    """Flags first, then the pod's environment, then the defaults (pure: environ is passed in)."""
    data_dir = environ.get(ENV_DATA_DIR)
    return ServeOptions(
        models_root=args.models_root or (f"{data_dir}/models" if data_dir else MODELS_ROOT),
        compiled_root=args.compiled_root or (f"{data_dir}/compiled" if data_dir else COMPILED_ROOT),
        compile_cache=args.compile_cache or environ.get(ENV_COMPILE_CACHE) or None,
        ready_file=args.ready_file or environ.get(ENV_READY_FILE) or DEFAULT_READY_FILE,
        poll_interval=args.poll_interval,
        progress=not args.no_progress,
        compile_only=args.compile_only,
        drain_timeout=args.drain_timeout
        if args.drain_timeout is not None
        else _seconds(environ, ENV_DRAIN_SECONDS, 120.0),
    )


def _seconds(environ: Mapping[str, str], name: str, default: float) -> float:
    raw = environ.get(name)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 <= value < float("inf"):
        raise ConfigError([Problem(name, raw, "must be a number of seconds >= 0")])
    return value


#: Runs the rendered command; the callback (if any) is called once, when the model first answers.
SuperviseFn = Callable[[RenderedCommand, Callable[[], None] | None], int]


def _s3_client() -> Any:
    return s3_client()


def _retrying(
    options: ServeOptions, sleep: Callable[[float], None], what: str, work: Callable[[], T]
) -> T:
    """Run work; while it fails for a cause time can fix (credentials not ready yet, endpoint
    unreachable), wait and retry within options.stage_retry_delays. Raises the last error."""
    delays = list(options.stage_retry_delays)
    while True:
        try:
            return work()
        except StagingError as err:
            if not err.retryable or not delays:
                raise
            delay = delays.pop(0)
            log.warning("%s failed, retrying in %.0fs (%d left): %s", what, delay, len(delays), err)
            sleep(delay)


def _stage_models(s3: Any, plan: ServePlan, options: ServeOptions) -> None:
    """Download every model of the plan (verified files are kept across retries)."""
    for step in plan.stage:
        with rich_progress(options.progress) as bar:
            result = download(
                s3,
                parse_s3_uri(step.source),
                Path(step.local_dir),
                options.transfer,
                bar,
                prune=True,  # the staging directory is this copy's own
            )
        log.info("staged %s", result.summary())


def execute(
    cfg: ServingConfig,
    plan: ServePlan,
    options: ServeOptions,
    supervise: SuperviseFn,
    s3: Any | None = None,
    stop: Callable[[], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """Stage, re-check on the staged files, pull the compile cache, then run the server.

    With options.compile_only: exit 0 at once when the cache already holds this key; otherwise
    start vLLM, publish its compile when it first answers, then stop it (`stop`, by default a
    SIGTERM to this process, which the supervisor forwards) and exit 0 only if it was published.
    """
    from trnspec.checks import check

    cache_root = (
        parse_s3_uri(plan.cache.cache_root, require_key=False)
        if plan.cache is not None and plan.cache.cache_root
        else None
    )
    if options.compile_only and (plan.cache is None or cache_root is None):
        raise ConfigError(
            [
                Problem(
                    "--compile-only",
                    True,
                    f"needs a Neuron image and a compile cache (--compile-cache or "
                    f"{ENV_COMPILE_CACHE}); image={cfg.image.value} has "
                    f"{'one' if plan.cache else 'no compile step'}",
                )
            ]
        )
    if (plan.stage or cache_root is not None) and s3 is None:
        try:
            s3 = _s3_client()
        except StagingError as err:
            print(f"staging failed: {err}", file=sys.stderr)
            return EXIT_STAGING_FAILED
    if options.compile_only and plan.cache is not None and cache_root is not None:
        location = cache_root.child(plan.cache.key)
        try:
            cached = _retrying(
                options, sleep, "reading the compile cache", lambda: fetch_manifest(s3, location)
            )
        except StagingError as err:
            print(f"compile cache unreadable: {err}", file=sys.stderr)
            return EXIT_STAGING_FAILED
        if cached is not None:
            print(f"already compiled: {plan.cache.remote}")
            return 0
    try:
        _retrying(options, sleep, "staging", lambda: _stage_models(s3, plan, options))
    except StagingError as err:
        print(f"staging failed: {err}", file=sys.stderr)
        return EXIT_STAGING_FAILED
    if plan.staged_overrides:
        # The staged config.json files are readable now: check sizes and vocabularies for real.
        problems = check(apply_overrides(cfg, list(plan.staged_overrides)))
        if problems:
            raise ConfigError(problems)
    publish: Callable[[], bool] | None = None
    if plan.cache is not None:
        try:
            Path(plan.cache.local_dir).mkdir(parents=True, exist_ok=True)
        except OSError as err:
            print(
                f"cannot create the compiled-artifact directory {plan.cache.local_dir}: "
                f"{err.strerror or err}; give --compiled-root a writable path",
                file=sys.stderr,
            )
            return EXIT_STAGING_FAILED
        if cache_root is not None:
            publish = _cache_sync(s3, plan.cache, cache_root, options)
    if not options.compile_only:
        if publish is None:
            return supervise(plan.command, None)
        publisher = publish

        def publish_in_background() -> None:
            publisher()  # a failure is logged; the pod keeps serving

        return supervise(plan.command, publish_in_background)
    if publish is None:  # another pod published while we staged: nothing left to compile
        return 0
    outcome: dict[str, bool] = {}

    def publish_then_stop() -> None:
        outcome["published"] = publish()
        (stop or _stop_self)()

    returncode = supervise(plan.command, publish_then_stop)
    if "published" not in outcome:
        print("compile-only: vLLM exited before it answered; nothing published", file=sys.stderr)
        return returncode or EXIT_STAGING_FAILED
    return 0 if outcome["published"] else EXIT_STAGING_FAILED


def _stop_self() -> None:
    os.kill(os.getpid(), signal.SIGTERM)


def _cache_sync(
    s3: Any, cache: CacheStep, root: S3Location, options: ServeOptions
) -> Callable[[], bool] | None:
    """Pull the compile; on a miss return the publisher to run once the model answers.

    The publisher returns True when the key is published (by us or by another pod meanwhile).
    """
    key = cache.key
    broken = False
    try:
        with rich_progress(options.progress) as bar:
            hit = pull_compiled(
                s3, root, key, Path(cache.local_dir), options.transfer, bar, prune=True
            )
    except StagingError as err:
        # A broken cache costs a compile, not the pod: compile from scratch and republish.
        log.warning("compile cache unusable, compiling from scratch: %s", err)
        # Replace the published entry only when it is broken, not when S3 was unreachable.
        hit, broken = None, not err.retryable
        shutil.rmtree(cache.local_dir, ignore_errors=True)
        Path(cache.local_dir).mkdir(parents=True, exist_ok=True)
    if hit is not None:
        log.info("compile cache hit: %s", hit.summary())
        return None
    log.info("compile cache miss for %s: vLLM compiles; published once it answers", key)

    def publish() -> bool:
        try:
            result = push_compiled(
                s3, Path(cache.local_dir), root, key, options.transfer, None, replace=broken
            )
        except StagingError as err:
            log.warning("could not publish the compile cache (serving continues): %s", err)
            return False
        if result is None:
            log.info("compile cache %s was published by another pod meanwhile", key)
        else:
            log.info("published compile cache: %s", result.summary())
        return True

    return publish


def _supervisor_for(
    cfg: ServingConfig, options: ServeOptions, api_key: str | None = None
) -> SuperviseFn:
    def supervise(command: RenderedCommand, on_first_ready: Callable[[], None] | None) -> int:
        # The key reaches vLLM's environment only (trnspec.api_key), never argv or logs.
        env = child_env({**os.environ, **command.env}, api_key)
        sup = Supervisor(
            command.argv,
            env,
            http_probe(probe_url(cfg), cfg.target.name, headers=auth_headers(api_key)),
            ReadyFile(Path(options.ready_file)),
            poll_interval=options.poll_interval,
            on_first_ready=on_first_ready,
            busy=http_busy(probe_url(cfg)),
            drain_timeout=options.drain_timeout,
        )
        log.info("starting: %s", " ".join(command.argv))
        return sup.run()

    return supervise


# --- command line ------------------------------------------------------------------------------


def _cmd_serve(args: argparse.Namespace) -> int:
    from trnspec.checks import validate
    from trnspec.cli import config_from_args

    cfg = validate(config_from_args(args))
    options = resolve_options(args, os.environ)
    try:
        plan = plan_serve(
            cfg,
            models_root=options.models_root,
            compiled_root=options.compiled_root,
            compile_cache=options.compile_cache,
        )
    except ValueError as err:  # a malformed compile-cache URI
        raise ConfigError([Problem("--compile-cache", options.compile_cache, str(err))]) from None
    if args.dry_run:
        print(plan.to_json())
        return 0
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per readiness probe is noise
    api_key = load_api_key(os.environ)  # before staging: a missing key fails in seconds
    return execute(cfg, plan, options, _supervisor_for(cfg, options, api_key))


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `serve` to the trnspec CLI (called by trnspec.cli.build_parser)."""
    from trnspec.cli import add_config_arguments

    p = subparsers.add_parser(
        "serve",
        help="validate, stage from S3, run vLLM with signal forwarding and a readiness file",
        description=(__doc__ or "").split("\n\n")[0],
    )
    add_config_arguments(p)
    p.add_argument(
        "--models-root",
        help=f"where S3 models are staged (default ${ENV_DATA_DIR}/models, else {MODELS_ROOT})",
    )
    p.add_argument(
        "--compiled-root",
        help=f"compiled-artifact root, one subdirectory per cache key "
        f"(default ${ENV_DATA_DIR}/compiled, else {COMPILED_ROOT})",
    )
    p.add_argument(
        "--compile-cache",
        metavar="S3_URI",
        help=f"S3 prefix of the shared compile cache (default ${ENV_COMPILE_CACHE}; else none)",
    )
    p.add_argument(
        "--ready-file",
        help=f"exists only while the model answers (default ${ENV_READY_FILE}, "
        f"else {DEFAULT_READY_FILE})",
    )
    p.add_argument(
        "--poll-interval", type=float, default=5.0, help="seconds between readiness probes"
    )
    p.add_argument(
        "--drain-timeout",
        type=float,
        help=f"seconds to let in-flight requests finish after SIGTERM before vLLM is stopped "
        f"(default ${ENV_DRAIN_SECONDS}, else 120; keep it below the pod's grace period)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.add_argument(
        "--compile-only",
        action="store_true",
        help="stage, compile, publish to the compile cache, stop (exit 0 if already cached)",
    )
    p.add_argument(
        "--dry-run", action="store_true", help="print the plan (staging, cache, command) as JSON"
    )
    p.set_defaults(func=_cmd_serve)
