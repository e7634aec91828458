"""The vLLM release inside each Trn2 image, and what importing its `vllm serve` parser needs: the
inputs of the parser tests' tool environments (toolenv.py), read by the parser test
(tests/trnspec/test_vllm_parsers.py) and by prebuild.py."""

from __future__ import annotations

from trnspec.config.images import ImageGeneration

from vllm_parsers.toolenv import ParserRelease

#: Import-path dependencies of 0.24.0's `vllm serve` parser, found by trial; the same list
#: builds 0.29.0's (with it installed, importing 0.29.0's parser finds no further missing module).
#: xgrammar is installed without its dependencies (triton, 0.7-0.9 GB, never imported), so the
#: one of them its import needs, apache-tvm-ffi, is named here.
PLUGIN_PARSER_PACKAGES = (
    *("aiohttp", "apache-tvm-ffi", "cachetools", "cbor2", "cloudpickle", "fastapi", "filelock"),
    *("huggingface-hub", "llguidance", "model-hosting-container-standards", "msgspec"),
    *("numpy", "openai", "openai-harmony", "packaging", "partial-json-parser", "pillow"),
    *("prometheus-client", "psutil", "py-cpuinfo", "pybase64", "pydantic"),
    *("python-multipart", "pyyaml", "pyzmq", "regex", "requests", "safetensors"),
    *("sentencepiece", "setuptools", "tiktoken", "tokenizers", "tqdm", "transformers"),
    *("typing-extensions", "uvicorn", "uvloop", "watchfiles", "xgrammar"),
)

#: The vLLM release inside each Trn2 image, and what importing its `vllm serve` parser needs.
RELEASES: dict[ImageGeneration, ParserRelease] = {
    # Base of the Neuron fork in the 0.9.1-neuronx-py311-sdk2.26.1 DLC; wheel uploaded 2025-06-10.
    ImageGeneration.NEURON_FORK: ParserRelease(
        vllm="0.9.1",
        uploaded_prior_to="2025-06-11T00:00:00Z",
        packages=(
            *("aiohttp", "blake3", "cachetools", "cloudpickle", "fastapi", "filelock", "gguf"),
            *("huggingface-hub", "msgspec", "numpy", "openai", "partial-json-parser", "pillow"),
            *("prometheus-client", "prometheus-fastapi-instrumentator", "psutil", "py-cpuinfo"),
            *("pydantic", "python-multipart", "pyyaml", "pyzmq", "regex", "requests"),
            *("safetensors", "sentencepiece", "setuptools", "tokenizers", "tqdm"),
            *("transformers", "typing-extensions", "uvicorn", "uvloop", "watchfiles"),
        ),
    ),
    # Base of the plugin image 0.24.0.1.1.0-neuronx-py313-sdk2.32.0; wheel uploaded 2026-06-30.
    ImageGeneration.NEURON_PLUGIN_SDK232: ParserRelease(
        vllm="0.24.0",
        uploaded_prior_to="2026-07-01T00:00:00Z",
        packages=PLUGIN_PARSER_PACKAGES,
        without_dependencies=("xgrammar",),
    ),
    # Base of the plugin image 0.29.0.1.2.0-neuronx-py314-sdk2.33.0; wheel uploaded 2026-09-09
    # (Requires-Python >=3.10,<3.15, so it installs on this project's 3.11).
    ImageGeneration.NEURON_PLUGIN: ParserRelease(
        vllm="0.29.0",
        uploaded_prior_to="2026-09-10T00:00:00Z",
        packages=PLUGIN_PARSER_PACKAGES,
        without_dependencies=("xgrammar",),
    ),
}
