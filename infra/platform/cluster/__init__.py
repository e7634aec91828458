"""The cluster itself: network, EKS control plane, Trn2 managed node groups and what a Trn2 node
looks like to Kubernetes, pod identity roles, and whether the serving pods can be placed at all."""
