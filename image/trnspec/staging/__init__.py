"""Moving models and compiled Neuron artifacts between the Hub, S3 and local disk, verified by a
sha256 manifest, and the key compiled artifacts are cached under."""
