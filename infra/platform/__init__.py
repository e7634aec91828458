"""The platform: the cluster and its Trn2 node pools (`cluster/`), every cluster-wide add-on
(`addons/`) and the stack that only composes them. Destroying a serving stack never removes it."""
