"""The pod contract: one import-free module whose names the engine's defaults are built from.

The workload builders' side is tests/infra/serving/manifests/test_workload_imports.py and
test_workload_pods.py; the image's side is tests/trnspec/test_dockerfile.py."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

from trnspec.cli.main import build_parser
from trnspec.cli.serve import resolve_options
from trnspec.config import pod_contract
from trnspec.config.pod_contract import (
    COMPILED_ROOT,
    DATA_DIR,
    DEFAULT_DRAIN_SECONDS,
    ENV_DATA_DIR,
    MODELS_ROOT,
    READY_FILE,
    SERVER_PORT,
)
from trnspec.config.serving import ServerConfig
from trnspec.engine import render
from trnspec.serve import api_key
from trnspec.serve.runner import ServeOptions


def test_the_contract_module_has_no_imports_and_only_constants() -> None:
    tree = ast.parse(Path(pod_contract.__file__).read_text())
    body = tree.body[1:] if ast.get_docstring(tree) else tree.body
    assert body
    for node in body:
        assert isinstance(node, ast.Assign), ast.dump(node)[:80]
        assert all(isinstance(t, ast.Name) and t.id.isupper() for t in node.targets)


def test_importing_the_contract_loads_no_other_project_module() -> None:
    code = (
        "import json, sys; import trnspec.config.pod_contract; "
        "print(json.dumps(sorted(sys.modules)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = {m for m in json.loads(out.stdout) if m.startswith("trnspec")}
    assert loaded == {"trnspec", "trnspec.config", "trnspec.config.pod_contract"}


def test_the_engine_defaults_are_the_contracts() -> None:
    options = ServeOptions()
    assert (options.models_root, options.compiled_root) == (MODELS_ROOT, COMPILED_ROOT)
    assert (options.ready_file, options.drain_timeout) == (READY_FILE, DEFAULT_DRAIN_SECONDS)
    assert (render.MODELS_ROOT, render.COMPILED_ROOT) == (MODELS_ROOT, COMPILED_ROOT)
    assert api_key.ENV_API_KEY_SECRET == pod_contract.ENV_API_KEY_SECRET
    assert ServerConfig().port == SERVER_PORT


def test_a_pod_that_sets_the_contracts_data_dir_stages_where_the_defaults_point() -> None:
    """TRNSPEC_DATA_DIR=DATA_DIR (what the pod and the image set) and no environment at all
    must give the same roots, or a pod would stage where the image created no directory."""
    args = build_parser().parse_args(["serve", "--profile", "local-tiny"])
    from_env = resolve_options(args, {ENV_DATA_DIR: DATA_DIR})
    default = resolve_options(args, {})
    assert (from_env.models_root, from_env.compiled_root) == (MODELS_ROOT, COMPILED_ROOT)
    assert (default.models_root, default.compiled_root) == (MODELS_ROOT, COMPILED_ROOT)
    assert MODELS_ROOT.startswith(f"{DATA_DIR}/") and COMPILED_ROOT.startswith(f"{DATA_DIR}/")


def test_the_engines_waits_are_the_contracts_that_size_the_startup_probe() -> None:
    options = ServeOptions()
    assert options.weights_wait_delays == pod_contract.WEIGHTS_WAIT_DELAYS
    assert options.stage_retry_delays == pod_contract.STAGE_RETRY_DELAYS
    waits = sum(options.weights_wait_delays) + sum(options.stage_retry_delays)
    assert waits == pod_contract.STAGING_WAIT_SECONDS
