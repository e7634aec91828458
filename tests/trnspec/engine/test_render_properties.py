"""Properties of the rendered command on every profile (every image generation) when the models
are staged from S3: the engine reads them under the models_root it was given (written with or
without a trailing slash), and never gets a --revision for them (a staged copy is one revision; a
hub revision flag would make vLLM ask the hub); a draft read from the hub gets its revision."""

from __future__ import annotations

import json

import pytest
from trnspec.config.serving import ServingConfig, apply_overrides, list_profiles, load_profile
from trnspec.engine.render import render
from trnspec.hardware.model_shapes import is_local

ROOT = "/data/elsewhere"


def staged(profile: str) -> ServingConfig:
    """The profile with its target (and draft model, if it has one) staged from S3, each with a
    hub revision that must not reach the engine."""
    cfg = load_profile(profile)
    overrides = ["target.source=s3://bkt/models/target/", "target.revision=abc123"]
    if cfg.speculation.draft is not None:
        overrides += [
            "speculation.draft.source=s3://bkt/models/draft",
            "speculation.draft.revision=def456",
        ]
    return apply_overrides(cfg, overrides)


def speculative_config(argv: list[str]) -> dict | None:
    if "--speculative-config" not in argv:
        return None
    return json.loads(argv[argv.index("--speculative-config") + 1])


def model_paths(cfg: ServingConfig, root: str = ROOT) -> list[str]:
    argv = render(cfg, models_root=root).argv
    target = argv[argv.index("--model") + 1] if "--model" in argv else argv[2]
    spec = speculative_config(argv)
    return [target] + ([spec["model"]] if spec and "model" in spec else [])


@pytest.mark.parametrize("profile", list_profiles())
def test_s3_staged_models_are_read_under_the_given_models_root(profile):
    paths = model_paths(staged(profile))
    assert paths and all(p.startswith(ROOT + "/bkt/models/") for p in paths), paths


@pytest.mark.parametrize("profile", list_profiles())
def test_no_revision_is_passed_for_s3_staged_models(profile):
    argv = render(staged(profile), models_root=ROOT).argv
    assert "--revision" not in argv
    assert "revision" not in (speculative_config(argv) or {})


@pytest.mark.parametrize("profile", list_profiles())
def test_a_trailing_slash_on_models_root_changes_no_path(profile):
    paths = model_paths(staged(profile), ROOT + "/")
    assert paths == model_paths(staged(profile))
    assert not any("//" in p for p in paths), paths


def _hub_draft(profile: str) -> bool:
    draft = load_profile(profile).speculation.draft
    return draft is not None and not draft.source.startswith("s3://") and not is_local(draft.source)


@pytest.mark.parametrize("profile", [p for p in list_profiles() if _hub_draft(p)])
def test_a_hub_draft_gets_its_revision_in_the_speculative_config(profile):
    cfg = apply_overrides(load_profile(profile), ["speculation.draft.revision=def456"])
    assert (speculative_config(render(cfg).argv) or {}).get("revision") == "def456"
