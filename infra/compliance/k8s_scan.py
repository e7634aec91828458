"""checkov's Kubernetes skip annotations: how a reasoned skip is written onto an object.

Shared by the platform's add-ons (neuron-monitor) and the workload's pods; each owner keeps its
own table of skips and reasons next to the objects they apply to.
"""

from __future__ import annotations


def skip_annotations(skips: dict[str, str]) -> dict[str, str]:
    """`checkov.io/skip<N>` annotations, numbered in check order.

    checkov splits the value at "=" into exactly two parts, so a reason may not contain one.
    """
    for check, reason in skips.items():
        if "=" in reason:
            raise ValueError(f"skip reason for {check} contains '=': checkov cannot parse it")
    return {
        f"checkov.io/skip{i}": f"{check}={reason}"
        for i, (check, reason) in enumerate(sorted(skips.items()), start=1)
    }
