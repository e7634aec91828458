"""The local engine: tiny target/draft models and the local vLLM server."""
