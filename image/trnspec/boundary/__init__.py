"""Where outside data enters, and where results leave.

Everything a command reads from outside (flags, files, environment variables, text from a
server) passes through one of these modules before any other code sees it, and every file it
writes goes through `write`. tests/test_boundary_rules.py walks the product code and fails on a
way around them (a `json.loads`, a `yaml.safe_load`, a raw write, a flag typed plain `float` or
`int`, `float()` of outside text), with a commented allow-list; tests/test_flag_fuzz.py feeds
every flag of every command hostile values.

- `args`: the argparse `type=` readers every flag is declared with (numbers finite and in range,
  integers that refuse booleans, paths, printable text).
- `numbers`: finite numbers in the range a quantity allows, from parsed data or outside text.
- `files`: the one bounded reader of input files (regular files only, size, depth, finite
  numbers, unique keys) for JSON, YAML and JSONL.
- `json_io`: JSON text with the same bounds (a server's answer), strict JSON out.
- `user_input`: the YAML 1.2 core-schema rule for config files and `--set` values.
- `aws_names`: AWS identifiers by AWS's own rules (partition, account, region, S3 bucket, VPC
  CIDR, IAM role, secret and KMS key ARNs), one rule per kind for every flag and setting.
- `text`: outside text made safe to print (control characters escaped, bounded length).
- `write`: the one file-writing function (regular targets only, atomic, no output over another,
  a fallback that keeps what could not be written).

The error story. Bad input is one exception type, `problems.InputError`, which carries every
`Problem` (field, value as written, fix) so a command lists them one a line and exits 2; each
command's `main` catches that base and nothing narrower. `BoundaryError` is an InputError built
from one problem; `user_input.InputReadError` is one whose message is a parse failure's reason,
for a caller that names the field; `trnspec.config.serving.ConfigError` is InputError itself
under its old name, and the deployment's settings errors (infra.settings) are subclasses. A target
that must not be written is `write.OutputError` (an OSError: exit 1, the command ran and could not
write). The layers' own errors for bad input are InputErrors too: BoundaryErrors of one problem
(the step model's ModelInputError, pricing's PriceError, model shapes' ShapeError, the tools'
WorkloadError and NoServedModel), and the tools' UsageError, which carries every problem of a
bench or tune command line; a caller that knows the flag a value came from names it in a problem
of its own. A problem with no value to show (a flag not given, a rule between flags) has
`problems.ABSENT` as its value and reads `field: fix`. Other layers define their own errors for
failures that are not bad input (a transfer, a protocol error, a server).
"""
