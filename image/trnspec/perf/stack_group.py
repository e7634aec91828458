"""Which calibrated serving stack (trnspec/data/trn2_published.yaml `stack_group`) a config
runs as, read from the command `render` gives it: the one the deployment runs.

* `nxdi-fork`: the Neuron fork image (NxD Inference under vLLM's V0 engine).
* `plugin-sync`: the vLLM Neuron plugin with `--no-async-scheduling` in its argv (the DFlash
  command does, as AWS's DFlash examples, whose published runs calibrate this floor).
* `plugin`: the plugin with vLLM's default (async) scheduling, as its EAGLE3 tutorial runs it.

Both plugin releases (SDK 2.32 and 2.33) share the plugin groups: their figures were published
for SDK 2.32, none yet for 2.33's plugin.
"""

from __future__ import annotations

from trnspec.config.images import CommandForm, image_spec
from trnspec.config.serving import ServingConfig
from trnspec.engine.render import render

SYNC_FLAG = "--no-async-scheduling"


def stack_group(cfg: ServingConfig) -> str | None:
    """The stack group of `cfg`'s rendered command, or None for an image no Trn2 row covers."""
    form = image_spec(cfg.image).command_form
    if form is CommandForm.FORK:
        return "nxdi-fork"
    if form is CommandForm.PLUGIN:
        return "plugin-sync" if SYNC_FLAG in render(cfg).argv else "plugin"
    return None
