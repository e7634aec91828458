"""Talking to an OpenAI-compatible endpoint: HTTP streaming, the retry rule, client flags, the
sync and async clients, /metrics parsing, served-model discovery and the stack lookup."""
