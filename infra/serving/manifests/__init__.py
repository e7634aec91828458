"""Pure Kubernetes manifest builders for the serving workload (no CDK, no I/O).

`spec.check_serving(raw serving section)` -> `CheckedServing` (settings, engine config,
`WorkloadSpec` from `spec.derive_workload`), then `preflight.workload_preflight(checked)` ->
`WorkloadPreflight`: placeholders (`placeholders.py`) for the values only the stacks know, and
`manifests.build_manifests(spec, settings)` -> `WorkloadManifests` (the weights Job's too), once
per synth. The serving stack binds its bucket, image, region, VPC CIDR, API key and Hugging Face
token secret into them (`placeholders.bind`) and infra/serving/workload.py puts them on the cluster.
"""
