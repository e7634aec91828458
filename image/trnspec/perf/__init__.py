"""The Trn2 decode-step model and its calibration: the step-time model, the published and measured
rows it is fitted on, the fit, leave-one-source-out validation and the error bands of each regime,
and a profile turned into the model's inputs."""
