"""Which calibrated serving stack (trnspec/data/trn2_published.yaml `stack_group`) a config
runs as, read from the command `render` gives it: the one the deployment runs.

* `nxdi-fork`: the Neuron fork image (NxD Inference under vLLM's V0 engine).
* `plugin-sync`: the vLLM Neuron plugin scheduling synchronously: a command with
  `--no-async-scheduling`, or with `--speculative-config` at all. The engine's rule (vllm-neuron
  features guide, aws-neuron-sdk `vllm-neuron/docs/guides/features-guide.md`): speculative
  decoding is "Mutually exclusive with async scheduling. Setting `--speculative-config` disables
  async scheduling automatically". So every speculative plugin command, EAGLE3 as much as DFlash,
  is synchronous, whatever else its argv says.
* `plugin`: the plugin with vLLM's default (async) scheduling: a plain command only.

Both plugin releases (SDK 2.32 and 2.33) share the plugin groups: their figures were published
for SDK 2.32, none yet for 2.33's plugin.

* `nxdi-direct`: NxD Inference measured directly (its own benchmark, no vLLM server): a group of
  its own, so that no served group's floor is fitted on rows without a server's host overhead.
  `stack_group` never returns it: no deployment runs without a server, so none is priced from it.
"""

from __future__ import annotations

from collections.abc import Sequence

from trnspec.config.images import CommandForm, image_spec
from trnspec.config.serving import ServingConfig
from trnspec.engine.render import render

SYNC_FLAG = "--no-async-scheduling"
#: Stack groups that schedule asynchronously (host work overlaps the device step).
ASYNC_GROUPS = frozenset({"plugin"})
#: Stack groups measured without a vLLM server (published rows with `served: false`).
DIRECT_GROUPS = frozenset({"nxdi-direct"})
#: The flag that turns async scheduling off on the plugin by itself (the engine's rule above).
SPECULATIVE_FLAG = "--speculative-config"


def plugin_group(argv: Sequence[str]) -> str:
    """The plugin stack group of a rendered plugin argv (`plugin-sync` or `plugin`)."""
    synchronous = SYNC_FLAG in argv or any(
        a == SPECULATIVE_FLAG or a.startswith(SPECULATIVE_FLAG + "=") for a in argv
    )
    return "plugin-sync" if synchronous else "plugin"


def stack_group(cfg: ServingConfig) -> str | None:
    """The stack group of `cfg`'s rendered command, or None for an image no Trn2 row covers."""
    form = image_spec(cfg.image).command_form
    if form is CommandForm.FORK:
        return "nxdi-fork"
    if form is CommandForm.PLUGIN:
        return plugin_group(render(cfg).argv)
    return None
