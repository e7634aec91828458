"""What a pod serves, as typed data: the serving config and its profiles, the image generations
and what each runs, the batch-aware window (k schedule), S3 URIs, and what the engine and the
workload builders share (the pod contract, the autoscaler's scale-up policy). Pure: no I/O beyond
reading a profile."""
