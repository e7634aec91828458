"""Every command docs/platform.md gives for a first deploy, a calibration and its verdict runs.

The commands are the fenced `bash` blocks of the named sections, read as a shell would (a
trailing backslash continues the line, `#` starts a comment, `NAME=value` sets a variable that
later lines expand). Each is then checked by the program it names:

- `npx cdk deploy`: its `-c` items go through the app's own reading (app.py:
  `settings_overrides`, `check_profile`, which loads config/<profile>.yaml, the plan, and runs every
  synth-time check); the outputs the serving stack writes from that check (DeployContext,
  PlanCommand) are held to the synthesized templates by tests/infra/test_outputs.py;
- `python -m trnspec_tools calibrate fetch`: run against moto, on a stack whose outputs are that
  synthesized serving stack's (DeployContext, PlanCommand, Region, the bucket), with a calibration
  run in the bucket; the two commands it prints must be the two the docs give next;
- `python -m trnspec ...`: parsed by trnspec's own parser (`plan-deploy` on measured rows is run by
  tests/trnspec/cli/test_plan_deploy_cli.py; here it would take minutes);
- `make TARGET`: the target exists in the Makefile.

Placeholders (`<STAMP>`, the example reservation id) become example values from one table,
EXAMPLES; an `aws` or `kubectl` line is the AWS CLI's or the cluster's and only listed.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import shlex
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import boto3
import pytest
from moto import mock_aws
from trnspec.boundary.json_io import dumps
from trnspec.cli.main import build_parser as trnspec_parser

from infra.app.composition import Preflight, check_profile
from infra.outputs import ServingOutputs
from infra.settings import settings_overrides
from trnspec_tools.calibration import run as calibrate_run
from trnspec_tools.calibration import store
from trnspec_tools.calibration.command import build_parser as calibrate_parser
from trnspec_tools.calibration.summary import Arm, summarize
from trnspec_tools.cli import main as tools_main

REPO = Path(__file__).resolve().parents[2]
DOC = (REPO / "docs" / "platform.md").read_text()
#: The sections whose commands a newcomer runs, in order: "Deploying for real" holds the first
#: deploy and, as subsections, the calibration loop and its verdict.
SECTIONS = ("## Deploying for real",)
SUBSECTIONS = (
    "### First deploy: clone -> deploy -> weights -> first token",
    "### The calibration loop: speculation measured against plain on your node",
)
STAMP = "20261207T120000Z"
REGION = "us-east-2"
#: What stands in for each placeholder the commands carry (the run directory is the test's).
EXAMPLES = {
    "<STAMP>": STAMP,
    "cr-0abc...": "cr-0123456789abcdef0",
    "hf_...": "hf_example",
    "<HfTokenSecretArn>": "arn:aws:secretsmanager:us-east-2:123456789012:secret:hf-AbCdEf",
    "<ModelBucketName>": "trnspecplatform-serving-modelbucket-example",
}
#: Programs that are not this project's: listed, not run (no account, no cluster here).
EXTERNAL = frozenset({"aws", "kubectl", "export"})
#: The ARN the docs' first deploy names (its `ADMIN=` line).
ADMIN_EXAMPLE = "arn:aws:iam::123456789012:role/Admin"


@dataclass(frozen=True)
class Command:
    """One documented command line: its environment prefix and its words, variables expanded."""

    env: dict[str, str]
    words: list[str]
    section: str

    @property
    def text(self) -> str:
        return shlex.join(self.words)


def section_text(heading: str) -> str:
    level = heading.split(" ")[0]
    start = DOC.index(f"\n{heading}\n")
    rest = DOC[start + len(heading) + 2 :]
    # a `#` comment inside a code block is no heading
    masked = re.sub(r"```.*?```", lambda m: " " * len(m[0]), rest, flags=re.S)
    ends = [m.start() for m in re.finditer(r"^(#+) ", masked, re.M) if len(m[1]) <= len(level)]
    return rest[: ends[0]] if ends else rest


def documented_commands() -> list[Command]:
    commands: list[Command] = []
    for heading in SECTIONS:
        variables: dict[str, str] = {}

        def expand(match: re.Match[str], variables: dict[str, str] = variables) -> str:
            return variables.get(match[1], match[0])

        for block in re.findall(r"```bash\n(.*?)```", section_text(heading), re.S):
            for line in re.sub(r"\\\n\s*", " ", block).splitlines():
                for placeholder, value in EXAMPLES.items():
                    line = line.replace(placeholder, value)
                line = re.sub(r"\$(\w+)", expand, line)
                words = shlex.split(line, comments=True)
                env = {}
                while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", words[0]):
                    key, value = words.pop(0).split("=", 1)
                    env[key] = value
                if not words:
                    variables.update(env)
                    continue
                commands.append(Command(env, words, heading))
    return commands


COMMANDS = documented_commands()


def context_of(words: list[str]) -> tuple[str, dict[str, str]]:
    """(profile, settings overrides) of a `cdk ... -c K=V ...` line, as app.py reads them."""
    items = dict(w.split("=", 1) for flag, w in itertools.pairwise(words) if flag == "-c")
    return items.get("profile", "default"), settings_overrides(items)


def program(command: Command) -> str:
    words = command.words
    if words[:2] == ["npx", "cdk"]:
        return "cdk"
    if words[0].endswith("python") and words[1:2] == ["-m"]:
        return words[2]
    return words[0]


def test_the_sections_give_a_deploy_a_calibration_and_a_verdict() -> None:
    for heading in SUBSECTIONS:
        assert f"\n{heading}\n" in section_text(SECTIONS[0])
    steps = {(program(c), c.words[3]) for c in COMMANDS if len(c.words) > 3}
    assert {("cdk", "--all"), ("trnspec_tools", "calibrate"), ("trnspec", "plan-deploy")} <= steps
    unknown = {program(c) for c in COMMANDS} - {"cdk", "trnspec", "trnspec_tools", "make"}
    assert unknown <= EXTERNAL, unknown


@pytest.mark.parametrize(
    "command",
    [c for c in COMMANDS if program(c) == "cdk"],
    ids=lambda c: c.text[:80],
)
def test_every_cdk_deploy_is_taken_by_the_settings_loader(command: Command, tmp_path: Path) -> None:
    assert command.words[2] == "deploy"
    profile, overrides = context_of(command.words)
    plan = overrides.get("serving.plan")
    if plan is not None and not (REPO / plan).exists():
        # The verdict's plan is the file plan-deploy writes: stood in for by the shipped plan.
        shutil.copy(REPO / "config" / "plans" / "default.yaml", tmp_path / "plan.yaml")
        overrides["serving.plan"] = str(tmp_path / "plan.yaml")
    region = overrides.get("region") or command.env.get("AWS_REGION")
    checked = check_profile(profile, overrides, deploy_region=region)
    assert checked.settings.admin_principal_arns, command.text


@pytest.mark.parametrize(
    "command",
    [c for c in COMMANDS if program(c) == "trnspec"],
    ids=lambda c: c.text[:80],
)
def test_every_trnspec_command_parses(command: Command) -> None:
    trnspec_parser().parse_args(command.words[3:])


@pytest.mark.parametrize(
    "command", [c for c in COMMANDS if program(c) == "make"], ids=lambda c: c.text
)
def test_every_make_target_exists(command: Command) -> None:
    makefile = (REPO / "Makefile").read_text()
    for target in command.words[1:]:
        assert re.search(rf"^{re.escape(target)}:", makefile, re.M), target


@pytest.fixture(scope="module")
def first_deploy() -> Preflight:
    """The documented default deploy, checked as app.py checks it (its outputs' values come from
    this preflight: tests/infra/test_outputs.py holds the synthesized outputs to them)."""
    (command,) = [
        c for c in COMMANDS if program(c) == "cdk" and "profile=default" in c.words
        and "--all" in c.words and not any(w.startswith("serving.") for w in c.words)
    ]  # fmt: skip
    profile, overrides = context_of(command.words)
    return check_profile(profile, overrides)


def test_the_deploy_records_its_context_for_the_next_one(first_deploy: Preflight) -> None:
    deploy = first_deploy.deploy
    assert deploy is not None and deploy.plan_command is not None
    profile, overrides = context_of(["cdk", *shlex.split(deploy.output_text())])
    assert (profile, overrides) == ("default", {"admin_principal_arns": ADMIN_EXAMPLE})
    plan_command = shlex.split(deploy.plan_command)
    assert plan_command[:4] == ["python", "-m", "trnspec", "plan-deploy"]
    trnspec_parser().parse_args(plan_command[3:])


def _calibration_json() -> bytes:
    """calibration.json as the Job's `calibrate run` writes it (run.calibration_document, the
    arms' URLs through its own flags), for a run whose rounds the test does not make: its levels
    have no verdict. fetch reads the verdicts it prints from it, and builds the next commands from
    the stack's outputs and the presence of trn2_rows.yaml, whose text it only downloads."""
    with tempfile.TemporaryDirectory(prefix="trnspec-docs-") as out_dir:
        parser = argparse.ArgumentParser()
        calibrate_run.add_cli_args(parser)
        flags = ["--plain", "http://plain:8000", "--speculative", "http://speculative:8000"]
        opts = calibrate_run.options_from_args(parser.parse_args([*flags, "--out-dir", out_dir]))
    summary = summarize([], opts.levels, opts.prices)
    models: dict[Arm, str] = {"plain": "target", "speculative": "target"}
    _, rows_note = calibrate_run.trn2_rows_text(opts, summary, [], models, STAMP, 64)
    doc = calibrate_run.calibration_document(opts, STAMP, models, [], summary, rows_note)
    return dumps(doc).encode()


@pytest.fixture
def deployed(first_deploy, fake_aws_env) -> Iterator[str]:
    """A moto stack carrying the serving stack's outputs of the documented deploy (their values)
    and a bucket with one calibration run."""
    deploy = first_deploy.deploy
    assert deploy is not None and deploy.plan_command is not None
    literal = {
        ServingOutputs.DEPLOY_CONTEXT: {"Value": deploy.output_text()},
        ServingOutputs.PLAN_COMMAND: {"Value": deploy.plan_command},
    }
    stack = "TrnspecPlatform-serving"
    body = {
        "Resources": {"Bucket": {"Type": "AWS::S3::Bucket"}},
        "Outputs": {
            ServingOutputs.MODEL_BUCKET_NAME: {"Value": {"Ref": "Bucket"}},
            ServingOutputs.REGION: {"Value": {"Ref": "AWS::Region"}},
            **literal,
        },
    }
    with mock_aws():
        cfn = boto3.client("cloudformation", region_name=REGION)
        cfn.create_stack(StackName=stack, TemplateBody=json.dumps(body))
        outputs = cfn.describe_stacks(StackName=stack)["Stacks"][0]["Outputs"]
        bucket = next(o["OutputValue"] for o in outputs if o["OutputKey"] == "ModelBucketName")
        files = {store.RESULT_JSON: _calibration_json(), store.ROWS_YAML: b"x: 1\n"}
        store.upload(boto3.client("s3", region_name=REGION), bucket, STAMP, files)
        yield stack


def test_calibrate_fetch_prints_the_commands_the_docs_give_next(
    deployed: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    (fetch,) = [c for c in COMMANDS if program(c) == "trnspec_tools" and "fetch" in c.words]
    args = calibrate_parser().parse_args(fetch.words[4:])
    assert args.stack == deployed
    monkeypatch.chdir(tmp_path)  # fetch writes reports/calibration/<stamp>/ under the cwd
    assert tools_main(fetch.words[3:]) == 0
    printed = capsys.readouterr().out.splitlines()
    start = printed.index(
        "next: plan on the measured rows, then deploy that plan (from the repository root):"
    )
    following = [shlex.split(line) for line in printed[start + 1 :] if line.startswith("  ")]
    after = COMMANDS[COMMANDS.index(fetch) + 1 : COMMANDS.index(fetch) + 3]
    documented = [[*(f"{k}={v}" for k, v in c.env.items()), *c.words] for c in after]
    # The docs call the interpreter .venv/bin/python, fetch prints `python`; the rest is equal.
    documented[0][0] = "python"
    assert following == documented
