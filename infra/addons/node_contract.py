"""The node contract: what a Trn2 node offers a pod and what a pod must say to land on one.

The platform defines it (node pools set the taint and labels, the Neuron chart advertises the
device resources and runs the scheduler); the workload imports it. A mismatch between the two
fails silently on a real cluster (pods stay Pending while CloudFormation reports success), hence
one definition.
"""

from __future__ import annotations

#: Name of the Neuron scheduler extension's kube-scheduler. The Neuron Helm chart deploys it
#: under `scheduler.customScheduler.fullnameOverride` (chart default "my-scheduler"); the Neuron
#: construct passes this constant, and pods name it in `schedulerName`.
NEURON_SCHEDULER_NAME = "my-scheduler"

#: Extended resource the Neuron device plugin advertises: one unit per Trainium2 chip.
NEURON_DEVICE_RESOURCE = "aws.amazon.com/neuron"
#: Extended resource for (logical) NeuronCores.
NEURON_CORE_RESOURCE = "aws.amazon.com/neuroncore"
#: Taint on every Trn2 node (key, value, effect), so only Neuron workloads land there.
NEURON_TAINT_KEY = "aws.amazon.com/neuron"
NEURON_TAINT_VALUE = "true"
NEURON_TAINT_EFFECT = "NoSchedule"
#: Well-known node label; works for managed node groups and Karpenter alike.
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
#: Node label carrying the node's logical NeuronCore config ("1" or "2"), set by the Trn2 pools:
#: a TP group compiled for LNC=2 must not land on an LNC=1 node.
LNC_NODE_LABEL = "trnspec.io/lnc"
