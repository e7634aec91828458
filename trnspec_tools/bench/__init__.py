"""The benchmark: workloads, the runner, statistics, reports, pricing and the side-by-side with
vLLM's own benchmark."""
