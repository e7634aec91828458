"""The vLLM command line: a pure function from a validated config to the argv and environment of
its image's server (`render`), checked by each image's own vLLM argument parser in the tests."""
