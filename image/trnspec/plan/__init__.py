"""Planning with the Trn2 model: what a user asks of it, above the model itself (`perf`).

`perf` is the step-time model, its published data, its fit and its held-out error; this layer
uses it to answer a user's questions: `predict` (speed and cost of one profile per batch and
window), `deploy_plan` (the deployment to run for a latency target and a peak load, priced as AWS
bills it) and `acceptance` (the acceptance rate a prediction or a plan is made for, from the
flags). It imports `perf` and the layers below; the command-line modules in `cli` print it.
"""
