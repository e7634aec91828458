"""The k tuner: the sweep, the acceptance-window model and the engine step-time model."""
