"""Settings of the one local speculative vLLM server the end-to-end tests share (conftest.py
starts it; the tests read its k from here: importing `conftest` by name picks whichever conftest
pytest loaded first)."""

#: draft tokens per step of the shared speculative server
SPECULATIVE_K = 4
