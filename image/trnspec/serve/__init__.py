"""`python -m trnspec serve`: the pod's entrypoint around vLLM.

Order of work, each step refusing early what would fail late:
1. validate the config (exit 2 listing every problem: nothing is downloaded for a bad config),
   then `trnspec doctor` (trnspec.checks.doctor): the image's vLLM and vllm-neuron versions, the
   model class the method needs, the Neuron devices and the LNC (exit 1 with one line naming what is
   missing: nothing is staged or compiled in a container that cannot run the config);
2. stage S3 model sources to local disk (verified, resumable: trnspec.staging.transfer), then run
the    checks again on the staged copies, whose config.json files are now readable;
3. pull compiled Neuron artifacts from the S3 compile cache under the config's cache key
   (trnspec.staging.cache_key); a hit skips a compile of tens of minutes;
4. render the exact vLLM command (trnspec.engine.render) and run it as a child process; on SIGTERM
or    SIGINT, withdraw readiness, wait until vLLM's /metrics shows no request in flight (at most
   --drain-timeout), then forward the signal (Kubernetes sends SIGTERM and waits
   terminationGracePeriodSeconds); the exit code is the child's (128+N for signal N);
5. once the model answers, and only if the cache was empty, publish the fresh compile (manifest
   last, so other pods never pick up a partial cache).

Readiness, for the Kubernetes probes: a file (trnspec.config.pod_contract.READY_FILE,
/tmp/trnspec-ready;
`--ready-file`) that exists only while the model answers GET /v1/models with its served name. It
is written when the first probe succeeds, removed when a probe fails, as soon as SIGTERM arrives
(so the pod leaves the Service while it drains), and when vLLM exits:

    readinessProbe: {exec: {command: [test, -f, /tmp/trnspec-ready]}, periodSeconds: 5}
    startupProbe:   {exec: {command: [test, -f, /tmp/trnspec-ready]}, periodSeconds: 30,
                     failureThreshold: 120}   # a cold Neuron compile takes tens of minutes
    livenessProbe:  {httpGet: {path: /health, port: 8000}}  # only after the startupProbe passed

`--compile-only` (the precompile Job): exit 0 at once if the cache already holds the key;
otherwise stage, start vLLM, publish the compile when it first answers, stop vLLM, and exit 0
only if the compile was published.

One module per seam, so tests cover the steps without AWS, the runner under moto and the
supervisor with a tiny fake child instead of vLLM (the `serve` subcommand, its options from flags
and the pod's environment, is trnspec.cli.serve):
- steps: what serve will do for a config (pure: no I/O, no environment reads);
- probes: what the supervisor asks vLLM, and the readiness file the kubelet reads;
- supervisor: the child process, signal forwarding, drain and readiness;
- runner: staging, the re-check, the compile cache and the supervised run (`execute`).
The paths, environment names and ports the pod and the engine share are in
trnspec.config.pod_contract.
"""

from trnspec.serve.probes import (
    ReadyFile,
    http_busy,
    http_probe,
    probe_url,
    requests_in_flight,
)
from trnspec.serve.runner import EXIT_STAGING_FAILED, ServeOptions, SuperviseVllm, execute
from trnspec.serve.steps import CacheStep, ServeSteps, StageStep, serve_steps
from trnspec.serve.supervisor import Supervisor, exit_status

__all__ = [
    "EXIT_STAGING_FAILED",
    "CacheStep",
    "ReadyFile",
    "ServeOptions",
    "ServeSteps",
    "StageStep",
    "SuperviseVllm",
    "Supervisor",
    "execute",
    "exit_status",
    "http_busy",
    "http_probe",
    "probe_url",
    "requests_in_flight",
    "serve_steps",
]
