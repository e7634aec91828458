"""What a pod serves, as typed data: the serving config and its profiles, the image generations
and what each runs, the batch-aware window (k schedule), S3 URIs and the pod contract the engine
and the workload builders share. Pure: no I/O beyond reading a profile."""
