"""The trnspec bundle: the serving package and its tools as one small zip that the pods fetch
from S3 into the public Neuron image (archive: the bytes; install: the init container's script;
requirements: what the bundle needs from the image; asset: the CDK file asset)."""
