"""Client tools for trnspec endpoints: benchmark, tuner, smoke test, demo, capacity check and
the local engine (tiny models, local vLLM server). One command: `python -m trnspec_tools --help`."""
