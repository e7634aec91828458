"""trnspec: speculative-decoding vLLM serving on AWS Trainium2 (config, checks, rendering)."""
