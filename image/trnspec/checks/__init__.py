"""Everything that can be checked before a process starts: compatibility rules between image,
method, drafter, topology and buckets (`compat`, `all_checks`), and the pod's own self-check
(`doctor` on what `doctor_probe` reads from the container). Each rule returns Problems."""
