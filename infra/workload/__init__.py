"""Pure Kubernetes manifest builders for the serving workload (no CDK, no I/O).

`spec.derive_workload(ServingConfig, ServingSettings, ...)` -> `WorkloadSpec`, then
`manifests.build_manifests(spec, settings)` -> `WorkloadManifests`; infra/serving.py puts them on
the cluster.
"""
