"""The flags every config-taking subcommand shares (`--profile | --config`, repeatable `--set`)
and the config they name.

Its own module so that a subcommand module and the command table (trnspec.cli.main) both import
it, and neither imports the other.
"""

from __future__ import annotations

import argparse

from trnspec.boundary.args import path_arg
from trnspec.boundary.problems import ABSENT
from trnspec.config.serving import (
    ConfigError,
    Problem,
    ServingConfig,
    apply_overrides,
    list_profiles,
    load_config,
    load_profile,
)


def add_config_arguments(parser: argparse.ArgumentParser) -> None:
    """--profile | --config, and repeatable --set: the way every subcommand names a config."""
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--profile", help="a shipped profile (see `trnspec profiles`)")
    source.add_argument(
        "--config", metavar="FILE", type=path_arg(), help="a YAML/JSON ServingConfig file"
    )
    add_set_argument(parser)


def add_set_argument(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    help: str = "override a field, e.g. --set speculation.num_speculative_tokens=5 (repeatable)",
) -> None:
    """Repeatable `--set PATH=VALUE` into `args.overrides`: the one flag for the override
    grammar of `apply_overrides`, shared by trnspec and the tools that launch a profile."""
    parser.add_argument(
        "--set", dest="overrides", action="append", default=[], metavar="PATH=VALUE", help=help
    )


def config_from_args(args: argparse.Namespace) -> ServingConfig:
    """The config named by --profile/--config with --set applied; ConfigError on bad input."""
    if args.profile:
        cfg = load_profile(args.profile)
    elif args.config:
        cfg = load_config(args.config)
    else:
        raise ConfigError(
            [
                Problem(
                    "--profile",
                    ABSENT,
                    f"give --profile ({', '.join(list_profiles())}) or --config FILE",
                )
            ]
        )
    return apply_overrides(cfg, args.overrides) if args.overrides else cfg
