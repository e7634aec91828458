"""The steps `serve` takes for a validated config: the models to stage, the compile cache step
and the vLLM command. Pure: no I/O, no environment reads (trnspec.cli.serve resolves those first).
(Not the HBM sizing plan of `trnspec plan` nor the deployment of `plan-deploy`.)"""

from __future__ import annotations

import sys
from dataclasses import asdict, dataclass, field

from trnspec.boundary import json_io
from trnspec.config.images import image_spec
from trnspec.config.pod_contract import COMPILED_ROOT, MODELS_ROOT
from trnspec.config.s3_uri import is_s3_uri, parse_s3_uri
from trnspec.config.serving import ModelRef, ServingConfig
from trnspec.engine.render import RenderedCommand, local_model_dir, render
from trnspec.staging.cache_key import compile_cache_key


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
class ServeSteps:
    """What serve will do, in order: stage, sync the compile cache, run the command."""

    stage: tuple[StageStep, ...]
    cache: CacheStep | None
    command: RenderedCommand
    staged_overrides: tuple[str, ...] = field(default=())  # --set items pointing at staged dirs

    def to_json(self) -> str:
        return json_io.dumps(
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
            newline=False,
        )


def _model_refs(cfg: ServingConfig) -> list[tuple[str, ModelRef]]:
    refs = [("target", cfg.target)]
    if cfg.speculation.method != "none" and cfg.speculation.draft is not None:
        refs.append(("speculation.draft", cfg.speculation.draft))
    return refs


def serve_steps(
    cfg: ServingConfig,
    *,
    models_root: str = MODELS_ROOT,
    compiled_root: str = COMPILED_ROOT,
    compile_cache: str | None = None,
    python: str = sys.executable,
) -> ServeSteps:
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
    return ServeSteps(stage, cache, command, overrides)
