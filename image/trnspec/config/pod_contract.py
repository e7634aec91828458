"""The pod contract: what the serving pod and the engine inside it must agree on.

The engine (trnspec.serve, trnspec.engine.render, trnspec.serve.api_key) and the workload
builders (infra/serving/manifests, which also set what an image would: the user, the data dir,
the ready file; the pods run the public Neuron image with trnspec installed by an init container)
read these names from here, so a path, an environment variable or a port cannot differ between
the side that sets it and the side that reads it. A mismatch would not fail a synth: the pod would
stage into the wrong place or never turn ready.

Constants only, and no imports: infra imports this module at synth time without pulling in the
engine (staging, boto3).
"""

#: The image's entrypoint; `serve` (SERVE_COMMAND) is the serving pod's subcommand.
ENTRYPOINT = ("python", "-m", "trnspec")
SERVE_COMMAND = "serve"
#: The calibration Job's command in the same image (trnspec_tools is bundled beside trnspec):
#: TOOLS_ENTRYPOINT overrides the image's entrypoint, CALIBRATE_COMMAND starts its arguments.
TOOLS_ENTRYPOINT = ("python", "-m", "trnspec_tools")
CALIBRATE_COMMAND = ("calibrate", "run")

#: The non-root user the pods run as (no passwd entry in the image: the pod sets USER and HOME).
IMAGE_UID = 10001

#: Scratch space for staged weights and compiled artifacts (the pod mounts its data volume here,
#: writable by IMAGE_UID through the pod's fsGroup). Models go under MODELS_SUBDIR, one directory
#: per S3 bucket/prefix; compiled Neuron artifacts under COMPILED_SUBDIR, one directory per cache
#: key.
DATA_DIR = "/var/lib/trnspec"
MODELS_SUBDIR = "models"
COMPILED_SUBDIR = "compiled"
MODELS_ROOT = f"{DATA_DIR}/{MODELS_SUBDIR}"
COMPILED_ROOT = f"{DATA_DIR}/{COMPILED_SUBDIR}"

#: The startup budget (serving.max_startup_minutes): staging, load and compile after the engine's
#: waits for weights. The startup probe, a calibration Job's deadline and `plan-deploy`'s bound
#: on what a calibration bills are sized from it; its default and bounds, in minutes.
DEFAULT_MAX_STARTUP_MINUTES = 90
MAX_STARTUP_MINUTES_RANGE = (5, 24 * 60)

#: The readiness file: present only while the model answers GET /v1/models (the pod's startup
#: and readiness probes run `test -f READY_FILE`).
READY_FILE = "/tmp/trnspec-ready"

#: Environment the pod (and the image) sets and the engine reads; command-line flags win.
ENV_DATA_DIR = "TRNSPEC_DATA_DIR"  # replaces DATA_DIR for both roots
ENV_COMPILE_CACHE = "TRNSPEC_COMPILE_CACHE_URI"  # s3://bucket/prefix of the shared compile cache
ENV_READY_FILE = "TRNSPEC_READY_FILE"  # replaces READY_FILE
#: Seconds the engine lets in-flight requests finish after SIGTERM before it stops vLLM.
ENV_DRAIN_SECONDS = "TRNSPEC_DRAIN_SECONDS"
DEFAULT_DRAIN_SECONDS = 120.0
#: ARN (or name) of the Secrets Manager secret holding the API key (trnspec.serve.api_key).
ENV_API_KEY_SECRET = "TRNSPEC_API_KEY_SECRET_ARN"
#: ARN of the Secrets Manager secret holding a Hugging Face token (`stage hub`, the weights
#: Job); an empty secret means no token (public models).
ENV_HF_TOKEN_SECRET = "TRNSPEC_HF_TOKEN_SECRET_ARN"

#: vLLM's OpenAI server: the port it binds by default (trnspec.config.serving ServerConfig.port, the
#: image's EXPOSE), the model list the readiness probe asks, liveness/health and Prometheus.
SERVER_PORT = 8000
MODELS_PATH = "/v1/models"
HEALTH_PATH = "/health"
METRICS_PATH = "/metrics"

#: How long the serving pod waits, in seconds, before its staging can run: for weights the
#: weights Job has not published yet (30 s doubling to 5 min, 27 waits: 7350 s) and, meanwhile,
#: before retrying staging that failed for a cause time can fix (credentials not ready yet,
#: endpoint unreachable: about 5 minutes). The engine waits exactly these (trnspec.serve.runner);
#: the serving pod's startup probe gives it STAGING_WAIT_SECONDS on top of the staging, load and
#: compile budget (infra/serving/manifests/server.py), so a pod waiting for weights is never
#: killed as failed to start.
WEIGHTS_WAIT_DELAYS = tuple(float(min(30 * 2**i, 300)) for i in range(27))
STAGE_RETRY_DELAYS = (5.0, 10.0, 20.0, 40.0, 80.0, 160.0)
STAGING_WAIT_SECONDS = sum(WEIGHTS_WAIT_DELAYS) + sum(STAGE_RETRY_DELAYS)
