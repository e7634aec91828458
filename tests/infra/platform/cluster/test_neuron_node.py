"""What a Trn2 node looks like: the kubelet on the instance store where the type has one, and the
Cluster Autoscaler's template storage saying so (infra/platform/cluster/neuron_node.py)."""

from __future__ import annotations

from infra.platform.cluster.neuron_node import mime_user_data, node_template_tags
from infra.settings import Trn2PoolSettings


def test_only_types_with_a_known_instance_store_get_the_raid0_node_config() -> None:
    big, small = (
        Trn2PoolSettings(name="a"),
        Trn2PoolSettings(name="b", instance_type="trn2u.48xlarge"),
    )
    assert "strategy: RAID0" in mime_user_data(big)
    assert "strategy: RAID0" not in mime_user_data(big, local_storage=False)
    assert "localStorage" not in mime_user_data(small)
    storage = "k8s.io/cluster-autoscaler/node-template/resources/ephemeral-storage"
    assert node_template_tags(big)[storage] == "6369Gi"
    assert node_template_tags(small)[storage] == "459Gi"
