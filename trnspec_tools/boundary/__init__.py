"""What the tools accept from an endpoint and from the command line, checked where it enters.

- `endpoint`: an endpoint URL (scheme, host, port, IPv6 literal; no credentials in it) and the
  header values sent to it (no CR/LF).
- `usage`: an OpenAI `usage` block, checked against what was streamed and against max_tokens.
- `sse`: one server-sent event's JSON, bounded in size and depth.
The shared primitives (finite numbers, bounded JSON, printable text, the one output writer, the
one error type and its exit code) are in `trnspec.boundary`; `/metrics` text is parsed by
`trnspec_tools.client.metrics`.
"""
