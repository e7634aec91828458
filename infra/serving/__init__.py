"""The serving workload: the model bucket, the image, pod identities, the API key, the workload
derived once per synth (`preflight`), the pure Kubernetes manifests (`manifests/`) and the stack
that puts them on the cluster."""
