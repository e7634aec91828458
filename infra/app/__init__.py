"""The whole app composed once: the platform checked against the workload from one preflight, then
both stacks built."""
