"""What a plan reads from outside, each through one bounded reader that raises one BoundaryError
naming the flag, the value and the fix: rows files from a path or S3 and JSON answers of an HTTP
API (`fetch`), and the evidence plan-deploy is given (`evidence`: a tune report's fit.alpha, the
acceptance served as Prometheus counts it, measured rows, a deployment config's pools). The
decisions in trnspec.plan take what these return and never import them.
"""
